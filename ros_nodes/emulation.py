"""A robot's protocol emulator in its own process, for ``--emulate`` runs and tests.

``sim2real hardware emulate`` runs in a child process (the simulated robot's real-time
loop then has its own interpreter, as a real robot has its own computer); its first
stderr line says how a backend reaches it, and its ``--json`` summary (episodes,
successes, frames per reason) comes back when it is stopped.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

from sim2real.ros_nodes.process_life import end_with_parent
from sim2real.sim.core.errors import ConfigError

START_TIMEOUT = 60.0
"""s for the emulator to load MuJoCo and bind its sockets."""


def die_with_parent() -> None:
    """In the child, before it runs: SIGTERM when the process that started it dies, however
    it dies (kill -9 included), so no emulated robot outlives its run (Linux; elsewhere
    the parent's clean exit stops it). Linux sends it when the starting *thread* ends:
    start an emulator from a thread that outlives it (the main thread, as every caller
    here does)."""
    end_with_parent(signal.SIGTERM)


class EmulatorProcess:
    """``with EmulatorProcess("quadruped", domain_id=7) as emu: emu.connect_options``."""

    def __init__(self, robot: str, domain_id: int, backend: str = "", seed: int = 0, task: str = "",
                 faults: Sequence[str] = (), mission: bool = True, cameras: Sequence[str] = (),
                 backend_options: dict[str, Any] | None = None) -> None:
        # A run's own robot: any free port, and a DDS robot's domain beside the graph's
        # (unique as the graph's is), never the real robot's defaults a second run shares.
        cmd = [sys.executable, "-m", "sim2real.cli", "hardware", "emulate", "--robot", robot, "--json",
               "--domain-id", str(domain_id), "--robot-domain-id", str((domain_id + 1) % 233), "--port", "0",
               "--seed", str(seed)]
        cmd += ["--backend", backend] if backend else []
        cmd += ["--task", task] if task else []
        cmd += [] if mission else ["--no-mission"]
        cmd += ["--cameras", ",".join(cameras)] if cameras else []
        cmd += ["--backend-options", json.dumps(backend_options)] if backend_options else []
        for fault in faults:
            cmd += ["--fault", fault]
        self.cmd = cmd
        self.proc: subprocess.Popen[str] | None = None
        self.connect_options: dict[str, Any] = {}
        self.stderr: list[str] = []
        self.summary: dict[str, Any] = {}

    def start(self) -> EmulatorProcess:
        self.proc = proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            preexec_fn=die_with_parent)
        assert proc.stderr is not None
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(proc.stderr.readline() if proc.stderr else ""),
                                  daemon=True)
        reader.start()
        reader.join(START_TIMEOUT)
        line = first[0] if first else ""
        if not line.startswith("connect: "):
            self.stop()
            raise ConfigError("--emulate", f"the emulator did not start: {line.strip() or 'no answer'} "
                                           f"{' '.join(self.stderr[-3:])}")
        self.connect_options = json.loads(line.removeprefix("connect: "))
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        return self

    def _drain_stderr(self) -> None:
        if self.proc is not None and self.proc.stderr is not None:
            for line in self.proc.stderr:
                self.stderr = [*self.stderr[-50:], line.rstrip()]

    def stop(self) -> dict[str, Any]:
        """SIGTERM, then its JSON summary (empty if it died)."""
        proc = self.proc
        if proc is None:
            return self.summary
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        out = proc.stdout.read() if proc.stdout is not None else ""
        self.proc = None
        try:
            self.summary = json.loads(out) if out.strip() else {}
        except json.JSONDecodeError:
            self.summary = {}
        return self.summary

    def __enter__(self) -> EmulatorProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
