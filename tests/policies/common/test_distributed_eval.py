"""`sim2real eval --workers`: the episodes of one layout split over shards (Ray actors)
are the episodes one process runs, with the same draws (inside episodes too), so every
number is identical."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from policy_helpers import PuckTask

from sim2real.cli import main
from sim2real.policies import BASELINES_DIR
from sim2real.policies.common import distributed_eval
from sim2real.policies.common.evaluation import Evaluator, Shard, shards

FIGURES = ("episodes", "successes", "success_rate", "ci_low", "ci_high", "mean_return", "std_return", "mean_length",
           "metrics_final", "metrics_mean")


def pd_controller(obs: np.ndarray) -> np.ndarray:
    pos, vel, target = obs[:, 0:2], obs[:, 2:4], obs[:, 4:6]
    return np.clip(8.0 * (target - pos) - 1.0 * vel, -1, 1)


def test_shards_deal_every_environment_once() -> None:
    assert shards(5, 2) == [Shard((0, 2, 4), 5), Shard((1, 3), 5)]
    assert shards(2, 4) == [Shard((0,), 2), Shard((1,), 2)]  # never an empty shard


def test_shards_run_the_same_episodes_with_the_same_draws() -> None:
    full = Evaluator(PuckTask, n_envs=3, dr="train", seed=4).run_episodes(pd_controller, 7)
    parts = [Evaluator(PuckTask, dr="train", seed=4, shard=s).run_episodes(pd_controller, 7) for s in shards(3, 2)]
    merged = sorted((row for part in parts for row in part), key=lambda row: (row.env, row.index))
    assert [(r.env, r.index, r.draw) for r in merged] == [(r.env, r.index, r.draw) for r in full]


@pytest.mark.parametrize("dr", ["none", "train"])
def test_every_number_is_identical(dr: str) -> None:
    one = Evaluator(PuckTask, n_envs=3, dr=dr, seed=1).run(pd_controller, 10).to_dict()
    split = distributed_eval.evaluate(lambda: pd_controller, PuckTask, 10, 3, 2, ray_address=None, dr=dr,
                                      seed=1).to_dict()
    assert {k: split[k] for k in FIGURES} == {k: one[k] for k in FIGURES}


@pytest.mark.heavy
def test_eval_workers_on_ray_matches_one_process(ray_local, capsys: pytest.CaptureFixture[str]) -> None:
    # The training randomization: observation noise inside episodes is paired too.
    argv = ["eval", str(BASELINES_DIR / "ArmReach"), "--episodes", "8", "--n-envs", "4", "--dr", "train", "--json"]
    reports = []
    for extra in ([], ["--workers", "2"]):
        assert main(argv + extra) == 0
        reports.append(json.loads(capsys.readouterr().out))
    one, split = reports
    assert (one["workers"], split["workers"]) == (1, 2)
    assert {k: split[k] for k in FIGURES} == {k: one[k] for k in FIGURES}


def test_workers_must_be_positive(tmp_path: Path) -> None:
    assert main(["eval", str(BASELINES_DIR / "ArmReach"), "--workers", "0"]) == 2


@pytest.mark.slow  # MuJoCo Warp compiles its kernels on first use (~45 s on 2 cores)
def test_eval_on_warp_matches_cpu_mujoco(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", str(BASELINES_DIR / "ArmReach"), "--episodes", "4", "--n-envs", "4", "--json"]
    reports = []
    for backend in ("mujoco", "warp"):
        assert main([*argv, "--backend", backend]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    cpu, warp = reports
    assert warp["backend"] == "warp" and warp["successes"] == cpu["successes"] == 4
    # float32 physics: the same episodes end within a fraction of a millimetre of each other
    assert warp["metrics_final"]["ee_distance"] == pytest.approx(cpu["metrics_final"]["ee_distance"], abs=1e-4)
