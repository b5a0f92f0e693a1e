"""The error types, re-exported from :mod:`sim2real.errors` (a leaf module every
layer may import without pulling in MuJoCo or torch)."""

from sim2real.errors import (
    ActionError,
    ConfigError,
    RenderingUnavailableError,
    Sim2RealError,
    UnknownTaskError,
)

__all__ = ["ActionError", "ConfigError", "RenderingUnavailableError", "Sim2RealError", "UnknownTaskError"]
