"""The emulated arm (robot side of the protocol) over real UDP on loopback: it applies
valid commands, holds on a command timeout and under e-stop, and counts and drops every
foreign, stale, replayed or wrong-mode command. Ticks are driven with explicit times, so
the tests need no sleeping and no timing assumptions."""

from __future__ import annotations

import json
import socket
import time

import numpy as np
import pytest

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.hardware.arm_client import ArmLink
from sim2real.hardware.arm_protocol import COMMAND_SIZES, Command, CommandMode, State, Status, encode
from sim2real.hardware.emulator.arm import ArmEmulator, ArmEmulatorConfig
from sim2real.hardware.emulator.arm_units import arm_command_units
from sim2real.policies.safety.spaces import command_space
from sim2real.sim.core.errors import ConfigError

FORWARD = np.r_[0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.04]  # 10 cm/s along +x, gripper 4 cm


@pytest.fixture
def rig():
    emulator = ArmEmulator(ArmEmulatorConfig(port=0, command_timeout=0.15))
    link = ArmLink(emulator.address, CommandMode.EE_DELTA)
    yield emulator, link
    link.close()
    emulator.close()


def handled(emulator: ArmEmulator) -> int:
    return sum(emulator.stats.accepted.values()) + emulator.stats.rejected_total


def deliver(emulator: ArmEmulator, before: int, now: float, timeout: float = 2.0) -> None:
    """Poll until the emulator has handled one more datagram than ``before``. Loopback
    delivery goes through softirq processing, which a loaded machine can defer past a
    single 50 ms poll (seen once with both cores busy)."""
    deadline = time.monotonic() + timeout
    while handled(emulator) <= before and time.monotonic() < deadline:
        emulator.poll(0.05, now=now)


def connect(emulator: ArmEmulator, link: ArmLink, now: float = 0.0) -> State:
    before = handled(emulator)
    link.hello()
    deliver(emulator, before, now)
    emulator.tick(now)
    return latest_state(link)


def latest_state(link: ArmLink, timeout: float = 2.0) -> State:
    """The newest state packet: wait up to ``timeout`` for the first, then drain."""
    newest, deadline = None, time.monotonic() + timeout
    while True:
        packet = link.receive(0.05)
        if packet is not None:
            if isinstance(packet.payload, State):
                newest = packet
        elif newest is not None or time.monotonic() > deadline:
            break
    assert newest is not None, "no state packet arrived"
    return newest.payload


def send(emulator: ArmEmulator, link: ArmLink, values: np.ndarray, now: float) -> None:
    before = handled(emulator)
    link.send_command(values, emulator.state_sequence)
    deliver(emulator, before, now)


@pytest.mark.parametrize("mode", ["ee_delta", "ee_impedance", "joint_torque"])
def test_wire_units_match_the_deployment_command_spaces(mode: str) -> None:
    """The emulator's own copy of the unit map (hardware may not import policies) agrees
    with policies/safety/spaces.py for random commands, including out-of-range ones."""
    from sim2real.hardware.arm_protocol import mode_from_name

    space, units = command_space("arm", mode), arm_command_units(mode_from_name(mode))
    rng = np.random.default_rng(0)
    for _ in range(50):
        action = rng.uniform(-1.3, 1.3, space.size)
        cmd = space.action_to_command(np.clip(action, -1, 1)) * rng.uniform(0.5, 1.5, space.size)
        np.testing.assert_allclose(units.to_action(cmd), space.command_to_action(cmd), atol=1e-12)
    np.testing.assert_allclose(units.hold(), space.hold)


def test_commands_move_the_setpoint_and_a_timeout_makes_the_robot_hold(rig) -> None:
    emulator, link = rig
    start = connect(emulator, link)
    assert start.status & Status.HOLDING  # nothing commanded yet
    t = 0.0
    for _ in range(10):
        t += emulator.control_dt
        send(emulator, link, FORWARD, now=t)
        emulator.tick(t)
    moving = latest_state(link)
    assert not moving.status & Status.HOLDING and moving.last_command_sequence == 10
    assert moving.ee_pos_desired[0] - start.ee_pos_desired[0] == pytest.approx(10 * 0.1 * emulator.control_dt, rel=0.05)
    # Commands stop: within the timeout the last one still applies, then the robot holds.
    emulator.tick(t + 0.1)
    assert not latest_state(link).status & Status.HOLDING
    held = []
    for k in range(1, 6):
        emulator.tick(t + 0.15 + k * emulator.control_dt)
        held.append(latest_state(link))
    assert all(s.status & Status.HOLDING and s.last_command_sequence == 0 for s in held)
    setpoints = np.array([s.ee_pos_desired for s in held])
    assert np.ptp(setpoints, axis=0).max() < 1e-12  # the setpoint no longer moves
    assert emulator.hold_ticks >= 6 and held[-1].joint_pos[7:].sum() == pytest.approx(0.04, abs=0.01)


def test_estop_holds_and_ignores_fresh_commands(rig) -> None:
    emulator, link = rig
    connect(emulator, link)
    emulator.estop = True
    setpoints = []
    for k in range(1, 5):
        send(emulator, link, FORWARD, now=k * 0.05)
        emulator.tick(k * 0.05)
        s = latest_state(link)
        assert s.status & Status.ESTOP and s.status & Status.HOLDING
        setpoints.append(s.ee_pos_desired)
    assert np.ptp(np.array(setpoints), axis=0).max() < 1e-12


