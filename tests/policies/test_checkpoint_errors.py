"""Corrupted or mismatched checkpoints give clear errors: a Sim2RealError
subclass in the API, a one-line message and exit status 2 on the command line."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from policy_helpers import PUCK_ID, PuckTask, tiny_config

from sim2real.cli import main
from sim2real.policies.common import checkpoint
from sim2real.policies.errors import CheckpointMismatchError, CorruptCheckpointError


@pytest.fixture
def run_copy(trained_runs: dict[str, Path], tmp_path: Path) -> Path:
    """A private copy of the tiny PPO run, free to damage."""
    return Path(shutil.copytree(trained_runs["ppo"], tmp_path / "run"))


def cli_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    return err


@pytest.mark.heavy
def test_truncated_model_file(run_copy: Path, puck, capsys: pytest.CaptureFixture[str]) -> None:
    model = checkpoint.locate(run_copy / "checkpoints", "last") / "model.zip"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    err = cli_error(capsys, "eval", str(run_copy), "--checkpoint", "last", "--episodes", "1")
    assert "sim2real eval: error:" in err and "truncated" in err and "model.zip" in err
    # Resuming from it fails the same way instead of silently starting over.
    err = cli_error(capsys, "train", "--resume", "--out", str(run_copy), "--no-progress")
    assert "truncated" in err


def test_unreadable_state_file(run_copy: Path, puck, capsys: pytest.CaptureFixture[str]) -> None:
    state = checkpoint.locate(run_copy / "checkpoints", "best") / "state.json"
    state.write_text(state.read_text()[:40])
    err = cli_error(capsys, "export", str(run_copy))
    assert "state.json" in err and "unreadable" in err


def test_changed_observation_size(run_copy: Path, puck, monkeypatch, capsys) -> None:
    """The task gained an observation since training: the checkpoint must not load."""
    layout, observe = PuckTask.observation_layout, PuckTask.observe
    monkeypatch.setattr(PuckTask, "observation_layout", lambda self: [*layout(self), ("extra", 1)])
    monkeypatch.setattr(PuckTask, "observe", lambda self, p: np.concatenate([observe(self, p), p.time[:, None]], 1))
    err = cli_error(capsys, "eval", str(run_copy), "--episodes", "1")
    assert "observation size 6" in err and "7" in err
    from sim2real.policies.loading import load_run

    with pytest.raises(CheckpointMismatchError):
        load_run(run_copy)


def test_resume_with_another_task_or_setting(run_copy: Path, puck, monkeypatch, capsys) -> None:
    class OtherPuck(PuckTask):
        name = "other_puck"

    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    monkeypatch.setitem(REGISTRY._tasks, gym_id(OtherPuck), OtherPuck)
    err = cli_error(capsys, "train", "TestOtherPuck", "--resume", "--out", str(run_copy))
    assert PUCK_ID in err and "TestOtherPuck" in err
    err = cli_error(capsys, "train", "--resume", "--out", str(run_copy), "--seed", "123")
    assert "--seed" in err
    from sim2real.policies.trainer import Trainer

    other = tiny_config("ppo")
    other.task = gym_id(OtherPuck)
    with pytest.raises(CheckpointMismatchError, match="task"):
        Trainer(other, run_copy, resume=True, progress=False)


def test_checkpoint_of_another_task_is_refused(run_copy: Path, puck) -> None:
    folder = checkpoint.locate(run_copy / "checkpoints", "last")
    state = checkpoint.read_state(folder)
    with pytest.raises(CheckpointMismatchError, match="task"):
        checkpoint.check_compatible(state, task="sim2real/ArmReach-v0")


def test_not_a_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_error(capsys, "eval", str(tmp_path))
    assert "not a run folder" in err
    err = cli_error(capsys, "plot", str(tmp_path / "missing"), "--out", str(tmp_path / "c.png"))
    assert "does not exist" in err


def test_corrupt_checkpoint_error_is_a_sim2real_error() -> None:
    from sim2real.sim.core.errors import Sim2RealError

    assert issubclass(CorruptCheckpointError, Sim2RealError) and issubclass(CheckpointMismatchError, Sim2RealError)
