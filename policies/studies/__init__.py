"""Comparative studies that train, evaluate and report several policies at once."""
