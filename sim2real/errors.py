"""Errors raised by sim2real on purpose; each names what was wrong.

A leaf module: it imports nothing, so any layer (and a robot computer that only
runs exported policies) can use it without MuJoCo or torch.
"""

from __future__ import annotations


class Sim2RealError(Exception):
    """Base class of every error sim2real raises on purpose."""


class ConfigError(Sim2RealError, ValueError):
    """A configuration value is invalid; ``field`` names it (dotted path)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class UnknownTaskError(Sim2RealError, KeyError):
    """The task name is not registered."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        super().__init__(f"unknown task {name!r}; registered tasks: {', '.join(sorted(known))}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class ActionError(Sim2RealError, ValueError):
    """An action has the wrong shape or non-finite values."""


class RenderingUnavailableError(Sim2RealError, RuntimeError):
    """No headless OpenGL backend could be initialised."""
