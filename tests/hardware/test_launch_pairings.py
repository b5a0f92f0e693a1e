"""Every ``backend:=real`` pairing docs/hardware.md documents, run as a user runs it
(issue 44, item 4): ``sim2real hardware emulate --robot R`` with its defaults, which are
the real robot's (the Go2 on domain 0, the Crazyflie on UDP port 19850, the arm's
ros2_control topics on the graph), and the hardware bridge started exactly as
``ros2 launch sim2real R.launch.py backend:=real [backend_options:=...]`` starts it
(its command line, ``config/R.yaml`` and the launch's own parameters from
:func:`~sim2real.ros_nodes.launch_description.launch_graph`). The bridge must connect
and pass its pre-flight check. Each pair runs in a network namespace of its own, so the
robots' fixed defaults meet no other run."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from documented_pairings import documented_pairings
from netns import private_loopback, run_in

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "sim2real.cli"]

PAIRINGS = documented_pairings()
"""Each pairing as docs/hardware.md writes it: the robot, ``hardware emulate``'s extra
arguments and the launch arguments for that emulator on this machine."""


def bridge_command(robot: str, args: dict[str, str], tmp_path: Path) -> list[str]:
    """The hardware bridge's command line as the launch files build it."""
    from sim2real.ros_nodes.launch_description import launch_graph

    graph = launch_graph(robot, args, int(os.environ["ROS_DOMAIN_ID"]))
    assert "hardware_bridge" in graph.nodes
    extra = tmp_path / "launch_params.yaml"  # what launch_ros writes for a node's `parameters` dict
    own = graph.parameters.get("hardware_bridge", {})  # none beyond the config for a classical controller
    extra.write_text(yaml.safe_dump({"hardware_bridge": {"ros__parameters": own}}))
    return [*CLI, "deploy", "--node", "hardware_bridge", "--", "--ros-args", "-r", "__node:=hardware_bridge",
            "--params-file", str(ROOT / "config" / f"{robot}.yaml"), "--params-file", str(extra)]


def wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        out = log.read_text(errors="replace") if log.exists() else ""
        if text in out:
            return out
        time.sleep(0.2)
    raise AssertionError(f"no {text!r}:\n{log.read_text(errors='replace')[-4000:] if log.exists() else ''}")


@pytest.mark.heavy
@pytest.mark.parametrize("pairing", list(PAIRINGS))
def test_the_documented_launch_pairing_connects_with_the_emulators_defaults(pairing: str, tmp_path: Path) -> None:
    documented = PAIRINGS[pairing]
    robot, emulate, launch_args = documented.robot, documented.emulate, documented.launch
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "PYTHONUNBUFFERED": "1",
           "ROS_HOME": str(tmp_path / "ros_home")}
    with private_loopback() as ns:
        robot_proc = subprocess.Popen(run_in(ns, [*CLI, "hardware", "emulate", "--robot", robot, *emulate,
                                                          "--no-mission"]),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        log = tmp_path / "bridge.log"
        bridge = None
        try:
            first: list[str] = []
            reader = threading.Thread(target=lambda: first.append(robot_proc.stderr.readline()
                                                                  if robot_proc.stderr else ""))
            reader.start()
            reader.join(90)
            assert first and first[0].startswith("connect: "), first
            with open(log, "wb") as out:
                bridge = subprocess.Popen(run_in(ns, bridge_command(robot, launch_args, tmp_path)), stdout=out,
                                          stderr=subprocess.STDOUT, env=env)
            out = wait_for(log, "pre-flight check:", bridge, 120.0)
        finally:
            for proc in (bridge, robot_proc):
                if proc is not None and proc.poll() is None:
                    proc.terminate()
            for proc in (bridge, robot_proc):
                if proc is not None:
                    try:
                        proc.wait(30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
    check = out[out.index("pre-flight check:") - 40:]
    assert "[ERROR]" not in check.splitlines()[0] and "FAIL" not in check, check[:3000]
