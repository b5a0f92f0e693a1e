"""Teacher-student distillation: DAgger from a privileged teacher into a student with a
history encoder (``algo: distill``)."""

from sim2real.policies.distill.dagger import DAgger, build_distill

__all__ = ["DAgger", "build_distill"]
