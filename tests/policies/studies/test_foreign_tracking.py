"""`sim2real sim2sim POLICY --model FOREIGN.xml`: the shipped velocity policy through the
policy node's observation and action path, in a foreign-style model built from ours
(joints renamed, legs reordered, torque motors, a 2 ms step) beside our own model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

from sim2real.cli import main
from sim2real.policies import BASELINES_DIR
from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.studies.foreign_tracking import our_model, policy_gains, run_episode
from sim2real.policies.studies.tracking import GRID
from sim2real.ros_nodes.robots import ObservationBuilder, make_task
from sim2real.sim.quadruped.foreign import ForeignQuadruped

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sim" / "quadruped"))
from foreign_models import foreign_xml, prefix_map, write_foreign

POLICY = BASELINES_DIR / "QuadrupedVelocity"
FORWARD = np.array([0.5, 0.0, 0.0])


@pytest.fixture(scope="module")
def policy() -> OnnxPolicy:
    return OnnxPolicy(POLICY)


def walk(policy: OnnxPolicy, robot: ForeignQuadruped, seconds: float = 2.0) -> tuple[bool, np.ndarray]:
    """Forward 0.5 m/s from episode 0's start: fell, mean (vx, vy, yaw rate) of the second half."""
    options = dict(policy.metadata.get("task_options") or {})
    source = ObservationBuilder("quadruped", make_task(policy.task, policy.action_mode, options), policy.action_size)
    ep = run_episode(policy, robot, source, FORWARD, seconds, np.random.default_rng([7, 0]))
    return ep.fell, ep.velocity / max(ep.steps, 1)


def foreign(policy: OnnxPolicy, joint_map: dict[str, str]) -> ForeignQuadruped:
    kp, kd = policy_gains(policy)
    return ForeignQuadruped(mujoco.MjModel.from_xml_string(foreign_xml()), policy.control_dt, kp, kd, joint_map)


def test_the_policy_walks_in_a_renamed_reordered_motor_model_as_in_ours(policy: OnnxPolicy) -> None:
    fell_ours, ours = walk(policy, our_model(policy))
    fell, theirs = walk(policy, foreign(policy, prefix_map()))
    assert not fell_ours and not fell
    assert ours[0] > 0.4 and abs(theirs[0] - ours[0]) < 0.05 and abs(theirs[1]) < 0.05


def test_a_mis_mapped_joint_order_falls_or_strays(policy: OnnxPolicy) -> None:
    """The map decides which motor each policy output drives: a wrong one is not harmless."""
    def renamed(swap: dict[str, str]) -> dict[str, str]:
        return {ours: swap.get(theirs, theirs) for ours, theirs in prefix_map().items()}

    hip_thigh = renamed({"go2_RR_hip_joint": "go2_RR_thigh_joint", "go2_RR_thigh_joint": "go2_RR_hip_joint"})
    assert walk(policy, foreign(policy, hip_thigh))[0]  # a hip driven as a thigh: down at once
    left_right = renamed({f"go2_FR_{j}_joint": f"go2_FL_{j}_joint" for j in ("hip", "thigh", "calf")}
                         | {f"go2_FL_{j}_joint": f"go2_FR_{j}_joint" for j in ("hip", "thigh", "calf")})
    fell, strayed = walk(policy, foreign(policy, left_right))
    assert fell or abs(strayed[1]) > 0.08  # front legs swapped: it crabs sideways


