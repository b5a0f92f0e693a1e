"""Latches that outlive the process: a tripped e-stop or a latched guard (a fall, a
fence breach) is written to disk the moment it latches and removed only by an
operator reset, so a lifecycle reconfigure, a node restart, a crash or a power cycle
of the computer cannot clear it.

The file is JSON, ``{"latched": ["estop: button", ...], "time": <unix s>}``, written
atomically (temporary file, fsync, rename). A file that exists but cannot be read or
parsed counts as latched (fail closed): the operator must inspect it and reset.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path


class LatchStore:
    """One latch file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> list[str]:
        """The latched reasons recorded (empty: none, or no file)."""
        if not self.path.exists():
            return []
        try:
            doc = json.loads(self.path.read_text())
            reasons = doc["latched"]
            if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
                raise ValueError("'latched' is not a list of strings")
        except Exception as exc:  # unreadable, truncated, edited by hand: stay latched
            return [f"latch file {self.path} unreadable ({type(exc).__name__}: {exc}); inspect it, then reset"]
        return reasons

    def save(self, reasons: list[str]) -> None:
        """Record ``reasons`` (an empty list removes the file). Raises ``OSError`` when the
        file cannot be written: the caller keeps the latch in memory and reports it."""
        if not reasons:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=self.path.name, dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"latched": list(reasons), "time": time.time()}, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def default_latch_path(node_name: str, robot: str, domain: int) -> Path:
    """``$ROS_HOME/sim2real/latches/domain<D>_<node>_<robot>.json`` (``ROS_HOME``
    defaults to ``~/.ros``): one file per robot graph on this computer."""
    home = Path(os.environ.get("ROS_HOME") or Path.home() / ".ros")
    safe = node_name.strip("/").replace("/", "__") or "safety_filter"
    return home / "sim2real" / "latches" / f"domain{int(domain)}_{safe}_{robot}.json"
