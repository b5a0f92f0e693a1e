"""The gait figures (sim/quadruped/gait_metrics.py) and the natural-gait reward term."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY, make
from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped import rewards
from sim2real.sim.quadruped.gait_metrics import GaitStats, SwingPeaks, cost_of_transport


def test_a_swing_counts_once_at_touchdown_and_chatter_does_not() -> None:
    swings = SwingPeaks(2)
    ground = np.zeros((2, 4))
    down = np.ones((2, 4), dtype=bool)
    swings.update(ground, down, True)
    lifted = down.copy()
    lifted[:, 0] = False
    for h in (0.03, 0.07, 0.05):  # foot 0 of both envs swings for three steps
        height = ground.copy()
        height[:, 0] = h
        swings.update(height, lifted, True)
    swings.update(ground, down, np.array([True, False]))  # env 1's touchdown is not measured
    chatter = down.copy()
    chatter[:, 1] = False  # one step off the ground: contact chatter, not a swing
    swings.update(ground + 0.01, chatter, True)
    swings.update(ground, down, True)
    assert swings.count.tolist() == [1, 0]
    assert swings.mean()[0] == pytest.approx(0.07) and swings.mean()[1] == 0.0
    swings.reset(0)
    assert swings.count[0] == 0 and swings.total[0] == 0.0


def test_cost_of_transport_is_power_over_weight_times_speed() -> None:
    assert cost_of_transport(150.0, 15.0, 1.0) == pytest.approx(150.0 / (15.0 * 9.81))
    assert cost_of_transport(np.array([10.0, 10.0]), 15.0, np.array([0.0, 0.5])).tolist()[0] == 0.0


def test_gait_stats_count_only_steps_that_command_motion() -> None:
    stats = GaitStats(2, mass_kg=15.0)
    feet, contact = np.zeros((2, 4)), np.ones((2, 4), dtype=bool)
    knee = np.full((2, 4), 10.0)
    out = stats.update(np.array([0.28, 0.28]), np.array([50.0, 50.0]), np.array([0.0, 0.0]), knee, feet, contact,
                       np.array([False, False]))
    assert out["walking_trunk_height"].tolist() == [0.28, 0.28]  # before walking: the current height, never NaN
    out = stats.update(np.array([0.20, 0.26]), np.array([75.0, 75.0]), np.array([0.5, 0.5]), knee * 2, feet, contact,
                       np.array([True, False]))
    assert out["walking_trunk_height"][0] == pytest.approx(0.20) and out["walking_trunk_height"][1] == 0.26
    assert out["knee_torque_rms"][0] == pytest.approx(20.0) and out["knee_torque_rms"][1] == 0.0
    assert out["knee_rms_of_peak"][0] == pytest.approx(20.0 / c.CALF_TORQUE)
    assert out["cost_of_transport"][0] == pytest.approx(75.0 / (15.0 * 9.81 * 0.5)) and out["cost_of_transport"][1] == 0
    stats.reset(0)
    assert stats.steps[0] == 0 and stats.knee_sq[0] == 0


def test_the_height_term_charges_a_shortfall_only() -> None:
    deficit = rewards.height_deficit(np.array([0.20, 0.287, 0.30]), 0.287)
    assert deficit.tolist() == pytest.approx([0.087**2, 0.0, 0.0])


def test_walking_tall_is_a_recipe_and_a_crouch_is_a_command() -> None:
    from sim2real.policies.config_loading import resolve_config

    cfg = resolve_config("QuadrupedVelocity", "policies/configs/recipes/quadruped_velocity_tall.yaml", {})
    weights = cfg.task_options["reward_weights"]
    assert weights["base_height"] == rewards.NATURAL_GAIT_WEIGHT < 0
    velocity = REGISTRY.get("QuadrupedVelocity")(num_envs=1, action_mode="gait_residual",
                                                 reward_weights=weights)
    assert velocity.weights["base_height"] == rewards.NATURAL_GAIT_WEIGHT
    assert velocity.height_target() == c.STANDING_HEIGHT
    assert REGISTRY.get("QuadrupedVelocity")(num_envs=1).weights["base_height"] == 0.0  # the shipped policy's
    # Rough ground: height above z = 0 means nothing there, so the term is refused.
    with pytest.raises(ConfigError, match=r"reward_weights\.base_height"):
        REGISTRY.get("QuadrupedVelocityRough")(num_envs=1, reward_weights=weights)
    waypoints = REGISTRY.get("QuadrupedWaypoints")(num_envs=2, action_mode="gait_residual")
    waypoints.crouch = np.array([0.0, 0.08])
    assert np.allclose(waypoints.height_target(), [c.STANDING_HEIGHT, c.STANDING_HEIGHT - 0.08])


def test_eval_reports_the_gait_of_a_walk() -> None:
    env = make("QuadrupedVelocity", dr="none", action_mode="gait_residual", seed=0,
               zero_command_probability=0.0, resample_seconds=100.0)
    env.reset(seed=0)
    env.task.set_command(0, np.array([0.5, 0.0, 0.0]))
    info: dict = {}
    for _ in range(150):  # 3 s of the open-loop trot reference
        _, _, terminated, _, info = env.step(np.zeros(12))
        assert not terminated
    m = info["metrics"]
    assert 0.2 < m["walking_trunk_height"] < 0.3
    assert 0.01 < m["foot_clearance"] < 0.12  # the reference lifts its feet 8 cm
    assert 0 < m["knee_torque_rms"] < c.CALF_TORQUE and m["knee_rms_of_peak"] == pytest.approx(
        m["knee_torque_rms"] / c.CALF_TORQUE)
    assert np.isfinite(m["cost_of_transport"]) and m["cost_of_transport"] >= 0


def test_the_policy_can_observe_the_robots_own_velocity_estimate() -> None:
    def walk(source: str) -> np.ndarray:
        env = make("QuadrupedVelocity", dr="none", action_mode="gait_residual", seed=0, base_velocity=source,
                   zero_command_probability=0.0, resample_seconds=100.0)
        env.reset(seed=0)
        env.task.set_command(0, np.array([0.5, 0.0, 0.0]))
        errors = []
        for _ in range(100):
            obs, *_ = env.step(np.zeros(12))
            errors.append(obs[0:3] - env.task.base_state(env.engine.phys).lin_vel[0])
        return np.sqrt(np.mean(np.square(errors[10:]), axis=0))

    assert walk("true").max() < 1e-6
    error = walk("estimated")
    assert 0.005 < error.max() < 0.15  # leg odometry with the lowstate's noise: close, never the truth
    with pytest.raises(ConfigError, match="base_velocity"):
        REGISTRY.get("QuadrupedVelocity")(num_envs=1, base_velocity="measured")


def test_an_estimate_never_fed_reads_what_the_deployment_measured() -> None:
    task = REGISTRY.get("QuadrupedVelocity")(num_envs=1, base_velocity="estimated")
    task.build_model()
    assert task.onboard is not None and not task.onboard.fed.any()
    truth = np.array([[0.3, -0.1, 0.0]])
    assert np.array_equal(task.onboard.body_velocity(np.array([[1.0, 0.0, 0.0, 0.0]]), truth), truth)


def test_turning_in_place_can_be_a_share_of_the_commands() -> None:
    rng = np.random.default_rng(0)
    plain = REGISTRY.get("QuadrupedVelocity")(num_envs=1).sample_commands(rng, 20_000)
    turns = REGISTRY.get("QuadrupedVelocity")(num_envs=1, turn_in_place_probability=0.3).sample_commands(rng, 20_000)

    def share(c: np.ndarray) -> float:
        return float(((c[:, :2] == 0).all(axis=1) & (c[:, 2] != 0)).mean())

    assert share(plain) < 0.03 and 0.25 < share(turns) < 0.31  # 0.3 of the 90 % that are not "stand still"
    with pytest.raises(ConfigError, match="turn_in_place_probability"):
        REGISTRY.get("QuadrupedVelocity")(num_envs=1, turn_in_place_probability=1.5)
