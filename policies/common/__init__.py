"""Machinery shared by every algorithm: run folders, atomic writes, checkpoints,
environments with normalization, evaluation and training callbacks."""
