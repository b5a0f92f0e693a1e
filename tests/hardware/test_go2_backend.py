"""The Go2 backend: its deployment state machine, its base-velocity estimator against the
simulator's truth while trotting, and the whole link against the emulator in a process
of its own on loopback DDS (connect -> damping -> stand up -> policy -> faults).

What the real robot would do in the same faults (and what this backend makes of it):

* policy (or bridge executor) stops commanding: the firmware applies the last LowCmd_
  forever; the backend's loop writes damping once the newest command is 0.06 s old.
* emulator / robot link lost: the robot keeps the last command it received (it has no
  lowcmd timeout: on a real link loss a walking Go2 keeps its last joint targets); the
  backend damps within 0.06 s of the last state and stays damped.
* robot restarted: it boots in sport mode; the backend sees the tick go back, damps, and
  refuses enable() until connect() has released sport mode again.
* corrupted frames: the firmware drops bad-CRC commands (test_go2_protocol); the backend
  drops bad-CRC states, and a stream of only bad frames is a stale stream (damping).
* backend process killed: its writer, a process of its own, sees the backend gone, writes
  damping and exits (test_go2_link); the writer killed as well: the robot holds the last
  command. A hardware e-stop is the only cover for that.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from go2_rig import EmulatorProcess, enable, wait_for

from sim2real.hardware.backend import HardwareError, Phase, backend_class
from sim2real.hardware.emulator.base import EmulatorSettings, emulator_class
from sim2real.hardware.emulator.go2 import Go2Emulator, Go2EmulatorConfig
from sim2real.hardware.go2.backend import Go2Backend
from sim2real.hardware.go2.codec import Codec
from sim2real.hardware.go2.dds import default_domain
from sim2real.hardware.go2.protocol import fill_command, parse_state
from sim2real.hardware.go2.state_machine import DeploymentStateMachine, GaitConfig, Mode, MotorTargets
from sim2real.hardware.go2.types import LowCmd_, LowState_
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as C
from sim2real.sim.quadruped.estimator import LegOdometry
from sim2real.sim.quadruped.gait import TrotReference

CONTROL_PERIOD = C.CONTROL_DT
SLACK = 0.02
"""Scheduling allowance for the fault deadlines on a shared 2-core machine. The decision
itself is exact (the first 2 ms write after the age passes 3 control periods, typically
60-65 ms measured); a descheduled process adds whatever the scheduler takes."""


# -- the state machine alone ------------------------------------------------------------
def test_state_machine_modes_and_gains() -> None:
    sm = DeploymentStateMachine(GaitConfig(stand_seconds=1.0))
    out, fault = sm.step(0.0, 0.0)
    assert sm.mode is Mode.DAMPING and fault == ""
    assert (out.kp == 0).all() and (out.kd == 8.0).all() and (out.tau == 0).all()
    lying = np.tile([0.0, 1.3, -2.6], 4)
    sm.stand(10.0, lying)
    start, _ = sm.step(10.0, 0.0)
    mid, _ = sm.step(10.5, 0.0)
    assert np.allclose(start.q, lying) and np.allclose(mid.q, 0.5 * (lying + C.DEFAULT_POSE))
    assert (mid.kp == 60).all() and (mid.kd == 5).all()
    end, _ = sm.step(11.0, 0.0)
    assert np.allclose(end.q, C.DEFAULT_POSE) and sm.mode is Mode.HOLD
    sm.command(11.01, C.DEFAULT_POSE + 0.05)
    out, _ = sm.step(11.02, 0.0)
    assert sm.mode is Mode.POLICY and np.allclose(out.q, C.DEFAULT_POSE + 0.05)
    assert (out.kp == C.KP).all() and (out.kd == C.KV).all()  # the simulated servo's gains
    sm.command(11.03, np.full(12, 10.0))  # beyond the joint ranges: clipped
    out, _ = sm.step(11.04, 0.0)
    assert (out.q <= C.joint_ranges()[:, 1]).all()
    out, fault = sm.step(11.03 + 3 * CONTROL_PERIOD + 1e-3, 0.0)
    assert sm.mode is Mode.DAMPING and "stale command" in fault and (out.kp == 0).all()


def test_state_machine_stale_state_and_missing_first_command() -> None:
    sm = DeploymentStateMachine(GaitConfig(stand_seconds=0.1, first_command_timeout=0.5))
    sm.stand(0.0, C.DEFAULT_POSE)
    _, fault = sm.step(0.05, 3 * CONTROL_PERIOD + 1e-3)
    assert sm.mode is Mode.DAMPING and "stale lowstate" in fault
    sm.stand(1.0, C.DEFAULT_POSE)
    sm.step(1.2, 0.0)
    assert sm.mode is Mode.HOLD
    _, fault = sm.step(1.8, 0.0)
    assert sm.mode is Mode.DAMPING and "no command" in fault


# -- the estimator against the simulator ------------------------------------------------
def test_leg_odometry_tracks_the_simulated_trot() -> None:
    """The velocity the policy observes, estimated from lowstate alone while the emulated
    robot trots (the open-loop trot reference at 500 Hz state), against MuJoCo's truth."""
    emu = Go2Emulator(Go2EmulatorConfig(sport_mode=False))

    class Capture:
        frames: list[bytes] = []

        def write(self, frame: bytes) -> None:
            self.frames.append(frame)

    capture = Capture()
    setattr(emu, "lowstate", capture)  # noqa: B010 (the frames the robot would send, read back by the test)
    try:
        cmd_codec, state_codec = Codec.of(LowCmd_), Codec.of(LowState_)
        gait, odometry = TrotReference(1, 3.0, 0.08), LegOdometry()
        odometry.position[:] = emu.data.qpos[0:3]
        twist, msg, errors, heights, speeds = np.array([[0.4, 0.0, 0.0]]), cmd_codec.new(), [], [], []
        for k in range(2000):  # 4 s
            if k % 10 == 0:
                gait.advance(CONTROL_PERIOD, np.array([True]))
                targets = MotorTargets(q=C.DEFAULT_POSE + gait.joint_offsets(twist)[0], kp=np.full(12, C.KP),
                                       kd=np.full(12, C.KV))
                fill_command(cmd_codec, msg, targets)
                assert emu.handle(cmd_codec.encode(msg))
            emu.tick(k * 0.002)
            s = parse_state(state_codec, capture.frames[-1])
            v, p = odometry.update(0.002, s.quat, s.gyro, s.accel, s.q, s.dq, s.foot_force)
            if k >= 500:
                errors.append(np.linalg.norm(v[:2] - emu.data.qvel[0:2]))
                heights.append(p[2] - emu.data.qpos[2])
                speeds.append(np.linalg.norm(emu.data.qvel[0:2]))
        rms, height_rms = float(np.sqrt(np.mean(np.square(errors)))), float(np.sqrt(np.mean(np.square(heights))))
        print(f"\nleg odometry while trotting: xy velocity error rms {rms:.3f} m/s "
              f"(true speed mean {np.mean(speeds):.2f} m/s), height error rms {height_rms * 100:.1f} cm")
        assert np.mean(speeds) > 0.05  # it does move
        assert rms < 0.12
        assert height_rms < 0.02
    finally:
        emu.close()


