"""Helpers of the console tests: a HIL-SERL stack behind the console (learner and actor
on loopback, the console as the actor's device and monitor) and the page in Chromium."""

from __future__ import annotations

import shutil
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "policies" / "hil"))

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                 "--no-first-run", "--disable-component-update", "--disable-sync"]


@dataclass
class HilStack:
    """A running HIL-SERL actor with the console as its device, a learner thread, the server."""

    env: Any
    target: Any
    learner: Any
    actor: Any
    server: Any
    stop: threading.Event
    threads: list[threading.Thread]

    def wait(self, predicate: Any, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.02)
        return predicate()


def start_hil_stack(tmp: Path, obs_mode: str = "state", labels: bool = False, steps: int = 100_000) -> HilStack:
    import torch
    from hil_helpers import free_port_pair, tiny_config

    from sim2real.console.server import ConsoleServer
    from sim2real.policies.hil.actor import Actor
    from sim2real.policies.hil.console import HilConsoleTarget
    from sim2real.policies.hil.env import HilEnv
    from sim2real.policies.hil.learner import Learner

    torch.set_num_threads(1)
    cfg, port = tiny_config(obs_mode), free_port_pair()
    cfg.env.task = "ArmReach"  # a task whose goal the operator can see and reach in seconds
    cfg.env.cameras = ("front",) if obs_mode == "pixels" else cfg.env.cameras
    env = HilEnv(cfg.env, seed=0)
    learner = Learner(cfg, env.observation_shapes(), env.action_dim, tmp / "run", port=port, log=lambda s: None)
    target = HilConsoleTarget(env, labels_dir=tmp / "labels" if labels else None)
    server = ConsoleServer(target, "test-token")
    server.start()
    actor = Actor(cfg, env, target, port=port, log=lambda s: None, monitor=target)
    stop = threading.Event()

    def learn() -> None:
        while not stop.is_set():
            learner.step()
            time.sleep(0.01)  # leave the actor and the browser CPU on 2 cores

    threads = [threading.Thread(target=learn, daemon=True), threading.Thread(target=actor.run, args=(steps, 1.0),
                                                                             daemon=True)]
    for t in threads:
        t.start()
    return HilStack(env, target, learner, actor, server, stop, threads)


def stop_hil_stack(stack: HilStack) -> None:
    stack.actor.request_stop()
    stack.stop.set()
    for t in stack.threads:
        t.join(timeout=20)
    stack.server.stop()
    stack.actor.close()
    stack.learner.server.close()
    stack.env.close()


def open_console(browser: Any, url: str) -> Any:
    # Playwright's wait_for_function evaluates strings, which the console's CSP forbids;
    # the test context lifts the CSP for it (test_csp_header checks the header itself).
    page = browser.new_context(bypass_csp=True, viewport={"width": 1400, "height": 1000}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.goto(url)
    page.wait_for_function("window.consoleStats && window.consoleStats.state !== null", timeout=15000)
    return page
