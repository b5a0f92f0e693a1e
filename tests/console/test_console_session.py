"""Issue 42, defect 9 (the console's parts), each against a real server: giving back
releases ownership; the token leaves the address bar for an expiring HttpOnly session;
hostile WebSocket messages get a reason and keep the session, and no reply carries NaN;
the e-stop's service call runs off the event loop; the badge shows an age and the
e-stop. The robot side is the simulated arm's HIL target (no actor: nothing steps), or a
lone ROS console node whose filter is absent."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from console_harness import open_console

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "policies" / "hil"))

from sim2real.policies.teleop.operator import HUMAN, POLICY

TOKEN = "test-token"
STARTED: list[float] = []
"""When the console's target was made (monotonic s)."""


@pytest.fixture(scope="module")
def target() -> Iterator[Any]:
    from hil_helpers import tiny_config

    from sim2real.policies.hil.console import HilConsoleTarget
    from sim2real.policies.hil.env import HilEnv

    env = HilEnv(tiny_config().env, seed=0)
    STARTED.append(time.monotonic())
    yield HilConsoleTarget(env, real_time=False)
    env.close()


@pytest.fixture(scope="module")
def server(target: Any) -> Iterator[Any]:
    from sim2real.console.server import ConsoleServer

    s = ConsoleServer(target, TOKEN)
    s.start()
    yield s
    s.stop()


def strict_json(text: str) -> dict[str, Any]:
    """What a browser's JSON.parse accepts (no NaN, no Infinity)."""
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def in_thread(coro: Any) -> Any:
    """Playwright's sync API keeps an event loop on this thread: the client gets its own."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result(timeout=60)


def test_giving_back_lets_another_page_take_over(server: Any, target: Any, browser) -> None:
    first, second = open_console(browser, server.url), open_console(browser, server.url)
    try:
        first.keyboard.down("Space")
        assert _wait(lambda: target.control.mode == HUMAN)
        first.keyboard.up("Space")  # gives back; the first page stays open
        assert _wait(lambda: target.control.mode == POLICY)
        second.keyboard.down("Space")
        second.wait_for_function("document.querySelector('#role').textContent === 'you are the operator'",
                                 timeout=5000)
        assert target.control.mode == HUMAN and "another session" not in second.text_content("#reply")
        second.keyboard.up("Space")
        assert _wait(lambda: target.control.mode == POLICY and not target.control.owner)
    finally:
        first.close()
        second.close()


def test_the_token_leaves_the_address_bar_for_an_expiring_session_cookie(server: Any, browser) -> None:
    context = browser.new_context(bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(server.url)
        page.wait_for_function("window.consoleStats && window.consoleStats.state !== null", timeout=15000)
        assert page.url == f"http://127.0.0.1:{server.port}/", page.url  # redirected: no token on screen
        assert page.evaluate("performance.getEntriesByType('navigation')[0].redirectCount") == 1
        assert page.evaluate("document.cookie") == ""  # HttpOnly: the page's scripts never see it
        (cookie,) = context.cookies()
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert TOKEN not in cookie["value"]  # a session id, not the token
        assert 0 < cookie["expires"] - time.time() <= 12 * 3600 + 60  # a session that ends
    finally:
        context.close()


def test_a_session_expires_and_its_page_says_so(target: Any, browser) -> None:
    from sim2real.console.server import ConsoleServer

    short = ConsoleServer(target, TOKEN, session_ttl=2.0)
    short.start()
    try:
        page = open_console(browser, short.url)
        page.keyboard.down("Space")  # a takeover when the session ends holds, like a lost connection
        assert _wait(lambda: target.control.mode == HUMAN)
        page.wait_for_function("/session expired/.test(document.querySelector('#connection').textContent)",
                               timeout=6000)
        assert target.control.mode == "hold" and not target.control.owner
        status = page.evaluate("fetch('/api/describe').then((r) => r.status)")
        assert status == 401
        page.close()
    finally:
        short.stop()
        with target.lock:
            target.control.take_over("cleanup", time.monotonic())
            target.control.give_back("cleanup", time.monotonic())


def test_the_console_receives_at_real_time_priority_and_encodes_views_at_normal(browser) -> None:
    """A receiver starved by a busy machine reads a held key as released (the dead man
    holds a robot the person still commands): the web server's thread is real-time where
    permitted; the views' JPEG encoding, its bulk work, is not."""
    import os

    import numpy as np
    from hil_helpers import tiny_config

    from sim2real.console.server import ConsoleServer
    from sim2real.hardware.realtime import OPERATOR_PRIORITY, probe
    from sim2real.policies.hil.console import HilConsoleTarget
    from sim2real.policies.hil.env import HilEnv

    env = HilEnv(tiny_config().env, seed=0)
    target = HilConsoleTarget(env, real_time=False)  # its own: the views fed here reach no other test
    server = ConsoleServer(target, TOKEN)
    server.start()
    try:
        status, tid = server.realtime, server._thread.native_id
        assert status is not None and tid is not None
        if not probe(OPERATOR_PRIORITY).realtime:
            assert not status.realtime and status.reason  # says why not
            return
        assert os.sched_getscheduler(tid) == os.SCHED_FIFO
        assert os.sched_getparam(tid).sched_priority == OPERATOR_PRIORITY
        page = open_console(browser, server.url)
        try:
            for shade in range(5):  # new frames of a view (raw RGB, as a simulator renders them)
                target.frames.put(target.camera_names()[0], np.full((48, 64, 3), 40 * shade, np.uint8))
                time.sleep(0.1)
            page.wait_for_function("Object.values(window.consoleStats.frames).some((n) => n > 2)", timeout=15000)
        finally:
            page.close()
        encoders = [t.native_id for t in threading.enumerate() if t.name.startswith("console-jpeg")]
        assert encoders and all(os.sched_getscheduler(e) == os.SCHED_OTHER for e in encoders if e is not None)
    finally:
        server.stop()
        env.close()

