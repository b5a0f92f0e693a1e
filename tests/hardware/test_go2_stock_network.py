"""The Go2 on Unitree's own network set-up (issue 44, item 2): the robot at
192.168.123.161 on domain 0 with multicast discovery on its interface (what the SDK's
``ChannelFactoryInitialize(0, iface)`` configures), the host wired to it at
192.168.123.x. The backend's defaults (``backend_options: {}``) find that interface and
discover the robot's ``rt/lowstate`` writer with its type identity; the old unicast-only
loopback default found nothing. Run in a private pair of network namespaces
(:mod:`netns`), so no packet reaches the machine's network."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from netns import robot_network

CLI = [sys.executable, "-m", "sim2real.cli"]


@pytest.mark.heavy
def test_the_backends_defaults_reach_a_go2_on_unitrees_network() -> None:
    with robot_network() as net:
        robot = subprocess.Popen(net.run_in(net.robot, [*CLI, "hardware", "emulate", "--robot", "quadruped",
                                                        "--interface", "auto", "--no-mission"]),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            first: list[str] = []
            reader = threading.Thread(target=lambda: first.append(robot.stderr.readline() if robot.stderr else ""))
            reader.start()
            reader.join(60)
            assert first and first[0].startswith("connect: "), first
            assert json.loads(first[0].removeprefix("connect: ")) == {"domain_id": 0}  # the robot's defaults
            done = subprocess.run(net.run_in(net.host, [*CLI, "deploy", "check", "--robot", "quadruped",
                                                        "--policy", "none", "--json"]),
                                  capture_output=True, text=True, timeout=120)
        finally:
            robot.terminate()
            robot.wait(30)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    items = {i["name"]: i for i in json.loads(done.stdout)["items"]}
    writers = items["robot's writers"]
    assert writers["status"] == "PASS", writers
    assert "rt/lowstate: unitree_go::msg::dds_::LowState_" in writers["measured"], writers
    assert items["state rate"]["status"] == "PASS", items["state rate"]
