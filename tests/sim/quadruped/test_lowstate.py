"""The Go2's own base-velocity estimate in the loop (sim/quadruped/lowstate.py): the
simulated lowstate reads what MuJoCo's own sensors read, and the leg odometry fed with it
tracks the truth while the shipped policy walks on it in our model; each impairment
(no stance feet, latency, noise) shows in the estimate."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from sim2real.policies import BASELINES_DIR
from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.studies.foreign_tracking import EpisodeSums, our_model, run_episode
from sim2real.ros_nodes.robots import ObservationBuilder, make_task
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped.estimator import EstimatorConfig
from sim2real.sim.quadruped.foreign import ForeignQuadruped
from sim2real.sim.quadruped.lowstate import LowstateConfig, SimulatedLowstate
from sim2real.sim.quadruped.scene import robot_spec

FORWARD = np.array([0.5, 0.0, 0.0])


@pytest.fixture(scope="module")
def policy() -> OnnxPolicy:
    return OnnxPolicy(BASELINES_DIR / "QuadrupedVelocity")


def _with_floor(spec: mujoco.MjSpec) -> mujoco.MjModel:
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[5, 5, 0.1], contype=2, conaffinity=1)
    return spec.compile()


def _imu_at_trunk_origin(keep_sensor: bool) -> mujoco.MjModel:
    """Our robot on a floor, its IMU site moved to the trunk's origin; with or without the
    accelerometer sensor on it (sensors do not change the dynamics)."""
    spec = robot_spec()
    spec.site("imu").pos = [0.0, 0.0, 0.0]
    if not keep_sensor:
        spec.delete(spec.sensor("imu_acc"))
    return _with_floor(spec)


def test_the_computed_specific_force_is_what_an_accelerometer_reads() -> None:
    """A model without an accelerometer gets the one MuJoCo's sensor would have given."""
    robots = [ForeignQuadruped(_imu_at_trunk_origin(keep), C.CONTROL_DT) for keep in (True, False)]
    sensed, computed = (SimulatedLowstate(r) for r in robots)
    assert sensed.accel_sensor is not None and computed.accel_sensor is None
    datas = [mujoco.MjData(r.model) for r in robots]
    rng = np.random.default_rng(3)
    readings: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for r, d, s in zip(robots, datas, (sensed, computed), strict=True):
        r.reset(d, np.random.default_rng(1), 0.2, 0.5)
        s.start(d)
    for k in range(150):  # falling, landing, kicking: every term of the acceleration
        targets = C.DEFAULT_POSE + (0.4 * rng.normal(size=C.NUM_JOINTS) if k % 10 == 0 else 0.0)
        for r, d, s, out in zip(robots, datas, (sensed, computed), readings, strict=True):
            def read(data: mujoco.MjData, s: SimulatedLowstate = s, out: list[np.ndarray] = out) -> None:
                out.append(s.specific_force(data))
                s.stepped(data)

            r.step_control(d, targets, read)
    a, b = (np.array(x) for x in readings)
    assert np.abs(a).max() > 15.0  # it did more than stand
    np.testing.assert_allclose(b, a, atol=1e-6)


def test_standing_feet_carry_the_robots_weight_in_newtons() -> None:
    robot = ForeignQuadruped(_with_floor(robot_spec()), C.CONTROL_DT)
    data = mujoco.MjData(robot.model)
    robot.reset(data, np.random.default_rng(0), 0.0, 0.0)
    for _ in range(50):  # 1 s
        robot.step_control(data, C.DEFAULT_POSE)
    feet = SimulatedLowstate(robot).foot_force(data)
    weight = float(robot.model.body_mass[robot.robot].sum()) * 9.81
    assert np.all(feet > 0.15 * weight) and abs(feet.sum() - weight) < 0.05 * weight


def _walk(policy: OnnxPolicy, lowstate: LowstateConfig | None, estimator: EstimatorConfig | None = None,
          seconds: float = 4.0) -> tuple[EpisodeSums, float | None]:
    """The shipped policy at 0.5 m/s in our model (deployment path); the estimate's RMS error."""
    options = dict(policy.metadata.get("task_options") or {})
    source = ObservationBuilder("quadruped", make_task(policy.task, policy.action_mode, options), policy.action_size)
    ep = run_episode(policy, our_model(policy), source, FORWARD, seconds, np.random.default_rng([7, 0]), lowstate,
                     estimator)
    return ep, None if ep.estimate_sq is None else float(np.sqrt(ep.estimate_sq / max(ep.steps, 1)))


def test_the_shipped_policy_walks_on_the_estimate_and_it_tracks_the_truth(policy: OnnxPolicy) -> None:
    truth, none = _walk(policy, None)
    ep, error = _walk(policy, LowstateConfig())
    assert none is None and not truth.fell and not ep.fell
    assert error is not None and 0.0 < error < 0.05  # 0.03 m/s rms measured (0.05 before the rolling foot)
    assert abs(ep.velocity[0] / ep.steps - 0.5) < 0.1
    # The policy acts on the estimate, not the truth: the simulation is deterministic, so
    # the same episode on the truth would walk bit for bit the same (here 0.49 against 0.50).
    assert abs(ep.velocity[0] / ep.steps - truth.velocity[0] / truth.steps) > 1e-4


@pytest.mark.parametrize(("impairment", "lowstate", "estimator"), [
    ("no foot ever stands", LowstateConfig(), EstimatorConfig(contact_threshold=1e9)),
    ("200 ms late", LowstateConfig(delay_ms=200.0), None),
    ("noisy joint velocities", LowstateConfig(joint_vel_noise=3.0), None),
])
def test_each_impairment_shows_in_the_estimate(policy: OnnxPolicy, impairment: str, lowstate: LowstateConfig,
                                               estimator: EstimatorConfig | None) -> None:
    """The estimate the policy sees is the odometry's on the lowstate, not the truth."""
    _, clean = _walk(policy, LowstateConfig(), seconds=2.0)
    _, impaired = _walk(policy, lowstate, estimator, seconds=2.0)
    assert clean is not None and impaired is not None
    assert impaired > 2 * clean, (impairment, clean, impaired)


@pytest.mark.parametrize("bad", [{"delay_ms": -1.0}, {"gyro_noise": float("nan")}, {"state_rate_hz": 0.0}])
def test_a_bad_lowstate_setting_is_a_config_error(bad: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        LowstateConfig(**bad)