def test_foreign_stale_replayed_and_malformed_commands_are_counted_and_never_applied(rig) -> None:
    emulator, link = rig
    connect(emulator, link)
    send(emulator, link, FORWARD, now=0.01)
    applied = emulator.command
    assert applied is not None and emulator.stats.accepted["command"] == 1
    robot = emulator.address

    stranger = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stranger.bind(("127.0.0.1", 0))
    good = Command(link.session, emulator.state_sequence, CommandMode.EE_DELTA, -FORWARD)
    cases = {
        "peer": (stranger, encode(good, 99, 0)),  # right session, wrong address
        "sequence": (link.sock, encode(good, 1, 0)),  # a replay of sequence 1
        "mode": (link.sock, encode(Command(link.session, emulator.state_sequence, CommandMode.JOINT_TORQUE,
                                           np.zeros(COMMAND_SIZES[CommandMode.JOINT_TORQUE])), 50, 0)),
        "crc": (link.sock, encode(good, 51, 0)[:-1] + b"\x00"),
        "length": (link.sock, b"S2RA"),
    }
    for reason, (sock, data) in cases.items():
        before = handled(emulator)
        sock.sendto(data, robot)
        deliver(emulator, before, now=0.02)
        assert emulator.stats.rejected.get(reason) == 1, (reason, emulator.stats.rejected)
    # A command computed from a state more than max_state_lag packets old.
    for k in range(5):
        emulator.tick(0.02 + k * 0.01)
    before = handled(emulator)
    link.sock.sendto(encode(Command(link.session, 1, CommandMode.EE_DELTA, -FORWARD), 60, 0), robot)
    deliver(emulator, before, now=0.08)
    assert emulator.stats.rejected.get("stale") == 1
    assert emulator.command is applied and emulator.stats.accepted["command"] == 1
    emulator.tick(0.09)
    assert latest_state(link).status & Status.COMMAND_REJECTED
    stranger.close()


def hello_from(emulator: ArmEmulator, link: ArmLink, now: float) -> None:
    before = handled(emulator)
    link.hello()
    deliver(emulator, before, now)


def test_another_host_cannot_take_control_while_the_holder_is_alive(rig) -> None:
    """Any host that said HELLO used to take the command stream over at once."""
    emulator, link = rig
    connect(emulator, link)
    send(emulator, link, FORWARD, now=0.01)
    intruder = ArmLink(emulator.address, CommandMode.EE_DELTA)
    try:
        hello_from(emulator, intruder, now=0.5)  # the holder was heard 0.49 s ago: refused
        assert emulator.stats.rejected.get("busy") == 1
        assert emulator.peer == link.local_address and emulator.command is not None
        send(emulator, intruder, FORWARD * 0, now=0.51)
        assert emulator.stats.rejected.get("peer") == 1 and emulator.stats.accepted["command"] == 1
        send(emulator, link, FORWARD, now=1.2)  # the holder's commands keep renewing control
        hello_from(emulator, intruder, now=2.1)
        assert emulator.stats.rejected.get("busy") == 2
        emulator.tick(2.15)
        assert isinstance(latest_state(link), State)  # the stream stays with the holder
        assert intruder.receive(0.1) is None
    finally:
        intruder.close()


def test_a_silent_holder_loses_control_after_the_lease_timeout(rig) -> None:
    emulator, link = rig
    connect(emulator, link)
    send(emulator, link, FORWARD, now=0.01)
    restarted = ArmLink(emulator.address, CommandMode.EE_DELTA)  # e.g. the driver restarted
    try:
        timeout = emulator.config.lease_timeout
        hello_from(emulator, restarted, now=0.01 + timeout + 0.05)
        assert emulator.peer == restarted.local_address
        assert emulator.command is None  # the old host's command is dropped: the robot holds
        send(emulator, restarted, FORWARD * 0, now=1.1)
        assert emulator.command is not None and emulator.stats.accepted["command"] == 2
        send(emulator, link, FORWARD, now=1.11)  # the old host is now foreign
        assert emulator.stats.rejected.get("peer") == 1
    finally:
        restarted.close()


def test_an_explicit_release_hands_control_over_at_once(rig) -> None:
    emulator, link = rig
    connect(emulator, link)
    send(emulator, link, FORWARD, now=0.01)
    before = handled(emulator)
    link.release()
    deliver(emulator, before, now=0.02)
    assert emulator.peer is None and emulator.command is None
    assert emulator.fresh_command(0.03) is None  # nobody in control: the robot holds
    other = ArmLink(emulator.address, CommandMode.EE_DELTA)
    try:
        hello_from(emulator, other, now=0.03)
        assert emulator.peer == other.local_address and not emulator.stats.rejected.get("busy")
        stranger = ArmLink(emulator.address, CommandMode.EE_DELTA)
        before = handled(emulator)
        stranger.release()  # only the holder may release
        deliver(emulator, before, now=0.04)
        stranger.sock.close()
        assert emulator.peer == other.local_address and emulator.stats.rejected.get("peer") == 1
    finally:
        other.close()


def test_closing_the_link_releases_control(rig) -> None:
    emulator, link = rig
    connect(emulator, link)
    before = handled(emulator)
    link.close()
    deliver(emulator, before, now=0.02)
    assert emulator.peer is None and emulator.stats.accepted.get("release") == 1


@pytest.mark.parametrize("field,value", [("command_timeout", 0.0), ("command_timeout", float("nan")),
                                         ("port", 70000), ("max_state_lag", -1)])
def test_bad_emulator_configuration_is_refused(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        ArmEmulator(ArmEmulatorConfig(**{"port": 0, field: value}))


def test_emulate_command_runs_in_real_time_and_reports_json(capsys) -> None:
    from sim2real.cli import main

    assert main(["hardware", "emulate", "--port", "0", "--duration", "0.5", "--json"]) == 0
    out = capsys.readouterr()
    summary = json.loads(out.out)
    assert "listening on 127.0.0.1:" in out.err
    assert summary["robot"] == "arm" and summary["ticks"] >= 5 and summary["hold_ticks"] == summary["ticks"]
