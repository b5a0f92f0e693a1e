"""Issue 42, defect 4: after a hold, the next takeover starts from zero, never from the
policy's command. Through the real ROS console node, a real Chromium and the real safety
filter: the "policy" is this test publishing the very command of the report on
``raw_command`` (``policy: external``), so the figures are the report's, every run.

Reported: after a hold, pressing only Space sent ``[0.473, -0.473, -0.126, -0.104, 0.277,
0.425]`` (three times the 0.15 m/s operator limit) and with R (+z) held the robot got a
negative vz. Here each hold (page hidden, connection lost, e-stop and its reset) is
followed by Space alone (every twist element must be 0) and then Space + R (vz in
[0, 0.15], the other elements 0), read on the console's ``teleop_command`` and on the
filter's ``command``, what the robot receives."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from console_harness import open_console
from test_console_ros import Graph

from sim2real.policies.teleop.operator import HOLD, HUMAN, POLICY

REPORTED = np.array([0.473, -0.473, -0.126, -0.104, 0.277, 0.425])
"""The policy's command in the report (vx, vy, vz, wx, wy, wz)."""
LIMITS = np.array([0.15, 0.15, 0.15, 0.6, 0.6, 0.6])
"""The arm's operator limits (sim/arm/deployment.py)."""


class PolicyGraph(Graph):
    """The arm's graph without a policy node; this test publishes the policy's command
    at 50 Hz and records what the console publishes."""

    def __init__(self) -> None:
        from std_msgs.msg import Float64MultiArray

        from sim2real.policies.safety.spaces import command_space
        from sim2real.ros_nodes import messages as M
        from sim2real.ros_nodes.qos import command_qos, observer_qos

        super().__init__("arm", policy="external")
        space = command_space("arm", "ee_delta")
        self.raw = M.command_array(np.r_[REPORTED, space.hold[-1]], space.names)
        self.teleop: list[tuple[float, np.ndarray]] = []
        self.raw_pub = self.probe.create_publisher(Float64MultiArray, "raw_command", command_qos())
        self.probe.create_subscription(Float64MultiArray, "teleop_command", self._on_teleop, observer_qos())
        self.probe.create_timer(0.02, lambda: self.raw_pub.publish(self.raw))

    def _on_teleop(self, msg: Any) -> None:
        with self.lock:
            self.teleop.append((time.monotonic(), np.asarray(msg.data)))

    def teleop_after(self, t: float) -> list[np.ndarray]:
        with self.lock:
            return [c for s, c in self.teleop if s >= t]


@pytest.fixture(scope="module")
def graph() -> Iterator[PolicyGraph]:
    g = PolicyGraph()
    try:
        # The robot obeys the "policy": the filter passes its command (within 0.8 m/s).
        assert g.wait(lambda: any(abs(c[0] - 0.473) < 1e-3 for _, c in g.after(0.0)), 30.0), "no policy commands"
        yield g
    finally:
        g.close()


@pytest.fixture(autouse=True)
def policy_again(graph: PolicyGraph) -> Iterator[None]:
    """Each test starts with the policy in command and no e-stop, whatever the last left."""
    yield
    t = graph.target
    if t.control.estop:
        t.reset_estop()
    with t.lock:
        if t.control.mode != POLICY:
            t.control.take_over("cleanup", time.monotonic())
            t.control.give_back("cleanup", time.monotonic())


