"""Crash-safe file writes: write a temporary file in the target's folder, fsync
it, ``os.replace`` it over the target, fsync the folder. A reader (or a resumed
run after ``kill -9``) therefore sees either the old file or the new one, never
half of one. Nothing here imports torch (the deployment path uses it)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

TMP_PREFIX = ".tmp-"
"""Temporary files start with this; leftovers of a crash are safe to delete."""


def _file_mode() -> int:
    """Permissions of a normally created file (mkstemp's are 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Persist a folder's entries (a rename is only durable once its folder is synced)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; on a clean exit make it ``path``.

    On an exception the temporary file is removed and ``path`` is untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX + target.name + ".", dir=target.parent)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), _file_mode())
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_writer(path, "wb") as f:
        f.write(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    with atomic_writer(path, "w") as f:
        f.write(text)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def remove_stale_temporaries(folder: str | os.PathLike[str]) -> None:
    """Delete temporary files a killed process left behind in ``folder``."""
    for p in Path(folder).glob(TMP_PREFIX + "*"):
        with contextlib.suppress(OSError):
            p.unlink()
