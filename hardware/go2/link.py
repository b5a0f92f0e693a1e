"""The Go2's 500 Hz link in a process of its own, at real-time priority.

Python's GIL makes a real-time *thread* wait for whichever thread holds the GIL, and in
the bridge's process that is the ROS executor, preempted by every competing process
(measured: the writer at p99 61 ms late beside one busy thread and 4 CPU-bound
competitors on 2 cores). So the loop that owns ``rt/lowcmd`` runs alone in a small
process (:func:`main`, through :mod:`.link_main`; started by :class:`~.link_client.LinkProcess`): SCHED_FIFO
(:data:`~sim2real.hardware.realtime.WRITER_PRIORITY`), its own CPU, memory locked,
automatic garbage collection off (:class:`~sim2real.hardware.realtime.QuietCollector`).

It runs the deployment state machine (:mod:`.state_machine`, the robot's only watchdog)
on its own reading of ``rt/lowstate`` (CRC-checked; the age of the newest valid frame,
the joints a lie-down starts from, the tick that shows a reboot) and writes a LowCmd_
every 2 ms on an absolute schedule. It never waits for the backend: each period it takes
whatever arrived on its socket without blocking (the newest command wins; requests such
as stand, safe, damp are applied in order) and writes.

Messages on the socket (``SOCK_SEQPACKET``, one message per packet): a command is
``b"C"`` + 13 little-endian doubles (the backend's monotonic time, then the 12 joint
targets; the machine ages it from that time, which every process on the host shares);
everything else is ``b"J"`` + JSON: to the link ``{"op": "start" | "stand" | "safe" |
"close_pose" | "damp" | "stop", "seq": n, "reason": ...}``, from it ``{"ev": "loaded" |
"ready" | "mode" | "fault" | "restart" | "ack", ...}`` (see :class:`Link`).

If the backend's process ends (the socket closes), the link puts the robot in damping,
writes that for :data:`ORPHAN_SECONDS` and exits: a bridge killed mid-walk damps the
robot 60 ms later (its commands stop) instead of leaving it the last command forever.

The counters and the timing record live in shared memory (:func:`shared_views`): the
link writes them, the backend reads them for its health.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import mmap
import os
import socket
import struct
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from sim2real.hardware.go2.codec import Codec
from sim2real.hardware.go2.protocol import fill_command, newest_state
from sim2real.hardware.go2.state_machine import DeploymentStateMachine, Mode
from sim2real.hardware.go2.types import LowCmd_, LowState_
from sim2real.hardware.timing import PeriodicSchedule, TimingRecord

COMMAND = struct.Struct("<13d")
TIMING_CAPACITY = 1 << 19
"""Ticks kept in shared memory (8 MiB): the last 17 minutes at 500 Hz (a benchmark's window)."""
COUNTERS = ("frames_sent", "write_failed", "loop_errors", "states_seen")
SHM_SIZE = 8 * (2 * TIMING_CAPACITY + 3 + len(COUNTERS))
WRITE_PERIOD = 0.002
"""Unitree's low-level examples write LowCmd_ every 2 ms."""
READ_GUARD = 0.0003
"""No state frame is processed (~0.1 ms each) in the last 0.3 ms before a write is due."""
ORPHAN_SECONDS = 0.1
"""s of damping frames written after the backend's process ended, before the link exits."""


def shared_views(buffer: Any) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """(timing arrays for :class:`~sim2real.hardware.timing.TimingRecord`, counters) over ``buffer``."""
    n = TIMING_CAPACITY
    late = np.ndarray((n,), np.float64, buffer, 0)
    stamps = np.ndarray((n,), np.float64, buffer, 8 * n)
    counts = np.ndarray((3,), np.int64, buffer, 16 * n)
    counters = np.ndarray((len(COUNTERS),), np.int64, buffer, 16 * n + 24)
    return (late, stamps, counts), counters


def encode_json(message: dict[str, Any]) -> bytes:
    return b"J" + json.dumps(message).encode()


def robot_restarted(previous_tick: int | None, tick: int) -> bool:
    """The robot's millisecond tick went back (not a wrap): it rebooted, in sport mode."""
    return previous_tick is not None and 50 < (previous_tick - tick) % 2**32 < 2**31


class Link:
    """The loop of the link process. ``writer``/``reader`` are the DDS endpoints of
    ``rt/lowcmd``/``rt/lowstate``; ``clock`` and ``sleep_until`` are injectable for tests."""

    def __init__(self, gait: Any, writer: Any, reader: Any, sock: socket.socket, shared: Any,
                 clock: Callable[[], float] = time.monotonic, sleep_until: Callable[[float], None] | None = None
                 ) -> None:
        self.machine = DeploymentStateMachine(gait)
        self.writer, self.reader, self.sock, self.clock = writer, reader, sock, clock
        timing, self.counters = shared_views(shared)
        self.schedule = PeriodicSchedule(WRITE_PERIOD, TimingRecord(WRITE_PERIOD, arrays=timing), clock, sleep_until)
        self.cmd_codec, self.state_codec = Codec.of(LowCmd_), Codec.of(LowState_)
        self.msg = self.cmd_codec.new()
        self.state_time = -np.inf
        self.q: np.ndarray | None = None
        self.tick_ms: int | None = None
        self.started = False
        self.orphan_until = np.inf
        self.stop_reason = ""
        """Why the loop ends ('' while it runs)."""
        self._mode = self.machine.mode

    # -- messages ------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> None:
        # the backend gone or not reading: the loop goes on regardless
        with contextlib.suppress(BlockingIOError, BrokenPipeError, ConnectionResetError):
            self.sock.send(encode_json(message), socket.MSG_DONTWAIT)

    def drain(self, now: float) -> None:
        """Everything the backend sent since the last period, in order, without waiting."""
        while True:
            try:
                data = self.sock.recv(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except (ConnectionResetError, OSError):
                data = b""
            if not data:
                self.orphaned(now)
                return
            if data[:1] == b"C" and len(data) == 1 + COMMAND.size:
                values = COMMAND.unpack_from(data, 1)
                self.machine.command(values[0], np.asarray(values[1:]))
            elif data[:1] == b"J":
                self.request(json.loads(data[1:]), now)

    def request(self, message: dict[str, Any], now: float) -> None:
        op, reason, m = message.get("op"), str(message.get("reason", "")), self.machine
        fresh = self.q is not None and now - self.state_time <= m.config.state_timeout
        if op == "start":
            self.started = True
        elif op == "stand" and self.q is not None:
            m.stand(now, self.q)
        elif op == "stand":
            m.damp("no lowstate to stand up from")
        elif op == "safe":  # lie down with its own targets from where it stands; else damping
            if self.q is not None and m.mode in (Mode.STANDING, Mode.HOLD, Mode.POLICY):
                m.lie_down(now, self.q, reason)
            elif m.mode is not Mode.LYING_DOWN:
                m.damp(reason)
        elif op == "close_pose" and fresh and self.q is not None:  # from any pose: lying, where sport mode takes it
            m.lie_down(now, self.q, reason)
        elif op == "damp":
            m.damp(reason)
        elif op == "stop":
            m.damp("closed")
            self.stop_reason = "stopped"
        self.report_mode()
        self.send({"ev": "ack", "seq": message.get("seq", 0), "mode": m.mode.value, "reason": m.reason})

    def report_mode(self) -> None:
        if self.machine.mode is not self._mode:
            self._mode = self.machine.mode
            self.send({"ev": "mode", "mode": self._mode.value, "reason": self.machine.reason})

    def orphaned(self, now: float) -> None:
        """The backend's process ended: damping, written for a moment, then the loop ends."""
        if self.stop_reason:
            return
        self.machine.damp("the backend's process ended")
        if not self.started:  # still in sport mode (the hand-over never finished): write nothing
            self.stop_reason = "the backend's process ended"
            return
        self.stop_reason = "orphaned"
        self.orphan_until = now + ORPHAN_SECONDS

    # -- state -----------------------------------------------------------------------
    def read_states(self) -> None:
        frames = self.reader.take(16)
        arrival = self.clock()
        state = newest_state(self.state_codec, frames, Counter())  # the backend counts the stream's faults
        if state is None:
            return
        self.counters[3] += 1
        if robot_restarted(self.tick_ms, state.tick):
            if self.machine.damp("the robot restarted"):
                self.fault(arrival, "the robot restarted")
            self.send({"ev": "restart"})
        self.q, self.tick_ms, self.state_time = state.q, state.tick, arrival

    # -- writing ---------------------------------------------------------------------
    def write(self, now: float) -> None:
        targets, fault = self.machine.step(now, now - self.state_time, self.q)
        if fault:
            self.fault(now, fault)
        fill_command(self.cmd_codec, self.msg, targets)
        try:
            self.writer.write(self.cmd_codec.encode(self.msg))
        except Exception:
            self.counters[1] += 1
            return
        self.counters[0] += 1

    def fault(self, now: float, reason: str) -> None:
        # The mode it now writes (damping) first: the backend leaves ENABLED on the fault
        # event, and a reader of its detail() then saw "policy" for one more message.
        self.report_mode()
        self.send({"ev": "fault", "reason": reason, "at": now, "command_age": now - self.machine.command_time,
                   "state_age": now - self.state_time})

    def period(self) -> None:
        """One pass of the loop: read states until the write is due, then drain the
        socket, write, and move to the next deadline."""
        left = self.schedule.remaining()
        if left > READ_GUARD:
            if self.reader.wait(left - READ_GUARD):
                self.read_states()
            return
        now = self.schedule.sleep()
        if now - self.state_time > 2 * WRITE_PERIOD:
            self.read_states()  # after a stall of this loop: frames waiting are not a stale stream
        self.drain(now)
        if self.started:
            try:
                self.write(now)
            except Exception as exc:  # the loop outlives any error, with the robot damped
                self.counters[2] += 1
                self.machine.damp(f"internal error: {type(exc).__name__}: {exc}")
        self.report_mode()
        self.schedule.tick(now)
        if self.stop_reason == "orphaned" and now >= self.orphan_until:
            self.stop_reason = "the backend's process ended"

    def run(self, collect: Callable[[float], None] = lambda slack: None) -> str:
        """Until stopped or orphaned; returns why it ended."""
        self.schedule.start()
        while self.stop_reason in ("", "orphaned"):
            self.period()
            collect(self.schedule.remaining())
        return self.stop_reason


def main(argv: list[str] | None = None) -> int:
    """The link process (``python -m sim2real.hardware.go2.link_main --socket FD --shm FD --config JSON``)."""
    parser = argparse.ArgumentParser(description="the Go2's rt/lowcmd writer (started by its backend)")
    parser.add_argument("--socket", type=int, required=True)
    parser.add_argument("--shm", type=int, required=True)
    parser.add_argument("--config", required=True, help="JSON: dds and gait settings")
    args = parser.parse_args(argv)
    sock = socket.socket(fileno=args.socket)
    shared = mmap.mmap(args.shm, SHM_SIZE)
    os.close(args.shm)
    from sim2real.hardware.go2.dds import SDK_QOS, DdsConfig, RawReader, RawWriter, close_participant, participant
    from sim2real.hardware.go2.state_machine import GaitConfig
    from sim2real.hardware.realtime import DDS_THREADS, WRITER_PRIORITY, QuietCollector, realtime_thread

    config = json.loads(args.config)
    peers = config["dds"]["peers"]
    dds = DdsConfig(**{**config["dds"], "peers": None if peers is None else tuple(peers)})
    dp = participant(dds)
    link = Link(GaitConfig(**config["gait"]), RawWriter.create(dp, "rt/lowcmd", LowCmd_, SDK_QOS),
                RawReader.create(dp, "rt/lowstate", LowState_, depth=16), sock, shared)
    link.send({"ev": "loaded"})
    with realtime_thread("go2 rt/lowcmd writer", WRITER_PRIORITY, helpers=DDS_THREADS) as status:
        link.send({"ev": "ready", "realtime": status.as_dict()})
        collector = QuietCollector()
        why = link.run(collector.collect)
        collector.close()
    close_participant(dp)
    if why != "stopped":
        sys.stderr.write(f"go2 link: {why}\n")
    return 0

