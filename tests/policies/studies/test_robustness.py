"""Robustness curves: each axis's points sit where the docs say (around and beyond the
training range), every episode of a point really runs at its value, combined points widen
every range, the oracles (a told model-based controller, the quadruped's privileged teacher)
act on what they are told, and the command writes its JSON and picture or refuses an unknown axis."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim2real.policies.common.evaluation import Evaluator
from sim2real.policies.studies import robustness as R
from sim2real.policies.studies import robustness_runs as RR
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[3]
HOVER = REGISTRY.get("DroneHover")


def test_points_span_the_training_range_and_beyond() -> None:
    train = HOVER.dr_class.train()
    axes, skipped = R.axes_for(train)
    by_name = {a.name: a for a in axes}
    np.testing.assert_allclose(by_name["mass"].values, [0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3])
    assert by_name["latency"].values == (0.0, 1.0, 2.0, 3.0)
    np.testing.assert_allclose(by_name["wind"].values, [0.0, 0.75, 1.5, 2.25, 3.0, 4.5])  # trained 0-1.5 m/s
    np.testing.assert_allclose(by_name["obs_noise"].values, [0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
    assert "friction" in skipped and "kp" in skipped  # a drone trains neither
    quad = R.axes_for(REGISTRY.get("QuadrupedVelocity").dr_class.train(), ["friction"])[0][0]
    assert min(quad.values) == 0.0 and len(set(quad.values)) == len(quad.values)  # clipped at the bound, no repeats
    with pytest.raises(ConfigError, match="unknown axis gravity"):
        R.axes_for(train, ["mass", "gravity"])


def test_every_episode_of_a_point_runs_at_its_value_and_combined_points_widen() -> None:
    train = HOVER.dr_class.train()
    mass = next(a for a in R.axes_for(train, ["mass"])[0])
    base = HOVER.dr_class()
    zero = lambda obs: np.zeros((len(obs), 4))  # noqa: E731
    ev = Evaluator(HOVER, n_envs=2, action_mode="ctbr_residual", dr=mass.at(base, train, 1.3), seed=5)
    draws = [e.draw for e in ev.run_episodes(zero, 2)]
    assert all(np.allclose(d["mass_scale"], 1.3) for d in draws)
    assert all(d["latency_steps"] == 0 for d in draws)  # the rest nominal
    wide = R.combined(train, R.axes_for(train)[0], 3.0)
    assert (wide.mass_scale.low, wide.mass_scale.high) == pytest.approx((0.7, 1.3))
    assert wide.latency_steps == (0, 3) and wide.wind_speed.high == pytest.approx(4.5)
    assert wide.com_shift == train.com_shift  # not an axis: as in training


def test_the_feasible_preset_follows_the_oracles_contiguous_successes() -> None:
    train = HOVER.dr_class.train()
    axes, _ = R.axes_for(train, ["mass", "wind"])
    ok = {"mass": [False, True, True, True, True, True, False],  # 0.8-1.2 within reach
          "wind": [True, True, True, False, True, True]}          # a gap at 2.25 m/s ends the run
    dr, ranges = R.feasible_preset(train, axes, ok)
    assert ranges == {"mass": [pytest.approx(0.8), pytest.approx(1.2)], "wind": [0.0, 1.5]}
    assert (dr.mass_scale.low, dr.mass_scale.high) == pytest.approx((0.8, 1.2))
    assert dr.latency_steps == train.latency_steps  # not an axis here: training's
    dr, ranges = R.feasible_preset(train, axes[:1], {"mass": [False] * 7})
    assert ranges["mass"] == [0.9, 1.1]  # out of reach everywhere: the training range


def test_the_oracle_is_told_each_episodes_true_parameters() -> None:
    from sim2real.policies.classical import oracle_for
    from sim2real.sim.core.randomization import Range

    task = HOVER(num_envs=2, action_mode="ctbr")
    oracle, mode = oracle_for(task, 2)
    assert mode == "ctbr"
    dr = dataclasses.replace(HOVER.dr_class(), mass_scale=Range(1.2, 1.2), thrust_coefficient=Range(0.8, 0.8))
    Evaluator(HOVER, n_envs=2, action_mode="ctbr", dr=dr, seed=1).run(oracle, 2)
    np.testing.assert_allclose(oracle.mass, 0.027 * 1.2 / 0.8, rtol=1e-3)  # the feedforward's mass


@pytest.mark.heavy
def test_the_command_writes_curves_and_a_picture(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "sim2real", "robustness", str(ROOT / "policies" / "baselines" / "ArmReach"),
           "--axes", "latency", "--episodes", "2", "--feasible-episodes", "4", "--n-envs", "2", "--out", str(tmp_path),
           "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    study = json.loads(done.stdout)
    assert study["feasible_episodes"] == 4 and study["feasible"]["oracle"]["episodes"] == 4
    points = study["axes"]["latency"]["points"]
    assert [p["value"] for p in points] == [0.0, 1.0, 2.0, 3.0]
    assert all(p[w]["episodes"] == 2 for p in points for w in ("policy", "reference", "oracle"))
    assert study["controllers"] == {"policy": "ee_delta", "reference": "ee_delta", "oracle": "ee_delta"}
    assert [c["factor"] for c in study["combined"]] == [1.0, 2.0, 3.0]
    low, high = study["feasible_preset"]["latency"]
    assert low == 0.0 and high >= 1.0  # never narrower than training's
    oracle = study["feasible"]["oracle"]["success_rate"]
    if oracle > 0:
        assert study["transfer_ratio"] == pytest.approx(study["feasible"]["policy"]["success_rate"] / oracle)
    assert "policy" in study["heldout"]
    assert json.loads((tmp_path / "robustness.json").read_text())["axes"].keys() == {"latency"}
    assert (tmp_path / "robustness.png").read_bytes()[:4] == b"\x89PNG"
    bad = subprocess.run([*cmd[:5], "--axes", "gravity"], capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode != 0 and "unknown axis gravity" in bad.stderr and "Traceback" not in bad.stderr


def test_the_sim2sim_check_reports_each_configurations_change(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "sim2real", "robustness", str(ROOT / "policies" / "baselines" / "ArmReach"),
           "--sim2sim", "--episodes", "2", "--n-envs", "2", "--out", str(tmp_path), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)["sim2sim"]
    assert [r["variant"] for r in rows] == list(RR.SIM2SIM)
    assert rows[0]["policy"]["change"] == 0.0 and rows[0]["simulator"] == "the task's own"
    for r in rows:
        assert r["policy"]["change"] == pytest.approx(r["policy"]["success_rate"] - rows[0]["policy"]["success_rate"])
    assert (tmp_path / "sim2sim.json").is_file()


def test_the_quadrupeds_oracle_is_the_shipped_teacher_under_its_own_controller_options() -> None:
    """The teacher acts on the present observation and the privileged state, in a task run
    under its own action scale, trot reference and no history, whatever the studied
    policy's: the study's episode options reach it, the policy's controller options do
    not. Tasks whose observation it cannot read get none."""
    from sim2real.policies import BASELINES_DIR
    from sim2real.policies.classical import oracle_for
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.sim import make_vec

    teacher = OnnxPolicy(BASELINES_DIR / "QuadrupedVelocityTeacher")
    studied = {"action_scale": 0.5, "gait_frequency_hz": 4.0, "history_steps": 5, "base_velocity": "estimated"}
    task = REGISTRY.get("QuadrupedVelocity")(num_envs=3, action_mode="gait_residual", **studied)
    made = oracle_for(task, 3)
    assert made is not None
    oracle, mode = made
    assert mode == "gait_residual" and oracle.privileged_inputs
    options = oracle.options_for(studied)
    assert options == {"action_scale": 0.3, "base_velocity": "estimated"}
    env = make_vec("QuadrupedVelocity", 3, seed=2, action_mode=mode, privileged_obs=True, **options)
    obs = env.reset()
    for _ in range(5):
        obs, *_ = env.step(oracle(obs))
    np.testing.assert_allclose(oracle(obs), teacher(obs))
    waypoints = REGISTRY.get("QuadrupedWaypoints")(num_envs=1)
    assert oracle_for(waypoints, 1) is None  # other observation blocks: no oracle


def test_a_study_runs_its_oracle_under_the_oracles_options_on_the_same_episodes() -> None:
    """A policy trained under another trot reference is judged against the teacher under
    its own: the oracle's figure does not depend on which policy is studied."""
    from sim2real.policies import BASELINES_DIR
    from sim2real.policies.deploy import OnnxPolicy

    teacher = OnnxPolicy(BASELINES_DIR / "QuadrupedVelocityTeacher")
    task_cls = REGISTRY.get("QuadrupedVelocity")
    runs = {}
    for studied in ({"action_scale": 0.3}, {"action_scale": 0.5, "gait_frequency_hz": 4.0}):
        controllers = RR.controllers_for(teacher, task_cls, studied, 2)
        assert controllers["policy"][2] == studied and controllers["oracle"][2] == {"action_scale": 0.3}
        controllers = {"oracle": controllers["oracle"]}
        runs[len(studied)] = RR.evaluate_point(task_cls, task_cls.dr_class.train(), controllers, 2, 2, 5)["oracle"]
    assert runs[1]["metrics_final"] == runs[2]["metrics_final"]


@pytest.mark.heavy
def test_points_as_ray_tasks_give_the_same_study(ray_local) -> None:
    from sim2real.policies.common import cluster
    from sim2real.policies.deploy import OnnxPolicy

    policy = OnnxPolicy(ROOT / "policies" / "baselines" / "ArmReach")
    here, labels = RR.study(policy, ["latency"], 2, 2, 20_000), []
    ray = RR.study(policy, ["latency"], 2, 2, 20_000, on_point=labels.append, ray_address=cluster.LOCAL)
    assert json.dumps(ray, sort_keys=True) == json.dumps(here, sort_keys=True)
    assert sorted(labels)[:2] == ["combined x1", "combined x2"] and len(labels) == 9  # each point once
