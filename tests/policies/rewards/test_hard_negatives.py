"""Hard negatives of reach reward models: decoy points along a fixed reward camera's ray
in front of the target and near misses around it. The scripted arm driven to them ends
where the simulator labels the frame a failure, and the hacking audit classifies it as
the kind it was drawn as."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.errors import ConfigError
from sim2real.policies.rewards.audit import along_ray, reach_kinds
from sim2real.policies.rewards.hard_negatives import NEAR_MISS_DISTANCE, RAY_DISTANCE, decoy_points, parse_mix

CAMERA = {"reach_view": (1.1, -0.55, 0.8)}


def test_each_kind_lands_where_it_is_drawn() -> None:
    rng = np.random.default_rng(0)
    targets = rng.uniform([0.35, -0.2, 0.15], [0.65, 0.2, 0.45], (200, 3))
    low, high = np.array([0.3, -0.3, 0.1]), np.array([0.7, 0.3, 0.5])
    ray, kinds = decoy_points(targets, low, high, CAMERA, rng, {"camera_ray": 1.0})
    assert set(kinds) == {"camera_ray"}
    distance = np.linalg.norm(ray - targets, axis=1)
    assert np.all((distance >= RAY_DISTANCE[0]) & (distance <= RAY_DISTANCE[1]))
    flags = reach_kinds(targets - ray, targets, np.zeros(len(targets)), CAMERA)  # target_rel_ee = target - ee
    assert all(along_ray("reach_view") in k for k in flags)
    near, kinds = decoy_points(targets, low, high, {}, rng, {"camera_ray": 0.5, "near_miss": 0.5})
    assert set(kinds) == {"near_miss"}  # without a fixed camera the ray draws become near misses
    distance = np.linalg.norm(near - targets, axis=1)
    assert np.all((distance >= NEAR_MISS_DISTANCE[0]) & (distance <= NEAR_MISS_DISTANCE[1]))
    anywhere, kinds = decoy_points(targets, low, high, CAMERA, rng)
    assert set(kinds) == {"workspace"} and np.all((anywhere >= low) & (anywhere <= high))


@pytest.mark.parametrize("mix", [{"sideways": 1.0}, {"near_miss": -1.0}, {"near_miss": 0.0}, {}])
def test_a_bad_mix_is_refused(mix: dict[str, float]) -> None:
    with pytest.raises(ConfigError, match="decoy kinds"):
        parse_mix(mix)


def test_the_scripted_arm_at_a_hard_negative_is_a_failure_of_that_kind() -> None:
    from sim2real.policies.classical.arm import ArmCartesianController
    from sim2real.policies.rewards.behaviour import decoy_points as env_decoys
    from sim2real.policies.rewards.behaviour import toward_decoys
    from sim2real.policies.rewards.captions import captioner
    from sim2real.policies.rewards.dataset import fixed_cameras
    from sim2real.sim import make_vec
    from sim2real.sim.core.layout import layout_slices

    venv = make_vec("ArmReach", 2, dr="none", seed=3)
    try:
        controller = ArmCartesianController.for_task(venv.task)
        obs = venv.reset()
        cameras = fixed_cameras(venv.engine.models[0], "reach_view")
        rng = np.random.default_rng(1)
        on_ray = env_decoys(venv, rng, [0], cameras, {"camera_ray": 1.0})
        near = env_decoys(venv, rng, [1], cameras, {"near_miss": 1.0})
        assert on_ray is not None and near is not None  # a reach task has decoys
        decoys = np.concatenate([on_ray, near])
        block = layout_slices(venv.task.observation_layout())["target_rel_ee"]
        for _ in range(60):
            obs, *_ = venv.step(controller.act(toward_decoys(obs, venv, decoys, np.array([True, True]), block)))
        phys = venv.engine.phys
        ee = venv.task.ee_pos(phys)
        assert np.all(np.linalg.norm(ee - decoys, axis=1) < 0.02)  # the arm is at its decoys
        labels = captioner("sim2real/ArmReach-v0")(venv.task, phys)
        assert not labels.success.any()  # the simulator: both are failures
        kinds = reach_kinds(venv.task.targets - ee, venv.task.targets, np.zeros(2), cameras)
        assert along_ray("reach_view") in kinds[0]
        assert 0.02 < np.linalg.norm(ee[1] - venv.task.targets[1]) < 0.10  # a near miss: outside the 2 cm sphere
    finally:
        venv.close()
