"""One row of the demo: a ``sim2real deploy`` process, its nodes' logs digested.

Each robot's graph runs in a process of its own, exactly as a user would start it (the
report gives the command). The demo's own process holds the bags it read and the
frames it rendered; a graph run inside it paid for that heap in the garbage
collector's full passes, measured at 74, 285 and 656 ms as the heap grew from 57k to
181k objects over one demo, in the middle of 20-50 Hz control loops. The process's
stderr (every node's log) goes through :class:`~.node_logs.NodeLogDigest`; its
``--json`` summary comes back on stdout.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sim2real.commands.output import finite
from sim2real.demo.node_logs import NodeLogDigest
from sim2real.demo.terminal import Terminal

STARTUP_ALLOWANCE = 180.0
"""s a run may take beyond its window: imports, an emulator's start, discovery, shutdown
(deploy's own start-up limit is 90 s)."""


@dataclass
class DeploySpec:
    label: str
    robot: str
    duration: float
    seed: int
    domain_id: int
    emulate: bool = False
    policy: str = ""
    record: Path | None = None
    recorder_topics: list[str] = field(default_factory=list)
    faults: tuple[str, ...] = ()

    def command(self) -> list[str]:
        """The ``sim2real deploy`` arguments of this run (as a user would type them)."""
        cmd = ["sim2real", "deploy", "--robot", self.robot]
        cmd += ["--backend", "real", "--emulate"] if self.emulate else []
        cmd += ["--policy", self.policy] if self.policy else []
        cmd += ["--duration", f"{self.duration:g}", "--seed", str(self.seed), "--domain-id", str(self.domain_id)]
        if self.record is not None:
            cmd += ["--record", str(self.record), "--set", f"recorder.topics=[{', '.join(self.recorder_topics)}]"]
        for fault in self.faults:
            cmd += ["--fault", fault]
        return [*cmd, "--json"]


@dataclass
class DeployResult:
    spec: DeploySpec
    summary: dict[str, Any]
    """deploy's JSON summary (non-finite figures as ``None``); empty when the run failed."""
    logs: NodeLogDigest
    returncode: int
    error: str = ""
    """Why there is no summary (the process's last words), empty when there is one."""


def run_deploy(spec: DeploySpec, terminal: Terminal, env: dict[str, str]) -> DeployResult:
    """Run ``spec`` to its end; the nodes' first line of each cause is shown on ``terminal``
    as it comes, prefixed with the run's label."""
    logs = NodeLogDigest(echo=lambda line: terminal.log(f"{spec.label}: {line}"))
    cmd = [sys.executable, "-m", "sim2real", *spec.command()[1:]]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    printed: list[str] = []
    readers = [threading.Thread(target=_read_lines, args=(proc.stderr, logs.feed), daemon=True),
               threading.Thread(target=_read_lines, args=(proc.stdout, printed.append), daemon=True)]
    for reader in readers:
        reader.start()
    try:
        proc.wait(timeout=spec.duration + STARTUP_ALLOWANCE)
    except subprocess.TimeoutExpired:
        _stop(proc)
        logs.feed(f"sim2real demo: the run did not end within {spec.duration + STARTUP_ALLOWANCE:.0f} s; stopped")
    except KeyboardInterrupt:
        _stop(proc)  # the run was asked to stop too (same terminal): let it shut its robot down
        raise
    for reader in readers:
        reader.join(timeout=10)
    logs.close()
    out = "".join(printed)
    try:
        summary = finite(json.loads(out)) if out.strip() else {}
    except json.JSONDecodeError:
        summary = {}
    if proc.returncode == 0 and summary:
        return DeployResult(spec, summary, logs, 0)
    last = next((ln for ln in reversed(logs.tail) if "error" in ln.lower()), logs.tail[-1] if logs.tail else "")
    return DeployResult(spec, summary, logs, proc.returncode or 1,
                        error=last.strip() or f"sim2real deploy exited with code {proc.returncode}")


def _read_lines(stream: Any, take: Callable[[str], Any]) -> None:
    for line in stream:
        take(line)


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGINT (deploy then ends its window, shuts the graph down and prints its summary),
    then SIGKILL after 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
