"""The correction console's figures: a key press in the page to the command applied at the
robot (after the safety filter), the live views' frame rate with two cameras, and the
CPU share of the console's process.

The arm's graph runs one process per node (sim bridge with ``front`` and ``wrist`` at
320x240 and 15 Hz, classical policy, safety filter, console with no takeover blend).
Debian's Chromium opens the page and holds the takeover key; each press of ``W`` or ``S``
(in turn, so the hand goes back and forth) is
timed from the key event in the page (its ``timeStamp`` on the epoch clock, corrected
by the page's measured clock offset) to the first ``command`` message from the safety
filter that moves the hand that way (the robot idle before, its command 0). Playwright's
own time to inject the key (a round trip through its driver process) comes before the
event and is reported apart.
The reference, measured in the same run while the page watches (the same load): the
same command sent straight from a Python WebSocket client (no browser, no key event) to
the same first filtered command.

The dead man: a WebSocket client commands +x at the page's 25 Hz until the robot moves,
then falls silent (a frozen page, a dropped network); each trial is timed from its last
command to the first filtered command at rest, idle and then beside ``--load``
CPU-bound competitors (:mod:`sim2real.bench.load`). Its floor is the console's
``timeout`` (0.15 s); what comes on top is the console's detection and the path through
the filter. The held key (``--hold-seconds``): the same client streams at 25 Hz
without a pause beside the competitors (the direction reversed every 2 s, to stay
inside the workspace), and every hold the console began before the stream's last
command is a false one: a person still holding the key whose robot stopped (the dead
man's hold after the last command is counted apart). The client stands for the operator's
own computer, so it runs at real-time priority here (the competitors load the robot's);
its send gaps longer than the timeout are still counted apart.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import concurrent.futures
import json
import math
import os
import re
import threading
import time
from typing import Any

import numpy as np

from sim2real.bench.load import competitors, default_load
from sim2real.commands.output import add_json_flag, emit_json, status_line, stdout

HELP = "correction console: key press -> filtered command latency (p50/p99), fps with 2 cameras, CPU share"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--presses", type=int, default=1000, help="timed presses of the W key")
    parser.add_argument("--reference-presses", type=int, default=300, help="timed WebSocket-only commands")
    parser.add_argument("--fps-seconds", type=float, default=10.0, help="seconds the frame rate is counted")
    parser.add_argument("--dead-man", type=int, default=30, help="timed dead-man trials, idle and again loaded")
    parser.add_argument("--dead-man-timeout", type=float, default=None,
                        help="the console's timeout (s) for this run (default: its own, 0.15)")
    parser.add_argument("--hold-seconds", type=float, default=0.0,
                        help="seconds of a steadily held key beside the competitors, counting false holds "
                             "(0: skipped)")
    parser.add_argument("--load", type=int, default=default_load(),
                        help="CPU-bound competitors beside the loaded dead-man trials (default: 2 per core)")
    add_json_flag(parser)


class CommandProbe:
    """Subscribes the safety filter's ``command`` (what the robot obeys) in this process."""

    def __init__(self, domain: int) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from std_msgs.msg import Float64MultiArray

        from sim2real.ros_nodes.qos import command_qos

        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node("console_bench_probe", context=self.context)
        self.vx: list[tuple[float, float]] = []
        """(epoch s, vx) of each filtered command."""
        self.lock = threading.Lock()
        self.node.create_subscription(Float64MultiArray, "command", self._on_command, command_qos())
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while self.context.ok():
            self.executor.spin_once(timeout_sec=0.05)

    def _on_command(self, msg: Any) -> None:
        with self.lock:
            self.vx.append((time.time(), float(msg.data[0]) if len(msg.data) else 0.0))

    def first_after(self, t0: float, moving: bool, timeout: float = 1.0, sign: float = 1.0) -> float | None:
        """Seconds from ``t0`` to the first command moving along ``sign`` x, or at rest, after it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                start = bisect.bisect_left(self.vx, (t0, -math.inf))
                recent = self.vx[start:]
            hits = [t for t, vx in recent if ((sign * vx > 1e-3) if moving else (abs(vx) <= 1e-3))]
            if hits:
                return min(hits) - t0
            time.sleep(0.0005)
        return None

    def close(self) -> None:
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
        self._thread.join(timeout=5)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _console_url(graph: Any, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        graph.raise_if_dead()
        match = re.search(r"console: (http\S+)", graph.log("console"))
        if match:
            return match.group(1)
        time.sleep(0.2)
    raise RuntimeError("the console did not print its URL")


def _page_clock_offset(page: Any) -> float:
    """Seconds the page's epoch clock (timeOrigin + now) runs ahead of the machine's, from
    the page's own ping over its WebSocket (the server answers with its clock: NTP's rule,
    error at most half the link's round trip)."""
    page.wait_for_function("window.consoleStats.link !== undefined", timeout=10000)
    return -page.evaluate("window.consoleStats.link.offsetMs") / 1e3


