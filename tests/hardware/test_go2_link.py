"""The Go2's rt/lowcmd writer in a real-time process of its own (hardware/go2/link.py):
the newest command wins and requests apply in order (its loop on an injected clock, real
DDS on loopback), it keeps writing while the backend's lock is held (its watchdog then
damps the robot), it runs SCHED_FIFO where permitted, and a killed bridge process leaves
the robot damped instead of walking on its last command."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from go2_rig import EmulatorProcess, enable, wait_for

from sim2real.hardware.backend import Phase
from sim2real.hardware.go2.backend import Go2Backend
from sim2real.hardware.go2.codec import Codec
from sim2real.hardware.go2.dds import (
    SDK_QOS,
    DdsConfig,
    RawReader,
    RawWriter,
    close_participant,
    default_domain,
    participant,
)
from sim2real.hardware.go2.link import COMMAND, SHM_SIZE, WRITE_PERIOD, Link, encode_json
from sim2real.hardware.go2.protocol import lowstate_frame
from sim2real.hardware.go2.state_machine import GaitConfig
from sim2real.hardware.go2.types import LowCmd_, LowState_
from sim2real.hardware.realtime import probe
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.quadruped import constants as C

DAMPING = {"kp": [0.0], "kd": [8.0], "tau": [0.0]}


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def sleep_until(self, deadline: float) -> None:
        self.t = max(self.t, deadline)


class LinkOnLoopback:
    """A :class:`Link` on an injected clock with real DDS endpoints: the test plays the
    robot (lowstate frames in, lowcmd frames read back) and the backend (the socket)."""

    def __init__(self) -> None:
        self.dp = participant(DdsConfig.loopback(default_domain()))
        self.backend, link_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.clock = FakeClock()
        self.link = Link(GaitConfig(stand_seconds=0.1), RawWriter.create(self.dp, "rt/lowcmd", LowCmd_, SDK_QOS),
                         RawReader.create(self.dp, "rt/lowstate", LowState_, depth=16), link_end,
                         bytearray(SHM_SIZE), self.clock, self.clock.sleep_until)
        self.robot_state = RawWriter.create(self.dp, "rt/lowstate", LowState_)
        self.robot_cmd = RawReader.create(self.dp, "rt/lowcmd", LowCmd_, SDK_QOS, depth=64)
        self.cmd_codec, self.state_codec = Codec.of(LowCmd_), Codec.of(LowState_)
        self.link.schedule.start(self.clock.t)
        self.tick = 0

    def send_state(self) -> None:
        """One lowstate frame (the robot standing), read by the link as it would be."""
        self.tick += 2
        m = Measurements(joint_pos=C.DEFAULT_POSE.copy(), joint_vel=np.zeros(12), joint_effort=np.zeros(12),
                         base_quat=np.array([1.0, 0.0, 0.0, 0.0]), base_ang_vel=np.zeros(3))
        self.robot_state.write(lowstate_frame(self.state_codec, m, np.array([0.0, 0.0, 9.81]), np.zeros(4),
                                              self.tick))
        assert self.link.reader.wait(2.0)
        self.link.read_states()

    def period(self) -> dict:
        """One write: the clock at the deadline, a fresh state, then the frame the robot got."""
        self.send_state()
        self.clock.t = self.link.schedule.next
        self.link.period()
        assert self.robot_cmd.wait(2.0)
        frames = self.robot_cmd.take(64)
        msg = self.cmd_codec.decode(frames[-1])["motor_cmd"][:12]
        return {k: msg[k].astype(np.float64) for k in ("q", "kp", "kd")}

    def send(self, message: dict) -> None:
        self.backend.send(encode_json(message))

    def command(self, q: np.ndarray) -> None:
        self.backend.send(b"C" + COMMAND.pack(self.clock.t, *q))

    def events(self) -> list[dict]:
        out = []
        while select.select([self.backend], [], [], 0)[0]:
            out.append(json.loads(self.backend.recv(65536)[1:]))
        return out

    def close(self) -> None:
        self.backend.close()
        close_participant(self.dp)


def test_the_newest_command_wins_and_requests_apply_in_order() -> None:
    rig = LinkOnLoopback()
    try:
        rig.send({"op": "start", "seq": 1})
        assert rig.period()["kd"] == pytest.approx(np.full(12, 8.0))  # damping until stood up
        rig.send({"op": "stand", "seq": 2})
        for _ in range(60):  # 0.12 s of injected time: the 0.1 s stand-up is done
            rig.period()
        assert rig.link.machine.mode.value == "hold"
        a, b, c = (C.DEFAULT_POSE + d for d in (0.01, 0.02, 0.03))
        for q in (a, b, c):  # three commands arrive within one period
            rig.command(q)
        frame = rig.period()
        assert frame["q"] == pytest.approx(c) and frame["kp"] == pytest.approx(np.full(12, C.KP))
        rig.command(a)
        rig.send({"op": "damp", "seq": 3, "reason": "e-stop: test"})  # after the command: it wins
        frame = rig.period()
        assert frame["kp"] == pytest.approx(np.zeros(12)) and frame["kd"] == pytest.approx(np.full(12, 8.0))
        acks = [e for e in rig.events() if e["ev"] == "ack"]
        assert [e["seq"] for e in acks] == [1, 2, 3] and acks[-1]["mode"] == "damping"
        assert acks[-1]["reason"] == "e-stop: test"
    finally:
        rig.close()


def test_with_the_backend_gone_the_link_damps_writes_a_moment_and_ends() -> None:
    rig = LinkOnLoopback()
    try:
        rig.send({"op": "start", "seq": 1})
        rig.send({"op": "stand", "seq": 2})
        for _ in range(60):
            rig.period()
        rig.command(C.DEFAULT_POSE)
        assert rig.period()["kp"] == pytest.approx(np.full(12, C.KP))
        rig.backend.close()  # the backend's process ended
        frame = rig.period()
        assert frame["kd"] == pytest.approx(np.full(12, 8.0)) and frame["kp"] == pytest.approx(np.zeros(12))
        assert rig.link.stop_reason == "orphaned"
        for _ in range(60):  # 0.12 s: still damping, then the loop ends
            rig.period()
        assert rig.link.stop_reason == "the backend's process ended"
    finally:
        close_participant(rig.dp)


def test_the_writer_keeps_writing_while_the_backends_lock_is_held() -> None:
    """The regression: the 500 Hz loop took the backend's lock every period, so anything
    holding it (a slow command(), a state callback) stopped the writes. Now the writer is
    a process of its own: with the lock held for 0.3 s it keeps writing, and its watchdog
    damps the robot because no command could be handed over meanwhile."""
    emulator = EmulatorProcess()
    backend = Go2Backend("joint_pos", {"domain_id": default_domain(), "interface": "lo", "stand_seconds": 1.0})
    stop = threading.Event()

    def policy() -> None:
        while not stop.is_set():
            backend.command(C.DEFAULT_POSE + C.static_knee_offset())
            time.sleep(C.CONTROL_DT)

    commander = threading.Thread(target=policy, daemon=True)
    try:
        backend.connect(20.0)
        enable(backend)
        commander.start()
        time.sleep(0.2)
        pid = backend.detail()["writer_pid"]
        assert pid != os.getpid()
        if probe().realtime:  # where permitted, the writer runs SCHED_FIFO, and says so
            assert os.sched_getscheduler(pid) == os.SCHED_FIFO
            assert backend.detail()["realtime"]["policy"] == "SCHED_FIFO"
        before = backend.counters()["frames_sent"]
        with backend._lock:  # the lock a slow caller (command(), a state callback) would hold
            time.sleep(0.3)
            during = backend.counters()["frames_sent"] - before
        assert during >= 50, f"{during} frames written while the backend's lock was held 0.3 s"
        assert wait_for(lambda: backend.phase is Phase.CONNECTED, 2.0)
        assert "stale command" in backend.last_fault["reason"]
    finally:
        stop.set()
        commander.join(2.0)
        backend.close()
        emulator.stop()


BRIDGE = """
import sys, time
from sim2real.hardware.go2.backend import Go2Backend
from sim2real.sim.quadruped import constants as C
sys.path.insert(0, {rig!r})
from go2_rig import enable
backend = Go2Backend("joint_pos", {{"domain_id": {domain}, "interface": "lo", "stand_seconds": 1.0}})
backend.connect(30.0)
enable(backend)
print("walking", backend.detail()["writer_pid"], flush=True)
while True:
    backend.command(C.DEFAULT_POSE + C.static_knee_offset())
    time.sleep(C.CONTROL_DT)
