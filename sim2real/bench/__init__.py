"""Benchmarks behind `sim2real bench ...` (figures are ratios against references measured in the same run)."""