def _held(g: PolicyGraph, page: Any, key: str, seconds: float = 0.7, vz: float | None = None
          ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Press ``key`` (Space alone: ``""``) for ``seconds``, or with ``vz`` until the console
    has sent that vertical speed (10 s at most: the blend is the page's clock, which a
    loaded machine slows): what the console sent, and the filter's commands from the
    first of those on."""
    if key:
        page.keyboard.down(key)
    t0 = time.monotonic()
    if vz is None:
        time.sleep(seconds)
    else:
        g.wait(lambda: any(float(c[2]) == pytest.approx(vz) for c in g.teleop_after(t0)), 10.0)
        time.sleep(0.1)  # and a little after it
    teleop = [c[:6] for c in g.teleop_after(t0)]
    filtered = [c[:6] for _, c in g.after(t0 + 0.06)]  # one filter period for the first teleop message
    return teleop, filtered


def _check_from_zero(g: PolicyGraph, page: Any, cause: str) -> None:
    """After the hold: Space alone sends nothing but zero; Space + R never more than the
    limit, never -z."""
    page.keyboard.down("Space")
    assert g.wait(lambda: g.target.control.mode == HUMAN, 3.0), cause
    teleop, filtered = _held(g, page, "")
    assert teleop and filtered, cause
    worst = max(teleop, key=lambda c: float(np.abs(c).max()))
    assert np.all(worst == 0.0), f"after {cause}, Space alone sent {np.round(worst, 3).tolist()}"
    assert all(np.all(c == 0.0) for c in filtered), f"after {cause}, the robot got {filtered[0].tolist()}"
    teleop, filtered = _held(g, page, "KeyR", vz=0.15)
    for sent in (teleop, filtered):
        vz = [float(c[2]) for c in sent]
        assert sent and min(vz) >= 0.0, f"after {cause}, R (+z) sent vz {min(vz):.3f}"
        assert all(np.all(np.abs(c) <= LIMITS + 1e-9) for c in sent), f"after {cause}: above the operator's limit"
        assert all(np.all(c[[0, 1, 3, 4, 5]] == 0.0) for c in sent), f"after {cause}: an axis nobody pressed moved"
    assert max(float(c[2]) for c in teleop) == pytest.approx(0.15)  # the person's own command, blended in
    page.keyboard.up("KeyR")
    page.keyboard.up("Space")  # gives back: the policy commands again
    assert g.wait(lambda: g.target.control.mode == POLICY, 3.0), cause


def _take_over_and_hold(g: PolicyGraph, page: Any, hold: Any) -> None:
    page.keyboard.down("Space")
    page.keyboard.down("KeyW")
    assert g.wait(lambda: g.target.control.mode == HUMAN, 3.0)
    time.sleep(0.5)  # fully the person's command
    hold()
    assert g.wait(lambda: g.target.control.mode == HOLD, 2.0)
    time.sleep(0.2)


@pytest.mark.heavy
def test_after_every_hold_a_takeover_starts_from_zero_never_from_the_policy(graph: PolicyGraph, browser) -> None:
    g = graph
    page = open_console(browser, g.console.server.url)
    # 1. The page hidden (the window loses focus): the page drops its keys and says so.
    _take_over_and_hold(g, page, lambda: page.evaluate("window.dispatchEvent(new Event('blur'))"))
    page.keyboard.up("KeyW")
    page.keyboard.up("Space")
    _check_from_zero(g, page, "a hidden page")
    # 2. The connection lost (the tab closed), then another tab takes over.
    _take_over_and_hold(g, page, page.close)
    page = open_console(browser, g.console.server.url)
    _check_from_zero(g, page, "a lost connection")
    # 3. The e-stop (Escape) during a takeover, reset with Space still held.
    _take_over_and_hold(g, page, lambda: page.keyboard.press("Escape"))
    page.keyboard.up("KeyW")
    page.wait_for_function("document.querySelector('#estop').dataset.latched === 'true'", timeout=5000)
    page.click("#estop-reset")
    page.click("#confirm-reset-ok")
    page.wait_for_function("document.querySelector('#estop').dataset.latched === 'false'", timeout=5000)
    _check_from_zero(g, page, "an e-stop and its reset")
    page.close()


def test_a_takeover_from_the_policy_starts_at_most_at_the_operators_limit(graph: PolicyGraph, browser) -> None:
    """From the policy (no hold), the blend starts from what the robot last received,
    bounded by the operator's limit, and never against the held key (R: +z while the
    policy's vz is -0.126)."""
    g = graph
    page = open_console(browser, g.console.server.url)
    assert g.wait(lambda: g.target.control.mode == POLICY, 3.0)
    page.keyboard.down("KeyR")  # R first: the takeover's first command already has +z
    holds = g.target.control.counts["holds"]
    t0 = time.monotonic()
    page.keyboard.down("Space")
    time.sleep(0.7)
    sent = [c[:6] for c in g.teleop_after(t0)]
    page.keyboard.up("KeyR")
    page.keyboard.up("Space")
    assert sent and all(np.all(np.abs(c) <= LIMITS + 1e-9) for c in sent), np.round(sent[0], 3).tolist()
    assert min(float(c[2]) for c in sent) >= 0.0
    # The first command continues the policy's, within the limit: no jump to zero either.
    np.testing.assert_allclose(sent[0][[0, 1]], [0.15, -0.15], atol=0.02)
    # And every command lies on the blend from there to the person's (R: +z alone), up to
    # a hold (all zero): only the dead man's, when the loaded machine delayed the page's
    # 50 Hz stream past its timeout; after it the takeover starts from zero (tested above).
    start = np.clip(REPORTED, -LIMITS, LIMITS)
    start[2] = 0.0  # the policy's -z is against the held key: that start is dropped
    person = np.array([0.0, 0.0, 0.15, 0.0, 0.0, 0.0])
    blend = list(itertools.takewhile(lambda c: bool(np.any(c != 0.0)), sent))
    if len(blend) < len(sent):
        assert g.target.control.counts["holds"] > holds, "an all-zero command without a hold"
    for c in blend:
        alpha = float(c[2]) / 0.15
        np.testing.assert_allclose(c, (1.0 - alpha) * start + alpha * person, atol=1e-9)
    assert g.wait(lambda: g.target.control.mode == POLICY, 3.0)
    page.close()



def test_an_estop_from_another_source_holds_the_takeover_until_a_person_acts(graph: PolicyGraph, browser) -> None:
    """The filter's e-stop tripped by something else than the page (`ros2 service call`):
    the console learns it from the filter's diagnostics, holds, shows E-STOP, refuses the
    takeover while latched, and after the reset starts from zero."""
    from std_srvs.srv import Trigger

    g = graph
    trip = g.probe.create_client(Trigger, "safety_filter/trip_estop")
    reset = g.probe.create_client(Trigger, "safety_filter/reset")

    def call(client: Any) -> bool:
        assert client.wait_for_service(timeout_sec=5.0)
        future = client.call_async(Trigger.Request())
        assert g.wait(future.done, 5.0)
        return bool(future.result().success)

    page = open_console(browser, g.console.server.url)
    _take_over_and_hold(g, page, lambda: call(trip))
    assert g.wait(lambda: bool(g.target.control.estop), 2.0)  # from the filter's diagnostics
    page.wait_for_function("document.querySelector('#control').textContent === 'E-STOP'", timeout=5000)
    page.keyboard.up("KeyW")  # Space stays held: the page keeps commanding, refused while latched
    page.wait_for_function("/e-stop is latched/.test(document.querySelector('#reply').textContent)", timeout=5000)
    assert g.target.control.mode == HOLD
    assert call(reset)
    assert g.wait(lambda: not g.target.control.estop, 3.0), (g.target.control.estop, g.target.diagnostics)
    _check_from_zero(g, page, "an e-stop from another source")
    page.close()