# -- the whole link, emulator in its own process (go2_rig) -----------------------------------
def _height(backend: Go2Backend) -> float:
    m = backend.state()
    assert m is not None and m.base_pos is not None
    return float(m.base_pos[2])


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError):
        Go2Backend("joint_pos", {"stand_second": 1.0})  # a typo is refused, not ignored
    for network in ({"interface": "enp3s0"}, {}):  # tests never leave loopback: not a NIC, not `auto`
        with pytest.raises(HardwareError, match="tests run on loopback"):
            Go2Backend("joint_pos", network).connect(1.0)
    with pytest.raises(ConfigError):
        Go2Backend("joint_torque")


def test_registered_names() -> None:
    assert backend_class("unitree_go2") is Go2Backend
    assert emulator_class("unitree_go2") is Go2Emulator
    emu = Go2Emulator.launch(EmulatorSettings(domain_id=default_domain()))
    try:
        assert emu.connect_options() == {"domain_id": default_domain(), "interface": "lo"}
        mission = emu.mission()
        assert mission is not None and mission.cmd_vel is not None
    finally:
        emu.close()


def test_connect_stand_command_stale_estop() -> None:
    emulator = EmulatorProcess()
    backend = Go2Backend("joint_pos", {"domain_id": default_domain(), "interface": "lo"})
    received: list = []
    backend.on_state(received.append)
    try:
        with pytest.raises(HardwareError):
            backend.enable()  # not connected
        backend.connect(10.0)
        assert wait_for(lambda: len(received) > 10, 1.0)
        m = received[-1]
        assert set(m.stamps) == {"joint_states", "odom", "imu"} and backend.health().state_age < 0.05
        assert all(getattr(m, f) is not None for f in ("joint_pos", "joint_vel", "joint_effort", "base_pos",
                                                         "base_quat", "base_lin_vel", "base_ang_vel"))
        assert backend.phase is Phase.CONNECTED and backend.detail()["mode"] == "damping"
        # passive: the legs fold under the robot's weight
        assert wait_for(lambda: _height(backend) < 0.15, 3.0), _height(backend)
        backend.command(C.DEFAULT_POSE)  # ignored: not enabled
        assert backend.counters()["commands_ignored"] == 1
        started = time.monotonic()
        enable(backend)
        print(f"\nstand-up took {time.monotonic() - started:.2f} s")
        assert backend.phase is Phase.ENABLED
        # up from lying (sport mode laid it down): the body settles a moment after the targets
        assert wait_for(lambda: abs(_height(backend) - C.STANDING_HEIGHT) < 0.05, 1.0), _height(backend)
        # policy: targets reach the motors (hips spread 0.15 rad)
        target = C.DEFAULT_POSE + C.static_knee_offset() + np.tile([0.15, 0.0, 0.0], 4) * np.repeat([-1, 1, -1, 1], 3)
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            backend.command(target)
            time.sleep(CONTROL_PERIOD)
        m = backend.state()
        assert m is not None and m.joint_pos is not None and m.joint_vel is not None and m.joint_effort is not None
        # The motors servo to the policy's targets: each one's torque (tau_est) is its PD law
        # on the target sent. Not the positions alone: under the body's weight the spread
        # hips keep sliding outward past the target (0.18 rad after 1 s, 0.27 after 4 s).
        servoed_to = m.joint_pos + (m.joint_effort + C.KV * m.joint_vel) / C.KP
        assert np.allclose(servoed_to, target, atol=0.01), servoed_to - target
        assert np.all(np.sign(m.joint_pos[0::3]) == np.sign(target[0::3])), m.joint_pos[0::3]
        assert abs(_height(backend) - C.STANDING_HEIGHT) < 0.05
        # the IMU's accelerometer reaches the measurements (standing: gravity's reaction, up)
        assert m.specific_force is not None and 8.5 < m.specific_force[2] < 11.0, m.specific_force
        with pytest.raises(ValueError):
            backend.command(np.full(12, np.nan))
        with pytest.raises(ValueError):
            backend.command(np.zeros(11))
        # the policy stops: damping within 3 control periods of the last command
        assert wait_for(lambda: backend.phase is Phase.CONNECTED, 1.0)
        fault = backend.last_fault
        print(f"stale command -> damping at command age {fault['command_age'] * 1e3:.1f} ms")
        assert "stale command" in fault["reason"]
        assert fault["command_age"] <= 3 * CONTROL_PERIOD + SLACK
        assert backend.detail()["mode"] == "damping"
        # the writer's rate (loose: never a tight timing assertion on a shared machine)
        detail = backend.detail()
        print(f"lowcmd writer: {detail['write_rate_hz']} Hz, jitter {detail['write_jitter_ms']} ms")
        assert 400 <= detail["write_rate_hz"] <= 600
        # e-stop latches
        enable(backend)
        backend.estop("test")
        assert backend.phase is Phase.ESTOPPED and backend.detail()["mode"] == "damping"
        backend.command(target)
        assert backend.detail()["mode"] == "damping"
        with pytest.raises(HardwareError):
            backend.enable()
        time.sleep(0.1)
        assert backend.phase is Phase.ESTOPPED
        counters = backend.counters()
        assert counters["frames_sent"] > 1000 and counters["states_received"] > 1000
        assert not any(k.startswith("state_rejected") for k in counters)
    finally:
        backend.close()
        summary = emulator.stop()
    print(f"emulator: lowstate {summary['rate_hz']} Hz, tick jitter {summary['tick_jitter_ms']}, "
          f"overruns {summary['overruns']}, commands accepted {summary['commands_accepted']}")
    assert summary["commands_rejected"] == {} and summary["sport_mode"] == ""
    assert summary["last_command"] == {"kp": [0.0], "kd": [8.0], "tau": [0.0]}  # closed: damping is held
    assert summary["motion_switcher_calls"].get("1003", 0) >= 1
    # Lying in damping it only settled; the first joint moved 0.01 rad under stiffness after enable().
    assert summary["first_motion_at"] is not None and summary["first_motion_at"] > started
    print(f"enable -> first motion: {(summary['first_motion_at'] - started) * 1e3:.0f} ms")


