"""The correction console in a real Chromium, attached to a running HIL-SERL actor:
the token guards everything, live views arrive, holding the takeover key moves the arm
and the learner receives those steps flagged as interventions, giving back returns
control, the e-stop stops every step until a confirmed reset, and a closed tab holds."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from console_harness import HilStack, open_console

from sim2real.policies.teleop.operator import HOLD, HUMAN, POLICY


def http_status(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> int:
    req = urllib.request.Request(url, method=method, headers=headers or {}, data=b"{}" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def ws_refused(url: str, origin: str | None) -> str:
    import websockets

    async def attempt() -> str:
        headers = {"Origin": origin} if origin else {}
        try:
            async with websockets.connect(url, origin=None, additional_headers=headers) as ws:
                await ws.recv()
                return "accepted"
        except websockets.exceptions.ConnectionClosed as exc:
            return f"closed {exc.rcvd.code if exc.rcvd else ''}"
        except websockets.exceptions.InvalidStatus as exc:
            return f"refused {exc.response.status_code}"

    # Playwright's sync API keeps an event loop on this thread: the client gets its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, attempt()).result(timeout=30)


def test_everything_needs_the_token_and_the_consoles_origin(hil: HilStack) -> None:
    base = f"http://127.0.0.1:{hil.server.port}"
    for path in ("/", "/static/console.js", "/api/describe"):
        assert http_status(base + path) == 401, path
        assert http_status(base + path + "?token=wrong") == 401, path
    assert http_status(base + "/api/estop", "POST") == 401
    assert http_status(base + "/api/estop", "POST", {"Authorization": "Bearer nope"}) == 401
    assert not hil.target.estop_guard.tripped  # the refused e-stop did nothing, as did every refusal
    assert http_status(base + "/api/describe", headers={"Authorization": "Bearer test-token"}) == 200
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", hil.server.port, timeout=5)
    conn.request("GET", "/?token=test-token")  # the token for a session cookie, and away from the URL
    r = conn.getresponse()
    assert r.status == 303 and r.getheader("Location") == "/"
    assert "script-src" not in r.getheader("Content-Security-Policy", "")  # default-src 'self': no inline, no eval
    assert "default-src 'self'" in r.getheader("Content-Security-Policy", "")
    cookie = r.getheader("Set-Cookie", "")
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=" in cookie and "test-token" not in cookie
    conn.close()
    session = cookie.split(";", 1)[0]
    assert http_status(base + "/api/describe", headers={"Cookie": session}) == 200
    assert http_status(base + "/api/describe?token=test-token") == 401  # a URL's token: only for the page's exchange
    ws = f"ws://127.0.0.1:{hil.server.port}/ws"
    assert ws_refused(ws + "?token=wrong", None).startswith(("closed 4403", "refused 403"))
    assert ws_refused(ws + "?token=test-token", "http://evil.example").startswith(("closed 4403", "refused 403"))
    assert ws_refused(ws + "?token=test-token", f"http://127.0.0.1:{hil.server.port}") == "accepted"


def test_the_page_shows_two_live_cameras(hil: HilStack, browser) -> None:
    page = open_console(browser, hil.server.url)
    try:
        page.wait_for_timeout(1000)
        frames0 = page.evaluate("({...window.consoleStats.frames})")
        page.wait_for_timeout(2000)
        frames1 = page.evaluate("({...window.consoleStats.frames})")
        # Live: each view keeps receiving frames. Their rate is a figure of `sim2real bench
        # console` (a loaded 2-core machine rendered 7 fps of 15, an idle one 15).
        assert set(frames1) == {"front", "wrist"}, frames1
        assert all(frames1[c] - frames0.get(c, 0) >= 3 for c in frames1), (frames0, frames1)
        assert page.text_content("#robot") == "arm" and not page.errors
        # The page swaps each view's image for the newest frame: between a swap and its
        # decode the element has no size yet (naturalWidth 0), so read it once decoded.
        decoded = page.wait_for_function(
            "(() => { const i = document.querySelector('img[data-camera=front]');"
            " return i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight] : null; })()",
            timeout=5000)
        assert decoded.json_value() == [320, 240]
    finally:
        page.close()


@pytest.mark.heavy
def test_holding_the_takeover_key_moves_the_arm_and_flags_interventions(hil: HilStack, browser) -> None:
    page = open_console(browser, hil.server.url)
    try:
        before_online = len(hil.learner.online)
        page.keyboard.down("Space")
        page.keyboard.down("KeyW")  # +x at the operator's full speed, 0.15 m/s
        assert hil.wait(lambda: hil.target.control.mode == HUMAN, 3.0)

        def flagged_so_far() -> int:
            return int(hil.learner.online.data["intervened"][before_online:len(hil.learner.online)].sum())

        # The hand's x, sampled as the page shows it, while the learner gets 25 of the
        # person's steps: judged over simulated steps, not a wall-clock window (the
        # simulated arm keeps real time only on an idle machine: a loaded CI run gave 2 s
        # of wall clock, most of them inside the takeover's 0.4 s blend, 4.3 cm).
        xs, deadline = [], time.monotonic() + 30.0
        while flagged_so_far() < 25 and time.monotonic() < deadline:
            xs.append(hil.target.snapshot()["state"]["ee_pos"][0])
            page.wait_for_timeout(50)
        assert flagged_so_far() >= 25, flagged_so_far()
        assert page.get_attribute("#control", "data-mode") == "human"
        page.keyboard.up("KeyW")
        page.keyboard.up("Space")
        assert hil.wait(lambda: hil.target.control.mode == POLICY, 3.0)  # released: given back
        steps = np.diff(xs)
        forward = steps[np.abs(steps) < 0.03].sum()  # larger jumps are episode resets (a reached target)
        assert forward > 0.05, xs  # the hand moved forward: 25 steps of 0.15 m/s after the blend
        # The learner got those steps, flagged, in both buffers.
        assert hil.wait(lambda: len(hil.learner.online) > before_online + 20, 10.0)
        n = len(hil.learner.online)
        flagged = hil.learner.online.data["intervened"][before_online:n]
        assert flagged.sum() >= 25 and len(hil.learner.demo) >= flagged.sum()
        actions = hil.learner.demo.data["action"][: len(hil.learner.demo)]
        assert np.median(actions[-int(flagged.sum()):, 0]) > 0.05  # the stored command points +x
        # Given back: the following steps are the policy's again.
        mark = len(hil.learner.online)  # chunks arrive late: what follows the handover comes after them
        # (a bound on waiting, not on speed: 64 steps are 3.2 s of real time, a loaded
        # machine's simulated arm took over 15 s)
        assert hil.wait(lambda: len(hil.learner.online) > mark + 64, 60.0)
        end = len(hil.learner.online)
        assert not hil.learner.online.data["intervened"][end - 20:end].any()
    finally:
        page.close()


def test_the_estop_stops_every_step_until_a_confirmed_reset(hil: HilStack, browser) -> None:
    page = open_console(browser, hil.server.url)
    try:
        page.click("#estop")
        assert hil.wait(lambda: hil.target.estop_guard.tripped, 3.0)
        page.wait_for_function("document.querySelector('#estop').dataset.latched === 'true'", timeout=5000)
        time.sleep(0.3)
        steps, q = hil.target.episodes.steps, hil.env.sim.data.qpos.copy()
        page.keyboard.down("Space")
        page.keyboard.down("KeyW")  # an operator command during the e-stop reaches nothing
        time.sleep(1.0)
        page.keyboard.up("KeyW")
        page.keyboard.up("Space")
        assert hil.target.episodes.steps == steps and np.array_equal(hil.env.sim.data.qpos, q)
        page.click("#estop-reset")
        page.click("#confirm-reset button[value=cancel]")  # cancelling the dialog keeps it latched
        time.sleep(0.3)
        assert hil.target.estop_guard.tripped
        page.click("#estop-reset")
        page.click("#confirm-reset-ok")
        assert hil.wait(lambda: not hil.target.estop_guard.tripped, 3.0)
        # The e-stop left the operator in hold; give back and the policy steps again.
        page.keyboard.down("Space")
        page.keyboard.up("Space")
        assert hil.wait(lambda: hil.target.control.mode == POLICY, 3.0)
        assert hil.wait(lambda: hil.target.episodes.steps > steps or hil.target.episodes.episode > 0, 5.0)
    finally:
        page.close()
        if hil.target.estop_guard.tripped:  # a failure above must not leave the next tests latched
            hil.target.reset_estop()


@pytest.mark.heavy  # one at a time: beside the computing worker its in-process graph took one step past the hold
def test_closing_the_tab_during_a_takeover_holds_within_200_ms(hil: HilStack, browser) -> None:
    page = open_console(browser, hil.server.url)
    page.keyboard.down("Space")
    page.keyboard.down("KeyA")
    assert hil.wait(lambda: hil.target.control.mode == HUMAN, 3.0)
    time.sleep(0.5)
    t0 = time.monotonic()
    page.close()
    assert hil.wait(lambda: hil.target.control.mode == HOLD, 1.0)
    held_after = time.monotonic() - t0
    assert held_after <= 0.2, held_after
    time.sleep(0.1)  # a step already under way ends with the hold command (zero motion)
    steps = hil.target.episodes.steps
    time.sleep(0.5)
    assert hil.target.episodes.steps == steps  # held: nothing steps, no command reaches the arm
    assert hil.target.control.status(time.monotonic())["hold_reason"] in (
        "the operator's connection was lost", "the operator's page was hidden")  # whichever the browser says first
    # Only a person ends the hold: a new session takes over and gives back.
    with hil.target.lock:
        hil.target.control.take_over("cleanup", time.monotonic())
        hil.target.control.give_back("cleanup", time.monotonic())
        hil.target.control.release("cleanup", time.monotonic())


def test_a_second_page_is_read_only_while_the_first_operates(hil: HilStack, browser) -> None:
    first, second = open_console(browser, hil.server.url), open_console(browser, hil.server.url)
    try:
        first.keyboard.down("Space")
        assert hil.wait(lambda: hil.target.control.mode == HUMAN, 3.0)
        operator = hil.target.control.owner
        refused = hil.target.control.counts["refused"]
        second.keyboard.down("Space")
        second.keyboard.down("KeyS")
        second.wait_for_function("/another session|read-only session/.test(document.querySelector('#reply')"
                                 ".textContent)", timeout=5000)
        second.keyboard.up("KeyS")
        second.keyboard.up("Space")
        assert "read-only" in second.text_content("#role")
        assert hil.target.control.owner == operator and hil.target.control.counts["refused"] > refused
    finally:
        with hil.target.lock:  # whatever focus did to the first page, its session ends the takeover
            hil.target.control.give_back(hil.target.control.owner, time.monotonic())
        first.close()
        second.close()
        assert hil.wait(lambda: hil.target.control.mode == POLICY and not hil.target.control.owner, 3.0)


@pytest.mark.parametrize("hostile", ['{"type": "command", "axes": [1e309, 0, 0, 0, 0, 0, 0]}', "[1, 2]", "not json",
                                     '{"type": "command", "axes": "fast"}', '{"type": "shutdown"}',
                                     '{"type": "command", "axes": ["1", true, 0, 0, 0, 0, 0]}'])
def test_hostile_messages_get_a_reason_and_change_nothing(hil: HilStack, hostile: str) -> None:
    from sim2real.console.server import answer

    with hil.target.lock:
        hil.target.control.take_over("probe", time.monotonic())
    try:
        reply = json.loads(answer(hil.target, "probe", hostile))
        assert reply["type"] == "reply" and reply["error"]
        out = hil.target.operator_output()
        assert out.mode == HUMAN and np.all(np.isfinite(out.command)) and np.all(out.human == 0.0)
    finally:
        with hil.target.lock:
            hil.target.control.give_back("probe", time.monotonic())