def test_sim2sim_model_reports_both_models_per_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = write_foreign(tmp_path)
    (tmp_path / "map.yaml").write_text("".join(f"{k}: {v}\n" for k, v in prefix_map().items()))
    assert main(["sim2sim", str(POLICY), "--model", str(model), "--joint-map", str(tmp_path / "map.yaml"),
                 "--episodes", "1", "--seconds", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = report["rows"]
    assert [(r["command"], r["model"]) for r in rows] == [(n, m) for n, _ in GRID for m in ("ours", "go2.xml")]
    assert report["models"]["go2.xml"]["decimation"] == 10 and "torque motors" in report["models"]["go2.xml"]["drive"]
    assert report["models"]["ours"]["decimation"] == 4 and "position servos" in report["models"]["ours"]["drive"]
    for r in rows:
        assert r["falls"] == 0 and r["episodes"] == 1
        assert 0.15 < r["trunk_height_m"] < 0.33 and 0 < r["knee_torque_rms_max_nm"] < 45 and r["power_w"] > 0
        assert r["torque_rms_nm"] <= r["knee_torque_rms_max_nm"]
    walking = [r for r in rows if r["command"] == "forward 0.5 m/s"]
    assert all(r["foot_clearance_m"] is not None and r["foot_clearance_m"] > 0.01 for r in walking)
    # Cost of transport: P / (m g v), none while standing still.
    assert all(r["cost_of_transport"] is None for r in rows if r["command"] == "stand still")
    assert all(0.05 < r["cost_of_transport"] < 10 for r in walking)


@pytest.mark.parametrize(("changes", "args", "error"), [
    ({}, [], "has no hinge joint FR_hip_joint (our FR_hip_joint) on the robot (and 11 more)"),
    ({"prefix": ""}, ["--joint-map", "FR_calf_joint=FR_knee"], "has no hinge joint FR_knee (our FR_calf_joint)"),
    ({"prefix": "", "free_joint": False}, [], "has no free joint"),
    ({"prefix": ""}, ["--dr", "none"], "not with --model"),
])
def test_sim2sim_model_fails_closed_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  changes: dict[str, object], args: list[str], error: str) -> None:
    model = write_foreign(tmp_path, **changes)
    assert main(["sim2sim", str(POLICY), "--model", str(model), *args, "--episodes", "1", "--seconds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("latency", [0, 2])
def test_the_motors_get_the_action_of_latency_steps_ago(policy: OnnxPolicy, latency: int) -> None:
    """``latency_steps`` delays what reaches the motors, as the training randomization
    does: zeros first, then the action of ``latency`` control steps before."""
    options = dict(policy.metadata.get("task_options") or {})
    source = ObservationBuilder("quadruped", make_task(policy.task, policy.action_mode, options), policy.action_size)
    chosen, applied = [], []

    class Recorded:
        def __getattr__(self, name: str) -> object:
            return getattr(policy, name)

        def __call__(self, obs: np.ndarray) -> np.ndarray:
            chosen.append(np.asarray(policy(obs), dtype=np.float64).reshape(-1))
            return chosen[-1]

    deploy = source.task.deploy_command
    source.task.deploy_command = lambda action, *rest: (applied.append(np.array(action)), deploy(action, *rest))[1]
    run_episode(Recorded(), our_model(policy), source, FORWARD, 0.2, np.random.default_rng([7, 0]),
                latency_steps=latency)
    assert len(applied) == len(chosen) == 10
    for k, action in enumerate(applied):
        np.testing.assert_array_equal(action, chosen[k - latency] if k >= latency else np.zeros(policy.action_size))


def test_sim2sim_holds_the_commands_asked_for_with_the_motors_behind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim2sim", str(POLICY), "--command", "0.5,0,0", "--command", "0,0,0.5", "--latency-steps", "1",
                 "--episodes", "1", "--seconds", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["latency_steps"] == 1
    rows = [(r["commanded"], r["model"]) for r in report["rows"]]
    assert rows == [([0.5, 0.0, 0.0], "ours"), ([0.0, 0.0, 0.5], "ours")]
    assert report["rows"][0]["achieved"][0] > 0.3 and report["rows"][0]["falls"] == 0


@pytest.mark.parametrize(("args", "error"), [
    (["--command", "0.5,0"], "'0.5,0' is not VX,VY,WZ"),
    (["--command", "nan,0,0"], "is not finite"),
    (["--latency-steps", "-1"], "must be 0 or more control steps"),
    (["--latency-steps", "1", "--dr", "train"], "not with --model, --latency-steps"),
    (["--latency-steps", "0", "--dr", "train"], "not with --model, --latency-steps"),  # 0 given: that path too
])
def test_sim2sim_refuses_a_bad_command_or_latency_in_one_line(capsys: pytest.CaptureFixture[str], args: list[str],
                                                              error: str) -> None:
    assert main(["sim2sim", str(POLICY), *args, "--episodes", "1", "--seconds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert error in err and len(err.splitlines()) == 1