def test_an_estop_during_the_stand_up_is_never_overridden() -> None:
    """enable() waits out the 1.5 s stand-up; an e-stop in it wins: enable() refuses with
    the e-stop's reason (the one rule of every backend, RobotBackend._still_connected), the
    robot is left e-stopped in damping, never ENABLED."""
    emulator = EmulatorProcess()
    backend = Go2Backend("joint_pos", {"domain_id": default_domain(), "interface": "lo"})
    outcome: list[BaseException | None] = []

    def enabling() -> None:
        try:
            backend.enable()
            outcome.append(None)
        except HardwareError as exc:
            outcome.append(exc)

    try:
        backend.connect(10.0)
        thread = threading.Thread(target=enabling)
        thread.start()
        assert wait_for(lambda: backend.detail()["mode"] == "standing", 5.0), backend.detail()["mode"]
        backend.estop("operator")
        thread.join(10.0)
        assert outcome and isinstance(outcome[0], HardwareError), outcome
        assert "cannot enable: estopped (operator)" in str(outcome[0])
        assert backend.phase is Phase.ESTOPPED and backend.detail()["mode"] == "damping"
    finally:
        backend.close()
        emulator.stop()


@pytest.mark.slow  # a real-time fault run; the default suite keeps the backend's main fault test
def test_link_lost_and_robot_restarted() -> None:
    emulator = EmulatorProcess()
    backend = Go2Backend("joint_pos", {"domain_id": default_domain(), "interface": "lo", "stand_seconds": 1.0})
    try:
        backend.connect(10.0)
        enable(backend)
        policy_runs = threading.Event()
        policy_runs.set()

        def policy() -> None:  # keeps commanding throughout: only the state goes stale
            while policy_runs.is_set():
                backend.command(C.DEFAULT_POSE + C.static_knee_offset())
                time.sleep(CONTROL_PERIOD)

        thread = threading.Thread(target=policy, daemon=True)
        thread.start()
        time.sleep(0.5)
        emulator.kill()  # the link drops (the robot would keep its last command)
        assert wait_for(lambda: backend.phase is Phase.CONNECTED, 1.0)
        policy_runs.clear()
        thread.join(1.0)
        fault = backend.last_fault
        print(f"\nlink lost -> damping at state age {fault['state_age'] * 1e3:.1f} ms")
        assert "stale lowstate" in fault["reason"] and fault["state_age"] <= 3 * CONTROL_PERIOD + SLACK
        backend.command(C.DEFAULT_POSE)  # ignored now
        emulator = EmulatorProcess()  # the robot reboots, in sport mode
        assert wait_for(lambda: backend.counters().get("robot_restarts", 0) == 1, 10.0)
        assert backend.phase is Phase.CONNECTED and backend.detail()["mode"] == "damping"
        with pytest.raises(HardwareError, match="restarted"):
            backend.enable()
        backend.connect(10.0)  # releases sport mode again
        enable(backend)
        assert backend.phase is Phase.ENABLED
    finally:
        backend.close()
        summary = emulator.stop()
    assert summary["motion_switcher_calls"].get("1003", 0) >= 1