def _time_presses(page: Any, probe: CommandProbe, presses: int, progress: Any) -> dict[str, Any]:
    latencies, injections, in_page, links, lost = [], [], [], [], 0
    rng = np.random.default_rng(0)
    offset = _page_clock_offset(page)
    for i in range(presses):
        if i % 20 == 0:
            offset = _page_clock_offset(page)
            links.append(page.evaluate("window.consoleStats.link.rttMs") / 1e3)
        # W and S in turn: the hand goes back and forth and never rests on the workspace box.
        code, sign = ("KeyW", 1.0) if i % 2 == 0 else ("KeyS", -1.0)
        t0 = time.time()
        page.keyboard.down(code)
        injections.append(time.time() - t0)
        key = page.evaluate("window.consoleStats.lastKeyDown")
        pressed = key["epochMs"] / 1e3 - offset
        moved = probe.first_after(pressed, moving=True, sign=sign)
        if key.get("sentEpochMs"):
            in_page.append((key["sentEpochMs"] - key["epochMs"]) / 1e3)
        page.wait_for_timeout(int(rng.integers(20, 40)))
        page.keyboard.up(code)
        rest = probe.first_after(time.time(), moving=False)
        if moved is None or rest is None:
            lost += 1
        else:
            latencies.append(moved)
        page.wait_for_timeout(int(rng.integers(30, 60)))
        if progress is not None and i % 50 == 0:
            progress(f"press {i}/{presses}")
    return {"latencies": latencies, "injections": injections, "in_page": in_page, "links": links, "lost": lost}


async def _drain(ws: Any) -> None:
    while True:
        await ws.recv()


def _ws_url(url: str) -> str:
    token = url.split("token=", 1)[1]
    return url.split("/?", 1)[0].replace("http://", "ws://") + f"/ws?token={token}"


def _in_own_loop(coroutine: Any, realtime: bool = False) -> Any:
    # Playwright's sync API keeps an event loop on this thread: the client gets its own.
    def client() -> Any:
        if not realtime:
            return asyncio.run(coroutine)
        from sim2real.hardware.realtime import OPERATOR_PRIORITY, realtime_thread

        with realtime_thread("bench: the operator's page", OPERATOR_PRIORITY, cpu=None):
            return asyncio.run(coroutine)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(client).result()


def _time_dead_man(url: str, probe: CommandProbe, trials: int) -> dict[str, Any]:
    """Seconds from the last of a steady 25 Hz stream of +x (or -x) commands to the first
    filtered command at rest, per trial; trials whose robot never moved or never came
    to rest are counted as lost."""
    import websockets

    async def run() -> dict[str, Any]:
        out: dict[str, Any] = {"seconds": [], "lost": 0}
        async with websockets.connect(_ws_url(url)) as ws:
            drain = asyncio.create_task(_drain(ws))
            await ws.send(json.dumps({"type": "takeover"}))
            await asyncio.sleep(0.3)
            for i in range(trials):
                sign = 1.0 if i % 2 == 0 else -1.0
                start, last = time.time(), 0.0
                for _ in range(8):  # 0.32 s of the page's stream: the robot moves within it
                    await ws.send(json.dumps({"type": "command", "axes": [sign, 0, 0, 0, 0, 0, 0]}))
                    last = time.time()
                    await asyncio.sleep(0.04)
                moved = await asyncio.to_thread(probe.first_after, start, True, 0.5, sign)
                rest = await asyncio.to_thread(probe.first_after, last, False, 2.0)
                if moved is None or rest is None:
                    out["lost"] += 1
                else:
                    out["seconds"].append(rest)
                await asyncio.sleep(0.2)
            await ws.send(json.dumps({"type": "giveback"}))
            await ws.send(json.dumps({"type": "release"}))
            drain.cancel()
        return out

    return _in_own_loop(run())


