"""The backend's end of the Go2's link process (:mod:`.link`): start it, send it commands
and requests, hear what it decided, read its counters and timing from shared memory.

Nothing here waits for the link inside the backend's lock: a command is one
non-blocking send (dropped and counted if the link is not reading: its stale-command
watchdog then damps the robot), and a request waits for its acknowledgement only when
asked to, outside any lock.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np

from sim2real.hardware.go2.dds import DdsConfig
from sim2real.hardware.go2.link import COMMAND, SHM_SIZE, WRITE_PERIOD, encode_json, shared_views
from sim2real.hardware.go2.state_machine import GaitConfig
from sim2real.hardware.timing import TimingRecord

EventHandler = Callable[[dict[str, Any]], None]


class LinkProcess:
    """The link process (:mod:`.link_main`) for one connection. ``on_event`` gets the
    link's ``fault`` and ``restart`` events, and ``{"ev": "exit", "code": ...}`` when the
    process ends without being stopped (from the listener thread)."""

    def __init__(self, dds: DdsConfig, gait: GaitConfig, on_event: EventHandler) -> None:
        self.on_event = on_event
        self.sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        memfd = os.memfd_create("go2-link")
        try:
            os.ftruncate(memfd, SHM_SIZE)
            self.shm = mmap.mmap(memfd, SHM_SIZE)
            config = json.dumps({"dds": asdict(dds), "gait": asdict(gait)})
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "sim2real.hardware.go2.link_main", "--socket", str(child.fileno()),
                 "--shm", str(memfd), "--config", config],
                pass_fds=(child.fileno(), memfd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        finally:
            child.close()
            os.close(memfd)
        timing, self._counters = shared_views(self.shm)
        self.timing = TimingRecord(WRITE_PERIOD, arrays=timing)
        self.mode, self.reason = "damping", "connected"
        """The state machine's mode and why, as the link last reported them."""
        self.realtime: dict[str, Any] = {}
        """The link's :class:`~sim2real.hardware.realtime.RealtimeStatus` (once ready)."""
        self.loaded, self.ready = threading.Event(), threading.Event()
        self._changed = threading.Condition()
        self._seq = self._acked = 0
        self._stopping = False
        self._listener = threading.Thread(target=self._listen, name="go2-link-events", daemon=True)
        self._listener.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def counters(self) -> dict[str, int]:
        from sim2real.hardware.go2.link import COUNTERS

        values = self._counters.copy()
        return {name: int(v) for name, v in zip(COUNTERS, values, strict=True)}

    # -- to the link -----------------------------------------------------------------
    def command(self, stamp: float, q: np.ndarray) -> bool:
        """Send joint targets (False: the link is not reading, the command is dropped)."""
        try:
            self.sock.send(b"C" + COMMAND.pack(stamp, *q), socket.MSG_DONTWAIT)
        except (BlockingIOError, BrokenPipeError, ConnectionResetError, OSError):
            return False
        return True

    def request(self, op: str, wait: float = 0.0, **fields: Any) -> bool:
        """Send a request; with ``wait`` > 0 block up to that long for the link to have
        applied it. True when sent (and applied, if waited for)."""
        with self._changed:
            self._seq += 1
            seq = self._seq
        try:
            self.sock.send(encode_json({"op": op, "seq": seq, **fields}), socket.MSG_DONTWAIT)
        except (BlockingIOError, BrokenPipeError, ConnectionResetError, OSError):
            return False
        if wait <= 0:
            return True
        with self._changed:
            return self._changed.wait_for(lambda: self._acked >= seq or not self.alive(), wait) and self._acked >= seq

    def wait_mode(self, done: Callable[[str], bool], timeout: float) -> bool:
        """Block until ``done(mode)`` or ``timeout`` s."""
        with self._changed:
            return self._changed.wait_for(lambda: done(self.mode) or not self.alive(), timeout) and done(self.mode)

    def halt(self, timeout: float) -> bool:
        """Ask the link to end (it damps first) and wait until it has stopped writing
        (its process then closes its DDS entities and exits: :meth:`stop`)."""
        self._stopping = True
        return self.alive() and self.request("stop", wait=timeout)

    def stop(self, timeout: float = 1.0) -> None:
        """End the link (:meth:`halt`, if not yet) and make sure its process has exited."""
        if not self._stopping:
            self.halt(timeout)
        if self.alive():
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self.sock.close()
        self._listener.join(timeout)
        with contextlib.suppress(BufferError):
            self.shm.close()  # numpy views still held elsewhere keep it until they go

    # -- from the link ---------------------------------------------------------------
    def _listen(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                break
            message = json.loads(data[1:])
            event = message.get("ev")
            if event in ("mode", "ack"):
                with self._changed:
                    self.mode, self.reason = message["mode"], message["reason"]
                    self._acked = max(self._acked, int(message.get("seq", 0)))
                    self._changed.notify_all()
            elif event == "loaded":
                self.loaded.set()
            elif event == "ready":
                self.realtime = message.get("realtime", {})
                self.ready.set()
            else:
                self.on_event(message)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(1.0)
        with self._changed:
            self._changed.notify_all()
        if not self._stopping:
            self.on_event({"ev": "exit", "code": self.proc.poll()})
