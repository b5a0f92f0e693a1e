"""The Go2 emulator in a process of its own, and helpers the Go2 link tests share."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

from sim2real.hardware.backend import HardwareError
from sim2real.hardware.go2.backend import Go2Backend
from sim2real.hardware.go2.dds import default_domain
from sim2real.ros_nodes.emulation import die_with_parent


class EmulatorProcess:
    """``python -m sim2real.hardware.emulator.go2_serve`` on this test's DDS domain."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sim2real.hardware.emulator.go2_serve", "--domain-id", str(default_domain()),
             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
            preexec_fn=die_with_parent)  # a test that fails before its `finally` leaves no robot running
        end, seen = time.monotonic() + 30, ""
        assert self.proc.stderr is not None
        while time.monotonic() < end:
            ready, _, _ = select.select([self.proc.stderr], [], [], 0.5)
            if ready:
                line = self.proc.stderr.readline()
                seen += line
                if line.strip() == "ready":
                    return
                if not line and self.proc.poll() is not None:
                    break
        self.proc.kill()
        raise RuntimeError(f"emulator did not start: {seen}")

    def stop(self) -> dict:
        """SIGTERM, then its summary ({} when it had already died)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=10)
        lines = out.strip().splitlines()
        return json.loads(lines[-1]) if lines else {}

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(5)


def wait_for(condition, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


def enable(backend: Go2Backend) -> None:
    """enable(), up to 3 times if a stale stream refused or aborted the stand-up: on this shared
    machine the emulator's process is sometimes descheduled for over 60 ms, and the backend
    then rightly refuses, or drops to damping (the fault tests check exactly that)."""
    for attempt in range(3):
        try:
            backend.enable()
            return
        except HardwareError as exc:
            if not ("stale lowstate" in str(exc) or "no fresh lowstate" in str(exc)) or attempt == 2:
                raise
            print(f"\nenable() retried after: {exc}")