def _hold_key(url: str, seconds: float, timeout_s: float) -> dict[str, Any]:
    """A key held for ``seconds``: a steady 25 Hz stream. A hold the console began before
    the stream's last command (its state messages say when each began) is a false one;
    the dead man's hold after the last command is the expected one, counted apart."""
    import websockets

    async def run() -> dict[str, Any]:
        counts: dict[str, int] = {}
        holds: list[dict[str, Any]] = []  # each new hold as heard: when it began (Unix s), why

        async def watch(ws: Any) -> None:
            while True:
                message = await ws.recv()
                data = json.loads(message) if isinstance(message, str) else {}
                if data.get("type") != "state":
                    continue
                control = data["control"]
                if counts and control["counts"].get("holds", 0) > counts.get("holds", 0):
                    # Already commanding again when heard: it began (and ended) within the stream.
                    held = control["mode"] == "hold"
                    holds.append({"began": control["since"] if held else None, "heard": round(time.time(), 3),
                                  "reason": control.get("hold_reason", "") if held else "(over when heard)"})
                counts.update(control["counts"])

        async with websockets.connect(_ws_url(url)) as ws:
            watching = asyncio.create_task(watch(ws))
            await ws.send(json.dumps({"type": "takeover"}))
            await asyncio.sleep(1.0)  # the takeover done, the counts heard
            before, gaps, sent = len(holds), [], 0
            start = last = time.monotonic()
            while last - start < seconds:
                sign = 1.0 if int((last - start) / 2.0) % 2 == 0 else -1.0
                await ws.send(json.dumps({"type": "command", "axes": [sign, 0, 0, 0, 0, 0, 0]}))
                now = time.monotonic()
                if sent:
                    gaps.append(now - last)
                last, sent = now, sent + 1
                await asyncio.sleep(max(0.0, 0.04 - (time.monotonic() - now)))
            last_sent = time.time() - (time.monotonic() - last)
            await asyncio.sleep(1.5)  # the dead man's hold after the stream, and its state message
            during = holds[before:]
            await ws.send(json.dumps({"type": "giveback"}))
            await ws.send(json.dumps({"type": "release"}))
            watching.cancel()
        false = [h for h in during if h["began"] is None or h["began"] < last_sent]
        g = np.asarray(gaps)
        return {"seconds": round(seconds, 1), "commands": sent, "false_holds": len(false),
                "false_hold_details": false, "holds_after_the_last_command": len(during) - len(false),
                "client_gaps_over_timeout": int(np.sum(g > timeout_s)),
                "client_gap_max_ms": round(float(g.max()) * 1e3, 1) if g.size else None}

    # The page runs on the operator's own computer, not among the robot computer's
    # competitors: the client is real-time so that its gaps are not counted as the console's.
    return _in_own_loop(run(), realtime=True)


def _time_websocket(url: str, probe: CommandProbe, count: int) -> list[float]:
    """The reference: a Python WebSocket client takes over and commands +x directly."""
    import websockets

    ws_url = _ws_url(url)

    async def run() -> list[float]:
        out: list[float] = []
        async with websockets.connect(ws_url) as ws:
            drain = asyncio.create_task(_drain(ws))  # state and frames keep coming: read them as a page does
            await ws.send(json.dumps({"type": "takeover"}))
            await asyncio.sleep(0.3)
            for i in range(count):
                sign = 1.0 if i % 2 == 0 else -1.0
                t0 = time.time()
                await ws.send(json.dumps({"type": "command", "axes": [sign, 0, 0, 0, 0, 0, 0]}))
                moved = await asyncio.to_thread(probe.first_after, t0, True, 1.0, sign)
                for _ in range(3):  # keep commanding zero until the robot is at rest again
                    await ws.send(json.dumps({"type": "command", "axes": [0.0, 0, 0, 0, 0, 0, 0]}))
                    await asyncio.sleep(0.02)
                await asyncio.to_thread(probe.first_after, time.time() - 0.06, False)
                await asyncio.sleep(0.03)
                if moved is not None:
                    out.append(moved)
            await ws.send(json.dumps({"type": "giveback"}))
            await ws.send(json.dumps({"type": "release"}))
            drain.cancel()
        return out

    return _in_own_loop(run())


