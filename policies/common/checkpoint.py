"""Checkpoints that survive ``kill -9``.

::

    checkpoints/
      last.json                 pointer: {"dir": "step-000000051200", "step": 51200}
      best.json                 pointer to the best evaluated checkpoint
      step-000000051200/        one complete checkpoint
        model.zip               SB3 model: weights, optimizer state, counters, adaptive lr
        vecnormalize.pkl        observation/reward normalization statistics
        replay_buffer.pkl       off-policy algorithms only (not in best-*)
        rng.pkl                 Python, NumPy, torch and environment RNG states
        state.json              task, sizes, step, wall time, summary, sha256 of every file
      best-000000040960/        same files, minus the replay buffer

Every file is written atomically; a checkpoint folder becomes visible only when
its pointer file is atomically replaced, after all its files are on disk. A
crash therefore leaves the previous checkpoint in force, and a truncated or
altered file is caught by its recorded size and SHA-256.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from sim2real.policies.common import atomic
from sim2real.policies.errors import CheckpointMismatchError, CheckpointNotFoundError, CorruptCheckpointError

FORMAT = 1
PREFIX = {"last": "step", "best": "best"}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save(
    root: str | Path,
    kind: str,
    step: int,
    writers: dict[str, Callable[[IO[bytes]], None]],
    state: dict[str, Any],
    keep: int = 2,
) -> Path:
    """Write a checkpoint folder, then point ``<kind>.json`` at it; returns the folder.

    Args:
        root: The run's ``checkpoints`` folder.
        kind: ``last`` or ``best``.
        step: Environment steps so far (names the folder).
        writers: File name -> function writing the file's bytes to a handle.
        state: JSON-able description stored as ``state.json`` (``files`` is added).
        keep: ``last`` folders kept (the current one and ``keep - 1`` older ones).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    name = f"{PREFIX[kind]}-{step:012d}"
    folder = root / name
    if _pointer_target(root, kind) == name:
        return folder  # this exact checkpoint is already in force
    if folder.exists():
        shutil.rmtree(folder)  # an interrupted save: never pointed to
    folder.mkdir()
    files = {}
    for fname, write in writers.items():
        with atomic.atomic_writer(folder / fname) as f:
            write(f)
        files[fname] = {"size": (folder / fname).stat().st_size, "sha256": sha256_file(folder / fname)}
    atomic.write_json(folder / "state.json", {"format": FORMAT, "kind": kind, "step": step, **state, "files": files})
    atomic.fsync_dir(root)
    atomic.write_json(root / f"{kind}.json", {"dir": name, "step": step})
    _prune(root, kind, keep if kind == "last" else 1)
    return folder


def adopt(root: str | Path, source: str | Path, tag: str, keep: int = 2) -> Path:
    """Copy a complete ``last`` checkpoint of another run into ``root`` and make it this
    run's ``last``; returns the new folder.

    This is how a PBT exploit hands a better trial's state to a worse one (``sim2real
    sweep``): the copy is verified (sizes, SHA-256) before the pointer moves, so a
    crash leaves the run's own ``last`` in force. The folder is named
    ``step-<step>-<tag>`` so it never overwrites one of the run's own folders; the
    run's ``last`` folders newer than it (a line of training the run abandons) are pruned.
    Compatibility (task, sizes, algorithm) is checked by the resume that loads it, as
    always; its ``config_hash`` is the donor's, which is the point of the exercise.
    """
    root, source = Path(root), Path(source)
    if not tag or not all(c.isalnum() or c in "_-" for c in tag):
        raise ValueError(f"checkpoint tag must be letters, digits, _ or -, got {tag!r}")
    state = read_state(source)
    name = f"{PREFIX['last']}-{int(state['step']):012d}-{tag}"
    root.mkdir(parents=True, exist_ok=True)
    folder = root / name
    if _pointer_target(root, "last") == name:
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    for fname in [*state["files"], "state.json"]:  # the checkpoint's own files, nothing a copier added
        shutil.copy2(source / fname, folder / fname)
        with open(folder / fname, "rb") as f:
            os.fsync(f.fileno())
    read_state(folder)  # the copy is whole before anything points to it
    atomic.fsync_dir(root)
    atomic.write_json(root / "last.json", {"dir": name, "step": int(state["step"])})
    _prune(root, "last", keep)
    return folder