HOSTILE = [
    ('{"type": "command", "axes": [1' + "0" * 400 + ', 0, 0, 0, 0, 0, 0]}', "out of range"),
    ("[" * 20_000 + "]" * 20_000, "nested"),  # within the 64 KiB frame limit (beyond it: a clean 1009 close)
    ('{"type": "command", "axes": [[[[[1]]]]]}', "nested"),
    ('{"type": "command", "axes": [NaN, 0, 0, 0, 0, 0, 0]}', "not JSON"),
    ('{"type": "command", "axes": [1e999, 0, 0, 0, 0, 0, 0]}', "out of range"),
    ('{"type": "command", "axes": ["1", 0, 0, 0, 0, 0, 0]}', "finite numbers"),
    ('{"type": "command", "axes": [true, 0, 0, 0, 0, 0, 0]}', "finite numbers"),
    ('{"type": "ping", "t": NaN}', "not JSON"),
    ('{"type": "ping", "t": Infinity}', "not JSON"),
    ('{"type": "ping", "t": "soon"}', "finite number"),
    (b"\x00binary", "binary"),
]


def test_hostile_messages_get_a_reason_and_the_session_stays(server: Any, target: Any,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    import websockets

    async def session() -> list[tuple[str, dict[str, Any]]]:
        url = f"ws://127.0.0.1:{server.port}/ws"
        replies = []
        async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"},
                                      max_size=None) as ws:
            await ws.send(json.dumps({"type": "takeover"}))
            for text, _ in HOSTILE:
                await ws.send(text)
                while True:  # state messages stream meanwhile: the reply is the next non-state
                    msg = strict_json(await asyncio.wait_for(ws.recv(), 5))
                    if msg["type"] != "state":
                        replies.append((str(text)[:40], msg))
                        break
            await ws.send(json.dumps({"type": "ping", "t": 1.5}))
            while (msg := strict_json(await asyncio.wait_for(ws.recv(), 5)))["type"] == "state":
                pass
            replies.append(("ping", msg))
            await ws.send(json.dumps({"type": "giveback"}))
        return replies

    with caplog.at_level("WARNING"):
        replies = in_thread(session())
    for (text, reply), (_, why) in zip(replies, HOSTILE, strict=False):
        assert reply["type"] == "reply" and why in reply["error"], (text, reply)
    assert replies[-1][1] == {"type": "pong", "t": 1.5, "server": replies[-1][1]["server"]}  # the session stayed
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    assert _wait(lambda: target.control.mode == POLICY)


