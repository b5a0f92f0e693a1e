"""The analysis scripts under benchmarks/ that docs/BENCHMARKS.md quotes: they parse what
they are given and run on real episodes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pid_gain_cases_parse_vectors_scalars_and_tuples() -> None:
    script = _load("drone_pid_gains")
    case = script.parse_case("kp_vel=8,8,5 max_tilt=0.785 max_speed=2,1")
    np.testing.assert_array_equal(case["kp_vel"], [8.0, 8.0, 5.0])
    assert case["max_tilt"] == pytest.approx(0.785)
    assert case["max_speed"] == (2.0, 1.0)


@pytest.mark.parametrize("bad", ["kp_vel", "no_such_gain=1", "kp_vel:8"])
def test_pid_gain_cases_refuse_unknown_or_malformed_fields(bad: str) -> None:
    script = _load("drone_pid_gains")
    with pytest.raises(SystemExit, match="FIELD=VALUE"):
        script.parse_case(bad)


def test_pid_gain_sweep_runs_episodes_and_reports_each_case(capsys: pytest.CaptureFixture[str]) -> None:
    script = _load("drone_pid_gains")
    assert script.main(["DroneHover", "--episodes", "2", "--n-envs", "2", "--case", "kp_vel=6,6,5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(report["results"]) == {"default gains", "kp_vel=6,6,5"}
    for presets in report["results"].values():
        assert set(presets) == {"train", "heldout"}
        assert all(p["episodes"] == 2 and 0 <= p["successes"] <= 2 for p in presets.values())


def test_failures_split_by_draw_point_at_the_value_that_causes_them() -> None:
    from sim2real.policies.common.evaluation import Episode

    script = _load("heldout_factors")
    rng = np.random.default_rng(0)
    payloads, frictions = rng.uniform(-2, 5, 200), rng.uniform(0.25, 1.5, 200)
    heavy = np.quantile(payloads, 0.75)
    episodes = []
    for payload, friction in zip(payloads, frictions, strict=True):
        fell = bool(payload > heavy)  # only the heaviest quarter fails, and it falls
        com = [0.03, -0.04 * float(friction), 0.0]
        draw = {"trunk_added_mass": float(payload), "friction": float(friction), "com_shift": com,
                "pd_gain_scale": [1.0, 1.0]}
        episodes.append(Episode(0.0, 50 if fell else 1000, not fell, {"fell": float(fell)}, {}, draw))
    report = script.by_draw(episodes, push_every_steps=400)
    assert report["failures"] == report["falls"] == report["falls_before_first_push"] > 0
    payload = [q["failure_rate"] for q in report["values"]["trunk_added_mass"]["quartiles"]]
    assert payload[:3] == [0.0, 0.0, 0.0] and payload[3] == 1.0
    assert max(q["failure_rate"] for q in report["values"]["friction"]["quartiles"]) < 0.5
    smallest = np.hypot(0.03, 0.04 * frictions.min())  # a vector counts by its size
    assert report["values"]["com_shift"]["edges"][0] == pytest.approx(smallest, abs=1e-4)
    assert "pd_gain_scale" not in report["values"]  # constant: nothing to split by
    assert "trunk_added_mass" in script.format_by_draw(report)


def test_a_residual_policy_against_its_reference_takes_task_option_overrides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sim2real.sim.core.errors import ConfigError

    script = _load("heldout_factors")
    hover = str(ROOT / "policies" / "baselines" / "DroneHover")
    args = [hover, "--presets", "--reference", "--json", "--episodes", "2", "--n-envs", "2"]
    assert script.main([*args, "--task-option", "residual_tilt_gate=[10, 20]"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert sorted(report["cases"]) == ["heldout", "reference alone, heldout", "reference alone, train", "train"]
    assert all(case["episodes"] == 2 for case in report["cases"].values())
    assert report["task_options"]["residual_tilt_gate"] == [10, 20]
    with pytest.raises(ConfigError, match="residual_tilt_gate"):  # the value reaches the task
        script.main([*args, "--task-option", "residual_tilt_gate=[20, 10]"])
    with pytest.raises(SystemExit):
        script.main([*args, "--task-option", "residual_tilt_gate"])


def test_the_velocity_policy_on_the_path_sees_pure_pursuits_twist_as_its_command() -> None:
    """benchmarks/hierarchy.py's third controller: the shipped velocity policy, its
    command block filled from the waypoints task's ``reference`` block, every other
    block copied by name."""
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.sim.core.layout import layout_slices
    from sim2real.sim.core.registry import REGISTRY

    script = _load("hierarchy")
    layout = REGISTRY.get("QuadrupedWaypoints")(num_envs=1, action_mode="gait_residual").observation_layout()
    velocity = OnnxPolicy(ROOT / "policies" / "baselines" / "QuadrupedVelocity")
    seen: list[np.ndarray] = []

    class Recording:
        metadata = velocity.metadata

        def __call__(self, obs: np.ndarray) -> np.ndarray:
            seen.append(obs)
            return velocity(obs)

    size = sum(n for _, n in layout)
    obs = np.arange(2 * size, dtype=np.float32).reshape(2, size)
    act = script.velocity_on_the_path(Recording(), layout)(obs)
    assert act.shape == (2, 12)
    have = layout_slices(layout)
    fed = seen[0]
    for block in velocity.metadata["observation"]["layout"]:
        source = "reference" if block["name"] == "command" else block["name"]
        np.testing.assert_array_equal(fed[:, block["start"] : block["start"] + block["size"]],
                                      obs[:, have[source]][:, : block["size"]])


def test_the_hierarchy_comparison_runs_its_controllers_on_the_same_held_out_courses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = _load("hierarchy")
    velocity = str(ROOT / "policies" / "baselines" / "QuadrupedVelocity")
    assert script.main(["--velocity", velocity, "--kinds", "slalom", "--episodes", "2", "--n-envs", "2",
                        "--dr", "none", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows = {row["controller"]: row for row in report["rows"]}
    assert sorted(rows) == ["classical", "velocity_pursuit"]
    for row in rows.values():
        assert row["courses"] == "slalom" and row["episodes"] == 2
        assert 0.0 <= row["waypoint_fraction"] <= 1.0 and row["clean_successes"] <= row["successes"]
    assert rows["velocity_pursuit"]["waypoint_fraction"] > rows["classical"]["waypoint_fraction"]


def test_the_gate_comparison_runs_the_pids_on_the_same_held_out_courses(capsys: pytest.CaptureFixture[str]) -> None:
    script = _load("gates")
    assert script.main(["--episodes", "2", "--n-envs", "2", "--dr", "none", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows = {row["controller"]: row for row in report["rows"]}
    assert sorted(rows) == ["pid_gates", "pid_path"]
    for row in rows.values():
        assert row["episodes"] == 2 and 0.0 <= row["gates_passed"] <= 4.0 and row["crashes"] <= 2
        assert (row["lap_time_s"] is None) == (row["successes"] == 0)


def test_transfer_report_renders_a_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _load("transfer_report")

    def r(rate: float) -> dict:
        return {"success_rate": rate}

    study = {"task": "sim2real/DroneHover-v0", "action_mode": "ctbr_residual", "episodes_per_point": 4,
             "controllers": {"policy": "ctbr_residual", "oracle": "ctbr"},
             "axes": {"mass": {"train_range": [0.9, 1.1], "points": [{"value": 0.7, "policy": r(0.5),
                                                                      "oracle": r(1.0)}]}},
             "combined": [{"factor": 2.0, "policy": r(0.25), "oracle": r(0.75)}],
             "heldout": {"policy": r(0.5), "oracle": r(0.5)}, "skipped_axes": {"kp": "not randomized"},
             "feasible": {"policy": r(0.9), "oracle": r(1.0)}, "feasible_preset": {"mass": [0.7, 1.2]},
             "transfer_ratio": 0.9, "transfer_note": ""}
    (tmp_path / "robustness.json").write_text(json.dumps(study))
    assert script.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Transfer ratio **0.90**" in out and "| mass (0.9-1.1) | 0.7: 50/100 |" in out and "x2: 25/75" in out
    with pytest.raises(SystemExit):
        script.main([str(tmp_path / "none")])


def test_feasible_preset_reevaluates_a_policy_on_a_studys_preset(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.studies.robustness_runs import study

    script = _load("feasible_preset")
    arm = str(ROOT / "policies" / "baselines" / "ArmReach")
    path = tmp_path / "robustness.json"
    path.write_text(json.dumps(study(OnnxPolicy(arm), ["latency"], 1, 1, 20_000)))
    assert script.main([str(path), arm, "--episodes", "2", "--preset-episodes", "1", "--n-envs", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["feasible"]["policy"]["episodes"] == 2 and out["feasible"]["oracle"]["episodes"] == 2
    assert out["feasible_preset"]["latency"][0] == 0.0 and out["train"] in (0, 1)
    with pytest.raises(SystemExit):  # a policy of another task
        script.main([str(path), str(ROOT / "policies" / "baselines" / "DroneHover")])
