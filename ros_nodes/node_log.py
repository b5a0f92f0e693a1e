"""A node's logger whose calls cannot raise.

rclpy's logger remembers the severity of each *call site* (file, line, bytecode index)
and raises ``ValueError`` when one site logs with another severity. A helper that logs
every severity from one line (``getattr(logger, level)(message)``, or a ``log``
variable bound to ``error`` or ``info``) therefore raised the second time its severity
changed; inside a callback's error handler that killed the executor (issue 42, defect 3:
one malformed ``joint_states`` after an e-stop ended the safety filter's services).

:class:`NodeLogger` logs each severity from a call site of its own, so a severity never
changes at a site, and swallows anything the logging backend still raises (the
message then goes to stderr): a log call is never the reason a safety node stops.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from rclpy.impl.logging_severity import LoggingSeverity

LEVELS = ("debug", "info", "warning", "error", "fatal")


# One function per severity: each is the call site rclpy sees, with one severity for ever.
def _debug(logger: Any, message: str) -> bool:
    return bool(logger.log(message, LoggingSeverity.DEBUG))


def _info(logger: Any, message: str) -> bool:
    return bool(logger.log(message, LoggingSeverity.INFO))


def _warning(logger: Any, message: str) -> bool:
    return bool(logger.log(message, LoggingSeverity.WARN))


def _error(logger: Any, message: str) -> bool:
    return bool(logger.log(message, LoggingSeverity.ERROR))


def _fatal(logger: Any, message: str) -> bool:
    return bool(logger.log(message, LoggingSeverity.FATAL))


_EMIT = {"debug": _debug, "info": _info, "warning": _warning, "warn": _warning, "error": _error, "fatal": _fatal}


class NodeLogger:
    """Wraps an rclpy logger: ``debug``/``info``/``warning``/``error``/``fatal`` (and
    ``log(message, level)``) never raise. Other attributes are the wrapped logger's."""

    def __init__(self, logger: Any) -> None:
        self._logger = logger
        self.failures = 0
        """Log calls the backend refused (each went to stderr instead)."""

    def log(self, message: object, level: str = "info") -> bool:
        emit = _EMIT.get(str(level).lower(), _error)  # an unknown level is not a reason to lose the line
        try:
            return emit(self._logger, str(message))
        except Exception as exc:
            self.failures += 1
            with contextlib.suppress(Exception):  # stderr closed at shutdown: nothing left to tell
                sys.stderr.write(f"[{str(level).upper()}] [{getattr(self._logger, 'name', '?')}]: {message} "
                                 f"(the ROS logger refused it: {type(exc).__name__}: {exc})\n")
            return False

    def debug(self, message: object, **_: Any) -> bool:
        return self.log(message, "debug")

    def info(self, message: object, **_: Any) -> bool:
        return self.log(message, "info")

    def warning(self, message: object, **_: Any) -> bool:
        return self.log(message, "warning")

    warn = warning

    def error(self, message: object, **_: Any) -> bool:
        return self.log(message, "error")

    def fatal(self, message: object, **_: Any) -> bool:
        return self.log(message, "fatal")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)
