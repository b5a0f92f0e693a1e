"""Errors raised by sim2real on purpose; each names what was wrong.

A leaf module: it imports nothing, so any layer (and a robot computer that only
runs exported policies) can use it without MuJoCo or torch.
"""

from __future__ import annotations


class Sim2RealError(Exception):
    """Base class of every error sim2real raises on purpose."""


class ConfigError(Sim2RealError, ValueError):
    """A configuration value is invalid; ``field`` names it (dotted path)."""

    def __init__(self, field: str, message: str, source: str = "") -> None:
        self.field, self.message, self.source = field, message, source
        """``source``: the file the value came from (empty: none or unknown)."""
        super().__init__(f"{source}: {field}: {message}" if source else f"{field}: {message}")

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        # Rebuilt from its fields (pickle would pass the formatted message alone): the
        # error a Ray task raised arrives in the driver as itself.
        return ConfigError, (self.field, self.message, self.source)

    def with_source(self, source: str) -> ConfigError:
        """The same error naming the file it came from."""
        return ConfigError(self.field, self.message, self.source or source)


class UnknownTaskError(Sim2RealError, KeyError):
    """The task name is not registered."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name, self.known = name, known
        super().__init__(f"unknown task {name!r}; registered tasks: {', '.join(sorted(known))}")

    def __reduce__(self) -> tuple[type, tuple[str, list[str]]]:
        return UnknownTaskError, (self.name, self.known)

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class GraphError(Sim2RealError, RuntimeError):
    """A node of a running deployment graph died or stopped reporting (the robot is held
    and the run ends)."""


class ActionError(Sim2RealError, ValueError):
    """An action has the wrong shape or non-finite values."""


class RenderingUnavailableError(Sim2RealError, RuntimeError):
    """No headless OpenGL backend could be initialised."""