def test_the_badge_shows_an_age_and_the_estop(server: Any, target: Any, browser) -> None:
    assert _wait(lambda: target.control.mode == POLICY)
    page = open_console(browser, server.url)
    try:
        text = page.text_content("#control") or ""
        lived = time.monotonic() - STARTED[-1]
        shown = re.fullmatch(r"POLICY (\d+) s|POLICY \d+ min \d+ s|POLICY \d+ h \d\d min", text)
        assert shown, f"the badge says {text!r}; the console has lived {lived:.0f} s"
        if shown.group(1) is not None:  # "POLICY 12 s": no more than the console has lived
            assert int(shown.group(1)) <= lived + 1, (text, lived)
        page.click("#estop")
        page.wait_for_function("document.querySelector('#control').textContent === 'E-STOP'", timeout=5000)
        assert "E-STOP" in (page.text_content("#hold-reason") or "")
        page.click("#estop-reset")
        page.click("#confirm-reset-ok")
        page.wait_for_function("document.querySelector('#control').textContent.startsWith('POLICY')",
                               timeout=5000)
    finally:
        page.close()


def test_the_estop_call_runs_off_the_event_loop() -> None:
    """The e-stop button of a console whose filter is absent: its service call waits ~2 s
    for the filter, and the page's state stream must not stop meanwhile."""
    import websockets
    from test_console_ros import graph_domain

    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters
    from sim2real.ros_nodes.graph import InProcessGraph

    opts = DeployOptions(robot="arm", console=True, console_port=0, domain_id=graph_domain(),
                         overrides={"console": {"safety_filter": "absent_filter", "cameras": ""}})
    params, _ = graph_parameters(opts)
    graph = InProcessGraph(params, ["console"], opts.domain_id)
    graph.start()
    try:
        server = graph.nodes["console"].server
        gaps: list[float] = []
        answered: list[float] = []

        async def watch() -> None:
            async with websockets.connect(f"ws://127.0.0.1:{server.port}/ws?token={server.token}") as ws:
                last = time.monotonic()
                end = last + 4.0
                while time.monotonic() < end:
                    await asyncio.wait_for(ws.recv(), 5)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now

        def press() -> None:
            time.sleep(0.5)
            t0 = time.monotonic()
            request = urllib.request.Request(f"http://127.0.0.1:{server.port}/api/estop", data=b"{}", method="POST",
                                             headers={"Authorization": f"Bearer {server.token}"})
            try:
                urllib.request.urlopen(request, timeout=10)
            except urllib.error.HTTPError as exc:  # 409: the filter did not confirm (it is absent)
                assert exc.code == 409 and "did not confirm" in exc.read().decode()
            answered.append(time.monotonic() - t0)

        presser = threading.Thread(target=press)
        presser.start()
        in_thread(watch())
        presser.join(10)
        assert answered and answered[0] >= 1.5, answered  # the call did wait for the filter
        assert max(gaps) < 1.0, f"the state stream stopped for {max(gaps):.2f} s during the e-stop call"
        assert graph.nodes["console"].target.control.estop  # the person's side holds regardless
    finally:
        graph.shutdown()


def _wait(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
