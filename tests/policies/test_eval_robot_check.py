"""`sim2real eval` refuses an exported policy whose metadata names another robot than its
task's, and a checkpoint whose state does (issue 16, defect 12): the layouts may match by
chance, the meaning of the numbers does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from policy_helpers import register_puck, tiny_config

from sim2real.cli import main


@pytest.fixture(scope="module")
def ppo_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny PPO run on TestPuck (robot ``test``) and its ONNX export."""
    from sim2real.policies.export.exporter import export_policy
    from sim2real.policies.trainer import train

    root = tmp_path_factory.mktemp("robot-check")
    with pytest.MonkeyPatch.context() as mp:
        register_puck(mp)
        train(tiny_config("ppo"), root / "run", progress=False)
        export_policy(root / "run", "onnx", root / "export", which="last")
    return root / "run", root / "export"


def test_eval_refuses_metadata_for_another_robot(ppo_export: tuple[Path, Path], puck,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _, export = ppo_export
    metadata = export / "policy.onnx.json"
    meta = json.loads(metadata.read_text())
    assert main(["eval", str(export), "--episodes", "1", "--n-envs", "1", "--json"]) == 0
    capsys.readouterr()
    original = metadata.read_text()
    try:
        metadata.write_text(json.dumps({**meta, "robot": "drone"}))
        assert main(["eval", str(export), "--episodes", "1", "--n-envs", "1", "--json"]) != 0
        captured = capsys.readouterr()
        assert captured.out == ""
        err = captured.err.strip()
        assert "\n" not in err and "robot 'drone'" in err and "'test' task" in err
    finally:
        metadata.write_text(original)


def test_eval_refuses_a_checkpoint_for_another_robot(ppo_export: tuple[Path, Path], puck,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run, _ = ppo_export
    states = sorted(run.glob("checkpoints/*/state.json"))
    original = [s.read_text() for s in states]
    try:
        for s in states:
            s.write_text(json.dumps({**json.loads(s.read_text()), "robot": "drone"}))
        assert main(["eval", str(run), "--episodes", "1", "--n-envs", "1", "--json"]) != 0
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "robot 'drone'" in err
    finally:
        for s, text in zip(states, original, strict=True):
            s.write_text(text)
