"""The person steers each robot on its own operator channel, through a real Chromium:
the quadruped's velocity command, the drone's setpoint (the policy still commands the
motors, through the safety filter). One graph at a time on the test machine's 2 cores."""

from __future__ import annotations

import time

import numpy as np
import pytest
from console_harness import open_console
from test_console_ros import Graph

from sim2real.policies.teleop.operator import HUMAN, POLICY


def steady_forward_speeds(g: Graph, samples: int, settle_s: float = 1.0) -> tuple[list[float], list[str]]:
    """The quadruped's speed along its heading, sampled at 10 Hz while the person has
    commanded for ``settle_s`` (the blend and the robot's response) and no watchdog holds
    the robot, and what interrupted the rest. On a loaded machine the browser's key
    stream can stall past the dead man (the console holds: the safe side) or the
    filter's watchdog can hold a late command; neither says the policy tracks badly, so
    they are reported and waited out, up to 10 s."""
    forward: list[float] = []
    held: list[str] = []  # each interruption once, in the order seen
    deadline = time.monotonic() + 10.0
    while len(forward) < samples and time.monotonic() < deadline:
        snap = g.target.snapshot()
        control, safety = snap["control"], snap["safety"]
        hold = (f"{control['mode']}: {control['hold_reason']}" if control["mode"] != HUMAN
                else f"watchdog: {safety['watchdog']}" if safety["watchdog"] else None)
        if hold is not None:
            if hold not in held:
                held.append(hold)
        elif control["seconds"] >= settle_s:
            forward.append(snap["state"]["velocity_body"][0])
        time.sleep(0.1)
    return forward, held


# An idle fresh-clone run on 2026-11-29 saw the quadruped's commands stop for 204 ms (the
# filter's 40 ms watchdog held the robot, mean forward speed 0.20 m/s of the 0.4 asserted):
# the sim bridge made its GL context at the page's first frame, holding the GIL ~200 ms
# beside the running loop. It is made at configure now (SimRobot.prepare_views).
@pytest.mark.heavy
@pytest.mark.parametrize("robot", ["quadruped", "drone"])
def test_the_person_steers_the_policy_on_the_robots_own_channel(robot: str, browser) -> None:
    """Quadruped: the console's twist becomes the velocity command the walking policy
    tracks; drone: its velocity moves the setpoint the hover policy holds."""
    from sim2real.ros_nodes.deployment import default_policy

    # Views at 5 Hz: the arm's test checks the frame rate; here the 2 cores go to real-time control.
    g = Graph(robot, policy=default_policy(robot), sim_bridge={"image_rate": 5.0})
    try:
        page = open_console(browser, g.console.server.url)
        assert g.wait(lambda: g.target.m.base_pos is not None, 20.0)
        time.sleep(3.0 if robot == "drone" else 1.0)  # the drone takes off to its first setpoint
        x0 = float(g.target.m.base_pos[0])
        page.keyboard.down("Space")
        page.keyboard.down("KeyW")
        assert g.wait(lambda: g.target.control.mode == HUMAN, 3.0)
        forward, held = steady_forward_speeds(g, samples=30)
        x1 = float(g.target.m.base_pos[0])
        page.keyboard.up("KeyW")
        page.keyboard.up("Space")
        assert g.wait(lambda: g.target.control.mode == POLICY, 3.0)
        page.close()
        diag = g.target.diagnostics
        if robot == "quadruped":  # asked for 1 m/s forward (the policy tracks up to its training range)
            assert len(forward) >= 20, (forward, held)
            assert np.mean(forward) > 0.4, (forward, held, diag.get("reason"), diag.get("acted"))
        else:  # the setpoint moved +x at 0.5 m/s for about 4 s; the drone follows it
            assert x1 - x0 > 0.8, (x0, x1, diag.get("reason"), diag.get("acted"))
        assert g.target.diagnostics.get("source") == "policy"  # motion still came from the policy, filtered
    finally:
        g.close()