@pytest.mark.slow  # a real-time fault run; the default suite keeps the backend's main fault test
def test_corrupted_state_frames_end_in_damping() -> None:
    """A link that corrupts every state frame (bad CRC): each is dropped and counted, and a
    stream of nothing valid is a stale stream."""
    emulator = EmulatorProcess("--corrupt-state-after", "4.0")  # simulated s: connect + stand take ~2.5
    backend = Go2Backend("joint_pos", {"domain_id": default_domain(), "interface": "lo", "stand_seconds": 1.0})
    try:
        backend.connect(10.0)
        enable(backend)
        stop = threading.Event()

        def policy() -> None:
            while not stop.is_set():
                backend.command(C.DEFAULT_POSE + C.static_knee_offset())
                time.sleep(CONTROL_PERIOD)

        thread = threading.Thread(target=policy, daemon=True)
        thread.start()
        try:
            assert wait_for(lambda: backend.phase is Phase.CONNECTED, 10.0)
        finally:
            stop.set()
            thread.join(1.0)
        fault = backend.last_fault
        print(f"\ncorrupted states -> damping at state age {fault['state_age'] * 1e3:.1f} ms")
        assert "stale lowstate" in fault["reason"] and fault["state_age"] <= 3 * CONTROL_PERIOD + SLACK
        assert backend.counters()["state_rejected_crc"] > 0
    finally:
        backend.close()
        emulator.stop()
