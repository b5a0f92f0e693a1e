"""`sim2real hil ...`: help of every subcommand, and the whole workflow end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hil_helpers import free_port_pair, tiny_config

from sim2real.cli import main


@pytest.mark.parametrize("sub", ["record-demos", "train-classifier", "learner", "actor", "run"])
def test_every_hil_subcommand_has_help(sub: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["hil", sub, "--help"])
    assert exit_.value.code == 0
    assert f"usage: sim2real hil {sub}" in capsys.readouterr().out


def test_bad_config_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("learner: {discount: 1.5}\n")
    assert main(["hil", "actor", "--config", str(bad), "--steps", "1"]) == 2
    assert "discount" in capsys.readouterr().err


def cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sim2real", "hil", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_hil_run_end_to_end_in_state_mode(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(tiny_config().to_dict()))
    demos = tmp_path / "demos"
    assert cli("record-demos", "--config", str(config), "--n", "3", "--out", str(demos)).returncode == 0
    out = cli("run", "--config", str(config), "--demos", str(demos), "--steps", "400", "--run-dir",
              str(tmp_path / "run"), "--port", str(free_port_pair()), "--json")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["steps"] == 400 and summary["flushed"] and summary["weight_updates"] >= 1
    assert summary["learner_exit"] == 0 and (tmp_path / "run" / "checkpoint.pt").exists()


@pytest.mark.slow
def test_pixel_workflow_demos_classifier_actor(tmp_path: Path) -> None:
    """Pixels end to end: labelled demos -> classifier -> actor rewarded by the classifier."""
    labels = tmp_path / "labels"
    out = cli("record-demos", "--obs-mode", "pixels", "--image-size", "32", "--n", "4", "--hold-success", "8",
              "--out", str(labels), "--json")
    assert out.returncode == 0, out.stderr
    clf = tmp_path / "clf.pt"
    out = cli("train-classifier", "--demos", str(labels), "--out", str(clf), "--steps", "80", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["train_positives"] > 0 and "held_out" in report
    config = tmp_path / "config.json"
    config.write_text(json.dumps(tiny_config("pixels").to_dict()))
    out = cli("run", "--config", str(config), "--demos", str(labels), "--steps", "60", "--run-dir",
              str(tmp_path / "run"), "--port", str(free_port_pair()), "--classifier", str(clf), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["steps"] == 60


def test_hil_run_stops_before_the_actor_when_the_learner_cannot_start(tmp_path: Path) -> None:
    out = cli("run", "--obs-mode", "state", "--demos", str(tmp_path / "missing"), "--steps", "10",
              "--port", str(free_port_pair()))
    assert out.returncode != 0
    assert "demo folder" in out.stderr and "the learner exited with 2 before it listened" in out.stderr, out.stderr
    assert "actor" not in out.stderr