def locate(root: str | Path, kind: str = "auto") -> Path:
    """The checkpoint folder ``kind`` points to; ``auto``: best, else last."""
    root = Path(root)
    if kind == "auto":
        kind = "best" if (root / "best.json").exists() else "last"
    name = _pointer_target(root, kind)
    if name is None:
        raise CheckpointNotFoundError(f"no {kind} checkpoint in {root} (training has not written one yet)")
    folder = root / name
    if not folder.is_dir():
        raise CorruptCheckpointError(f"{root / (kind + '.json')} points to {name}, which does not exist")
    return folder


def read_state(folder: str | Path, verify: bool = True) -> dict[str, Any]:
    """``state.json`` of a checkpoint folder; with ``verify``, every listed file is
    checked against its recorded size and SHA-256."""
    folder = Path(folder)
    try:
        state = json.loads((folder / "state.json").read_text())
    except FileNotFoundError:
        raise CorruptCheckpointError(f"{folder} has no state.json; it is not a complete checkpoint") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptCheckpointError(f"{folder / 'state.json'} is unreadable ({exc})") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT or not isinstance(state.get("files"), dict):
        raise CorruptCheckpointError(f"{folder / 'state.json'} is not a sim2real checkpoint (format {FORMAT})")
    if verify:
        for fname, meta in state["files"].items():
            path = folder / fname
            if not path.is_file():
                raise CorruptCheckpointError(f"checkpoint file {path} is missing")
            size = path.stat().st_size
            if size != meta["size"]:
                raise CorruptCheckpointError(
                    f"checkpoint file {path} is truncated or altered: {size} bytes, expected {meta['size']}"
                )
            if sha256_file(path) != meta["sha256"]:
                raise CorruptCheckpointError(f"checkpoint file {path} is corrupted (SHA-256 differs from the record)")
    return state


def check_compatible(state: dict[str, Any], **expected: Any) -> None:
    """Raise :class:`CheckpointMismatchError` where ``state`` differs from ``expected``
    (keys: ``task``, ``algo``, ``action_mode``, ``obs_size``, ``action_size``,
    ``observation_layout``, ``action_layout``)."""
    for key, want in expected.items():
        have = state.get(key)
        if key.endswith("_layout"):
            have = [tuple(x) for x in have or []]
            want = [tuple(x) for x in want]
        if have != want:
            what = {"obs_size": "observation size", "action_size": "action size"}.get(key, key.replace("_", " "))
            raise CheckpointMismatchError(
                f"checkpoint mismatch: it was trained with {what} {_show(have)}, but the current one is {_show(want)}"
                + _layout_hint(state, key)
            )


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f"{x[0]} {x[1]}" if isinstance(x, tuple) else str(x) for x in value) + "]"
    return repr(value)


def _layout_hint(state: dict[str, Any], key: str) -> str:
    if key == "obs_size" and state.get("observation_layout"):
        return f" (checkpoint layout: {_show([tuple(x) for x in state['observation_layout']])})"
    return ""


def _pointer_target(root: Path, kind: str) -> str | None:
    path = root / f"{kind}.json"
    if not path.exists():
        return None
    try:
        name = json.loads(path.read_text())["dir"]
    except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError):
        raise CorruptCheckpointError(f"{path} is unreadable; delete it to fall back to an older checkpoint") from None
    if not isinstance(name, str) or "/" in name or name.startswith("."):
        raise CorruptCheckpointError(f"{path} holds an invalid checkpoint name {name!r}")
    return name


def _prune(root: Path, kind: str, keep: int) -> None:
    current = _pointer_target(root, kind)
    prefix = PREFIX[kind] + "-"
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(prefix))
    # Keep the pointed folder and the newest older ones; newer unpointed folders are interrupted saves.
    older = [p for p in folders if p.name < (current or "")]
    kept = {current, *(p.name for p in (older[len(older) - (keep - 1) :] if keep > 1 else []))}
    for p in folders:
        if p.name not in kept:
            with contextlib.suppress(OSError):
                shutil.rmtree(p)
    atomic.remove_stale_temporaries(root)