def run(args: argparse.Namespace) -> int:
    from playwright.sync_api import sync_playwright

    from sim2real.ros_nodes.base import percentiles_ms
    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters
    from sim2real.ros_nodes.graph import ProcessGraph
    from sim2real.ros_nodes.settings import ConsoleSettings

    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    domain = int(os.environ.get("ROS_DOMAIN_ID", 1 + os.getpid() % 200))
    timeout_s = ConsoleSettings().timeout if args.dead_man_timeout is None else args.dead_man_timeout
    opts = DeployOptions(robot="arm", policy="classical", domain_id=domain, console=True, console_port=0,
                         overrides={"console": {"blend_seconds": 0.0, "timeout": timeout_s}})
    params, nodes = graph_parameters(opts)
    graph = ProcessGraph(params, nodes, domain)
    probe = CommandProbe(domain)
    graph.start()
    out: dict[str, Any] = {"robot": "arm", "cameras": ["front", "wrist"], "frame_size": [320, 240]}
    try:
        url = _console_url(graph)
        with status_line("console bench") as show, sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            page = browser.new_context(bypass_csp=True).new_page()
            page.goto(url)
            page.wait_for_function("window.consoleStats.fps.front > 0 && window.consoleStats.fps.wrist > 0",
                                   timeout=60000)
            pid = graph.procs["console"].pid
            cpu0, wall0 = _cpu_seconds(pid), time.monotonic()
            frames0 = page.evaluate("({...window.consoleStats.frames})")
            page.wait_for_timeout(int(args.fps_seconds * 1000))
            frames1 = page.evaluate("({...window.consoleStats.frames})")
            seconds = time.monotonic() - wall0
            out["fps"] = {cam: round((frames1[cam] - frames0[cam]) / seconds, 1) for cam in out["cameras"]}
            out["console_cpu_share_watching"] = round((_cpu_seconds(pid) - cpu0) / seconds, 3)
            # The reference while the page watches (same load: views streaming to the browser).
            reference = _time_websocket(url, probe, args.reference_presses)
            page.keyboard.down("Space")  # the takeover, held for every press
            page.wait_for_timeout(500)
            cpu0, wall0 = _cpu_seconds(pid), time.monotonic()
            presses = _time_presses(page, probe, args.presses, show)
            out["console_cpu_share_operating"] = round((_cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0), 3)
            page.keyboard.up("Space")
            browser.close()
            show("dead man, idle")
            dead_man = {"idle": _time_dead_man(url, probe, args.dead_man)}
            show(f"dead man, {args.load} competitors")
            with competitors(args.load):
                time.sleep(1.0)  # the competitors running before the first trial
                dead_man["loaded"] = _time_dead_man(url, probe, args.dead_man)
                if args.hold_seconds > 0:
                    show(f"key held {args.hold_seconds:g} s, {args.load} competitors")
                    held = _hold_key(url, args.hold_seconds, timeout_s)
    finally:
        probe.close()
        graph.shutdown()
    key = percentiles_ms(np.asarray(presses["latencies"]))
    ws = percentiles_ms(np.asarray(reference))
    out.update(presses=args.presses, presses_timed=len(presses["latencies"]), presses_lost=presses["lost"],
               key_to_robot_ms=key, websocket_to_robot_ms=ws,
               key_to_websocket_send_in_page_ms=percentiles_ms(np.asarray(presses["in_page"])),
               page_link_round_trip_ms=percentiles_ms(np.asarray(presses["links"])),
               playwright_key_injection_ms=percentiles_ms(np.asarray(presses["injections"])),
               browser_overhead_ratio_p50=round(key["p50_ms"] / ws["p50_ms"], 2) if ws["p50_ms"] else None,
               target_p99_ms=50.0, met=bool(key["p99_ms"] <= 50.0))
    out["dead_man"] = {"timeout_ms": timeout_s * 1e3, "load": args.load, "target_ms": 200.0}
    for case, trials in dead_man.items():
        figures = percentiles_ms(np.asarray(trials["seconds"]))
        out["dead_man"][case] = {**figures, "trials": args.dead_man, "lost": trials["lost"],
                                 "beyond_timeout_p99_ms": round(figures["p99_ms"] - timeout_s * 1e3, 1)}
    if args.hold_seconds > 0:
        out["dead_man"]["held_loaded"] = held
    if args.json:
        emit_json(out)
    else:
        stdout.print(json.dumps(out, indent=2))
    return 0