"""


@pytest.mark.slow  # two processes start, stand the robot up, then one is killed
def test_a_killed_bridge_process_leaves_the_robot_damped() -> None:
    """The regression: with the writer a thread of the bridge, ``kill -9`` of the bridge
    left the robot applying the policy's last command for ever. The link process sees its
    backend's socket close, writes damping and exits."""
    emulator = EmulatorProcess()
    rig = os.path.dirname(__file__)
    bridge = subprocess.Popen([sys.executable, "-c", BRIDGE.format(rig=rig, domain=default_domain())],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert bridge.stdout is not None
        ready = select.select([bridge.stdout], [], [], 90)[0]
        line = bridge.stdout.readline() if ready else ""
        died = bridge.stderr.read() if bridge.poll() is not None and bridge.stderr is not None else ""
        assert line.startswith("walking"), line + died
        writer = int(line.split()[1])
        time.sleep(0.5)
        bridge.send_signal(signal.SIGKILL)
        bridge.wait(5)
        assert wait_for(lambda: not _running(writer), 2.0), "the writer outlived its backend"
        time.sleep(0.2)
    finally:
        if bridge.poll() is None:
            bridge.kill()
        summary = emulator.stop()
    assert summary["last_command"] == DAMPING, summary["last_command"]
    assert summary["gains_seen"].get(f"kp={C.KP:g} kd={C.KV:g}", 0) > 0  # it was walking under the policy


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_command_is_aged_from_the_backends_stamp() -> None:
    """Commands carry the backend's monotonic stamp; the link ages them from it (a command
    handed over late is no fresher for it)."""
    rig = LinkOnLoopback()
    try:
        rig.send({"op": "start", "seq": 1})
        rig.send({"op": "stand", "seq": 2})
        for _ in range(60):
            rig.period()
        rig.backend.send(b"C" + COMMAND.pack(rig.clock.t - 0.05, *C.DEFAULT_POSE))  # stamped 50 ms ago
        rig.period()
        assert rig.link.machine.command_time == pytest.approx(rig.clock.t - 0.05 - WRITE_PERIOD, abs=1e-9)
        for _ in range(6):  # 12 ms later it is 62 ms old: past the 60 ms timeout, damping
            rig.period()
        faults = [e for e in rig.events() if e["ev"] == "fault"]
        assert faults and "stale command" in faults[-1]["reason"]
    finally:
        rig.close()
