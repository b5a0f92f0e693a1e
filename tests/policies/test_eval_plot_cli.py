"""The command line: train/eval/export/plot with --json print exactly one JSON
object on stdout; eval writes a video; an ONNX evaluation never imports torch;
plot writes a PNG."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import pytest
import yaml
from policy_helpers import PUCK_ID, TINY

from sim2real.cli import main


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1, out  # exactly one JSON object, nothing else
    return json.loads(out)


def test_train_flags_reach_the_config(puck, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    out = tmp_path / "run"
    argv = ["train", "TestPuck", "--config", str(tmp_path / "tiny.yaml"), "--algo", "td3", "--seed", "3"]
    argv += ["--n-envs", "2", "--steps", "128", "--dr", "none", "--action-mode", "half_force", "--out", str(out)]
    summary = run_json(capsys, *argv, "--json", "--no-progress")
    assert summary["steps"] == 128 and summary["algo"] == "td3" and summary["task"] == PUCK_ID
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert (cfg["algo"], cfg["seed"], cfg["n_envs"], cfg["total_steps"]) == ("td3", 3, 2, 128)
    assert (cfg["dr"], cfg["action_mode"]) == ("none", "half_force")
    assert cfg["provenance"]["command"].startswith("sim2real")
    summary = run_json(capsys, "train", "--resume", "--out", str(out), "--steps", "192", "--json", "--no-progress")
    assert (summary["resumed_from"], summary["steps"]) == (128, 192)


def test_eval_writes_video_and_json(trained_runs: dict[str, Path], puck, tmp_path: Path, capsys) -> None:
    video = tmp_path / "eval.mp4"
    report = run_json(
        capsys,
        "eval",
        str(trained_runs["sac"]),
        "--episodes",
        "5",
        "--n-envs",
        "2",
        "--dr",
        "heldout",
        "--video",
        str(video),
        "--json",
    )
    assert report["episodes"] == 5 and report["dr"] == "heldout" and report["task"] == PUCK_ID
    assert report["kind"] == "checkpoint (best)" and report["video"] == str(video)
    assert 0 <= report["ci_low"] <= report["success_rate"] <= report["ci_high"] <= 1
    assert set(report["metrics_final"]) == {"distance"} == set(report["metrics_mean"])
    frames = iio.imread(video)
    # The reset frame plus one per control step: 50 unless the puck left the table early.
    assert 2 <= frames.shape[0] <= 51 and frames.shape[1:] == (360, 480, 3)
    assert frames.std() > 0


def test_eval_of_an_onnx_file_runs_without_torch(trained_runs: dict[str, Path], puck, tmp_path: Path) -> None:
    from sim2real.policies.export.exporter import export_policy

    exported = export_policy(trained_runs["ppo"], "onnx", tmp_path)
    code = (
        "import sys, json\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from policy_helpers import PuckTask\n"
        "from sim2real.sim import REGISTRY\n"
        "REGISTRY.register(PuckTask)\n"
        "from sim2real.cli import main\n"
        f"code = main(['eval', {str(exported.policy_path)!r}, '--episodes', '3', '--json'])\n"
        "assert code == 0\n"
        "bad = [m for m in ('torch', 'stable_baselines3') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert (
        report["kind"] == "onnx" and report["episodes"] == 3 and report["step"] == exported.metadata["training"]["step"]
    )


def test_export_json(trained_runs: dict[str, Path], puck, tmp_path: Path, capsys) -> None:
    report = run_json(capsys, "export", str(trained_runs["ppo"]), "--out", str(tmp_path), "--json")
    assert report["policy"] == str(tmp_path / "policy.onnx") and report["max_abs_diff"] <= 1e-5
    assert (report["obs_size"], report["action_size"], report["checkpoint"]) == (6, 2, "best")


def test_plot_writes_a_png(trained_runs: dict[str, Path], tmp_path: Path, capsys) -> None:
    out = tmp_path / "curves.png"
    report = run_json(capsys, "plot", str(trained_runs["ppo"]), str(trained_runs["sac"]), "--out", str(out), "--json")
    assert report["runs"] == {"ppo": 3, "sac": 3}
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = iio.imread(out)
    assert image.shape[0] > 300 and image.shape[1] > 500


@pytest.mark.parametrize("argv", [["--help"], ["train", "--help"], ["eval", "--help"], ["export", "--help"]])
def test_help_renders(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse %-formats help strings: a stray % in a command's first docstring line breaks `sim2real --help`."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    assert "usage: sim2real" in capsys.readouterr().out


def test_a_shipped_baseline_folder_is_an_exported_policy_and_a_run_folder_is_a_run(
        trained_runs: dict[str, Path]) -> None:
    """A baseline folder keeps its training config.yaml beside policy.onnx; only checkpoints make a run."""
    from sim2real.commands.eval import is_onnx_source
    from sim2real.policies import BASELINES_DIR

    assert is_onnx_source(BASELINES_DIR / "ArmReach")
    assert not is_onnx_source(next(iter(trained_runs.values())))
