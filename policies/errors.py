"""Errors raised by the training, evaluation and export layer. Each names what
was wrong and what to do; the CLI prints them and exits with status 2."""

from __future__ import annotations

from sim2real.errors import Sim2RealError


class RunFolderError(Sim2RealError):
    """A run folder is missing, is not a run, or already holds a run."""


class CheckpointError(Sim2RealError):
    """Base class of every checkpoint problem."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """The run folder has no (such) checkpoint."""


class CorruptCheckpointError(CheckpointError):
    """A checkpoint file is truncated, altered or unreadable."""


class CheckpointMismatchError(CheckpointError):
    """A checkpoint does not fit what it is loaded into (task, sizes, algorithm)."""


class PolicyFileError(Sim2RealError):
    """An exported policy file or its metadata is missing, invalid or inconsistent."""


class ObservationError(Sim2RealError, ValueError):
    """An observation given to a deployed policy has the wrong size or bad values."""
