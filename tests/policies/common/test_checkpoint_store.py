"""The checkpoint store: pointer files, verification by size and SHA-256,
interrupted saves, pruning, compatibility checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim2real.policies.common import checkpoint
from sim2real.policies.errors import CheckpointMismatchError, CheckpointNotFoundError, CorruptCheckpointError
from sim2real.sim.core.errors import Sim2RealError

STATE = {"task": "sim2real/TestPuck-v0", "obs_size": 6, "observation_layout": [["pos", 2], ["vel", 2], ["target", 2]]}


def save(root: Path, kind: str, step: int, payload: bytes = b"weights", keep: int = 2) -> Path:
    writers = {"model.zip": lambda f: f.write(payload + str(step).encode())}
    return checkpoint.save(root, kind, step, writers, STATE, keep=keep)


def test_save_then_locate_and_verify(tmp_path: Path) -> None:
    folder = save(tmp_path, "last", 100)
    assert checkpoint.locate(tmp_path, "last") == folder
    assert checkpoint.locate(tmp_path, "auto") == folder  # no best yet
    state = checkpoint.read_state(folder)
    assert state["step"] == 100 and state["kind"] == "last" and state["task"] == STATE["task"]
    assert state["files"]["model.zip"]["size"] == len(b"weights100")
    best = save(tmp_path, "best", 50)
    assert checkpoint.locate(tmp_path, "auto") == best


def test_no_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointNotFoundError, match="no last checkpoint"):
        checkpoint.locate(tmp_path, "last")


def test_truncated_and_altered_files_are_detected(tmp_path: Path) -> None:
    folder = save(tmp_path, "last", 1, payload=b"x" * 1000)
    model = folder / "model.zip"
    data = model.read_bytes()
    model.write_bytes(data[:500])
    with pytest.raises(CorruptCheckpointError, match="truncated"):
        checkpoint.read_state(folder)
    model.write_bytes(data[:-1] + b"!")
    with pytest.raises(CorruptCheckpointError, match="SHA-256"):
        checkpoint.read_state(folder)
    model.unlink()
    with pytest.raises(CorruptCheckpointError, match="missing"):
        checkpoint.read_state(folder)


def test_garbage_state_and_pointer_files_are_clear_errors(tmp_path: Path) -> None:
    folder = save(tmp_path, "last", 1)
    (folder / "state.json").write_text('{"format": 1, "fi')
    with pytest.raises(CorruptCheckpointError, match="unreadable"):
        checkpoint.read_state(folder)
    (tmp_path / "last.json").write_text("not json")
    with pytest.raises(CorruptCheckpointError, match="unreadable"):
        checkpoint.locate(tmp_path, "last")
    (tmp_path / "last.json").write_text(json.dumps({"dir": "step-000000000999"}))
    with pytest.raises(CorruptCheckpointError, match="does not exist"):
        checkpoint.locate(tmp_path, "last")
    assert issubclass(CorruptCheckpointError, Sim2RealError)


def test_an_interrupted_save_never_becomes_current_and_is_cleaned_up(tmp_path: Path) -> None:
    save(tmp_path, "last", 100)
    partial = tmp_path / "step-000000000200"
    partial.mkdir()
    (partial / "model.zip").write_bytes(b"half")  # killed before state.json and the pointer
    assert checkpoint.locate(tmp_path, "last").name == "step-000000000100"
    save(tmp_path, "last", 150)
    assert not partial.exists()


def test_pruning_keeps_the_current_and_keep_minus_one_older(tmp_path: Path) -> None:
    for step in (1, 2, 3, 4):
        save(tmp_path, "last", step, keep=2)
        save(tmp_path, "best", step)
    names = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert names == ["best-000000000004", "step-000000000003", "step-000000000004"]


def test_saving_the_current_step_again_is_a_no_op(tmp_path: Path) -> None:
    first = save(tmp_path, "last", 7)
    mtime = (first / "state.json").stat().st_mtime_ns
    assert save(tmp_path, "last", 7) == first
    assert (first / "state.json").stat().st_mtime_ns == mtime


def test_compatibility_errors_name_what_differs() -> None:
    checkpoint.check_compatible(STATE, task="sim2real/TestPuck-v0", obs_size=6)
    with pytest.raises(CheckpointMismatchError, match=r"task 'sim2real/TestPuck-v0'.*'sim2real/ArmReach-v0'"):
        checkpoint.check_compatible(STATE, task="sim2real/ArmReach-v0")
    with pytest.raises(CheckpointMismatchError, match=r"observation size 6.*is 7.*pos 2, vel 2, target 2"):
        checkpoint.check_compatible(STATE, obs_size=7)
    with pytest.raises(CheckpointMismatchError, match="observation layout"):
        checkpoint.check_compatible(STATE, observation_layout=[("pos", 2), ("vel", 2), ("goal", 2)])
