"""The pre-flight check's judgement on data from the simulated robots: a robot at rest
passes, and each mismatch a real integration gets wrong (swapped joints, degrees, a
flipped IMU, a scalar-last quaternion, a slow stream, a slow link) fails with its name.

The same faults are injected into the protocol emulators (hardware/emulator/faults.py);
here they are applied to the simulator's measurements directly, so every robot and every
fault is covered in a second. The end-to-end path through a backend is in
test_hardware_bridge.py."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.preflight import Item, format_table, judge, verdict
from sim2real.sim import robot_deployment
from sim2real.sim.arm.rotations import quat_mul
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.registry import REGISTRY

NOMINAL = {"arm": 250.0, "quadruped": 500.0, "drone": 100.0}


def resting(robot: str, seconds: float = 0.5, heading: float = 0.6) -> list[Measurements]:
    """The robot's measurements at rest (after its task's reset), one per control step,
    turned to ``heading`` (rad) about the vertical: at a heading of exactly 0 a
    scalar-last quaternion reads as a level half-turn, which no data at rest can tell
    from a robot facing backwards (hardware/preflight.py)."""
    info = robot_deployment(robot)
    env = SimEnv(REGISTRY.get(info.task), action_mode=info.action_mode, seed=0)
    env.reset(seed=0)
    read = info.state_reader(env.task, env.model)
    out = []
    hold = np.zeros(env.action_space.shape)
    for _ in range(max(3, int(seconds / env.task.control_dt))):
        if robot != "drone":  # the drone rests on the ground with its motors off
            env.step(hold)
        out.append(read(env.data, env.engine.phys))
    env.close()
    if info.floating_base:
        turn = np.array([np.cos(heading / 2), 0.0, 0.0, np.sin(heading / 2)])
        for m in out:
            assert m.base_quat is not None
            m.base_quat = quat_mul(turn, m.base_quat)
    return out


def stream(ms: list[Measurements], faults: StreamFaults, rate: float, seconds: float = 1.0
           ) -> list[tuple[float, Measurements]]:
    """``ms`` sent through ``faults`` at ``rate`` Hz for ``seconds``: (arrival, measurement)."""
    out = []
    for k in range(int(seconds * rate)):
        now = k / rate
        out += [(now, m) for m in faults.due(now, ms[k % len(ms)])]
    return out


def status(items: list[Item], name: str) -> str:
    return next(i.status for i in items if i.name == name)


@pytest.fixture(scope="module", params=["arm", "quadruped", "drone"])
def robot_at_rest(request: pytest.FixtureRequest) -> tuple[str, list[Measurements]]:
    return request.param, resting(request.param)


def test_a_robot_at_rest_passes(robot_at_rest: tuple[str, list[Measurements]]) -> None:
    robot, ms = robot_at_rest
    items = judge(robot_deployment(robot), stream(ms, StreamFaults(), NOMINAL[robot]), NOMINAL[robot], 0.002)
    assert not verdict(items), format_table(items)
    assert all(i.status in ("PASS", "INFO") for i in items), format_table(items)


@pytest.mark.parametrize(("robot", "faults", "item", "hint"), [
    ("arm", StreamFaults(swap_joints=(1, 3)), "joint order (rest pose)", "swapped"),
    ("quadruped", StreamFaults(swap_joints=(1, 2)), "joint order (rest pose)", "swapped"),
    ("quadruped", StreamFaults(joint_units="deg"), "joint ranges", "degrees"),
    ("arm", StreamFaults(joint_units="deg"), "joint ranges", "degrees"),
    ("quadruped", StreamFaults(imu_flipped=True), "gravity (IMU)", "IMU"),
    ("drone", StreamFaults(imu_flipped=True), "gravity (IMU)", "IMU"),
    ("quadruped", StreamFaults(quat_order="xyzw"), "quaternion order", "scalar-last"),
    ("arm", StreamFaults(quat_order="xyzw"), "joint order (rest pose)", ""),  # no IMU: nothing to misread
    ("drone", StreamFaults(quat_order="xyzw"), "quaternion order", "scalar-last"),
])
def test_each_mismatch_is_caught(robot: str, faults: StreamFaults, item: str, hint: str) -> None:
    items = judge(robot_deployment(robot), stream(resting(robot), faults, NOMINAL[robot]), NOMINAL[robot], 0.002)
    if not hint:
        assert not verdict(items), format_table(items)
        return
    assert status(items, item) == "FAIL", format_table(items)
    assert hint in verdict(items)


def test_a_slow_stream_fails() -> None:
    """20 Hz where the Go2's 500 Hz is expected."""
    ms = resting("quadruped")
    items = judge(robot_deployment("quadruped"), stream(ms, StreamFaults(rate_hz=20.0), 500.0), 500.0, 0.002)
    assert status(items, "state rate") == "FAIL", format_table(items)
    fine = judge(robot_deployment("quadruped"), stream(ms, StreamFaults(), 500.0), 500.0, 0.002)
    assert status(fine, "state rate") == "PASS"


def test_a_slow_link_fails_and_an_unmeasurable_one_is_said() -> None:
    ms = resting("arm")
    samples = stream(ms, StreamFaults(), 250.0)
    assert status(judge(robot_deployment("arm"), samples, 250.0, 0.040), "link latency") == "FAIL"
    assert status(judge(robot_deployment("arm"), samples, 250.0, None), "link latency") == "INFO"


def test_missing_and_non_finite_streams_fail() -> None:
    ms = resting("drone")
    broken = [Measurements(**{**m.__dict__, "base_lin_vel": None}) for m in ms]
    items = judge(robot_deployment("drone"), stream(broken, StreamFaults(), 100.0), 100.0, None)
    assert status(items, "streams") == "FAIL"
    nan = [Measurements(**{**m.__dict__, "base_pos": np.full(3, np.nan)}) for m in ms]
    items = judge(robot_deployment("drone"), stream(nan, StreamFaults(), 100.0), 100.0, None)
    assert status(items, "streams") == "FAIL"
    assert "nothing arrived" in verdict(judge(robot_deployment("drone"), [], 100.0, None))
