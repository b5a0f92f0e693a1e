"""Node processes started exactly as ``ros2 launch`` starts them (``sim2real deploy --node
NAME -- --ros-args -r __node:=NAME --params-file config/<robot>.yaml``), issue 42 defect 10:

* a node never outlives its parent (the launch process killed with SIGKILL, or with
  SIGTERM, which ``ros2 launch`` does not forward: ros2/launch#666);
* Ctrl-C or SIGTERM at any moment of start-up, or while running, ends the node cleanly:
  exit 0, no traceback, no ``callback failed`` (rclpy's context shut under a callback);
* a node that cannot start gives the launch the reason it ends with, non-zero;
* every node of the graph, the planner included, starts from the command line the
  launch files use.

The launch packages themselves are not installable from PyPI; docs/deployment.md
("Launch behaviour") has the commands that check the same under a real ``ros2 launch``.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"
SCRIPT = Path(sys.executable).with_name("sim2real")
"""The console script launch_ros runs (``lib/sim2real/sim2real`` in a colcon install)."""


def launch_command(node: str, robot: str = "arm", *ros_args: str) -> list[str]:
    head = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "sim2real.cli"]
    return [*head, "deploy", "--node", node, "--", "--ros-args", "-r", f"__node:={node}",
            "--params-file", str(CONFIG / f"{robot}.yaml"), *ros_args]


def node_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_HOME": str(tmp_path / "ros_home"),
            "PYTHONUNBUFFERED": "1"}


def wait_for_line(log: Path, text: str, timeout: float = 90.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} within {timeout} s:\n{log.read_text(errors='replace')[-3000:]}")


def wait_active(node: str, timeout: float = 90.0) -> None:
    """Until the node's lifecycle state is ``active`` (asked over DDS, as ``ros2 lifecycle get``)."""
    import rclpy
    from lifecycle_msgs.srv import GetState
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    context = Context()
    rclpy.init(context=context, domain_id=int(os.environ["ROS_DOMAIN_ID"]))
    probe = rclpy.create_node("lifecycle_probe", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(probe)
    try:
        client = probe.create_client(GetState, f"/{node}/get_state")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if client.wait_for_service(timeout_sec=0.5):
                future = client.call_async(GetState.Request())
                executor.spin_until_future_complete(future, timeout_sec=2.0)
                result = future.result()
                if result is not None and result.current_state.label == "active":
                    return
            time.sleep(0.2)
        raise AssertionError(f"{node} not active within {timeout} s")
    finally:
        executor.shutdown()
        probe.destroy_node()
        rclpy.shutdown(context=context)


def gone(pid: int, timeout: float) -> bool:
    """The process has ended (a zombie waiting for init to reap it has ended too)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


def clean_end(out: str) -> list[str]:
    """What a clean end must not print."""
    return [bad for bad in ("Traceback", "KeyboardInterrupt", "context is invalid", "callback failed")
            if bad in out]


PARENT = """
import subprocess, sys, time
child = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1], "w"), stderr=subprocess.STDOUT)
print(child.pid, flush=True)
time.sleep(600)
"""
"""A stand-in for the launch process: starts the node as launch does, then is killed."""


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_a_node_ends_with_its_launch_process(sig: str, tmp_path: Path) -> None:
    log = tmp_path / "node.log"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(log), *launch_command("safety_filter")],
                              stdout=subprocess.PIPE, text=True, env=node_env(tmp_path))
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        wait_for_line(log, "[safety_filter]: arm")  # configured and active
        parent.send_signal(getattr(signal, sig))  # SIGTERM: the parent dies as ros2 launch does
        parent.wait(timeout=10)
        assert gone(child, 15.0), f"the node outlived its parent:\n{log.read_text()[-2000:]}"
    finally:
        if not gone(child, 0.0):
            os.kill(child, signal.SIGKILL)
    assert not clean_end(log.read_text(errors="replace")), log.read_text()[-3000:]


def catches_sigterm(pid: int) -> bool:
    """The process handles SIGTERM itself (Python does not by default: the node's own code runs)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def run_and_stop(cmd: list[str], env: dict[str, str], log: Path, sig: int, when: float | str) -> int:
    """Start ``cmd``, send ``sig`` twice (the terminal's and launch's) at ``when``: seconds
    after the start, ``"first instant"`` (as soon as the process's own code handles stop
    signals), or a node's name (once it is active); return the exit code."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        if when == "first instant":
            end = time.monotonic() + 30
            while not catches_sigterm(proc.pid) and proc.poll() is None and time.monotonic() < end:
                time.sleep(0.005)
        elif isinstance(when, str):
            wait_active(when)
        else:
            time.sleep(when)
        proc.send_signal(sig)
        time.sleep(0.05)
        if proc.poll() is None:
            proc.send_signal(sig)
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("sig", "when"), [(signal.SIGINT, "first instant"), (signal.SIGINT, 2.0),
                                           (signal.SIGTERM, 2.0), (signal.SIGINT, "safety_filter")],
                         ids=["ctrl-c-first-instant", "ctrl-c-at-2s", "sigterm-at-2s", "ctrl-c-running"])
def test_a_stop_signal_at_any_moment_ends_the_node_cleanly(sig: int, when: float | str, tmp_path: Path) -> None:
    log = tmp_path / "node.log"
    code = run_and_stop(launch_command("safety_filter"), node_env(tmp_path), log, sig, when)
    out = log.read_text(errors="replace")
    assert code == 0, out[-3000:]
    assert not clean_end(out), out[-3000:]


@pytest.mark.parametrize("robot", ["quadruped", "drone"])
def test_the_planner_starts_as_the_launch_starts_it(robot: str, tmp_path: Path) -> None:
    """``planner:=true``: the node the launch files start on both robots with a planner."""
    from sim2real.ros_nodes.launch_description import launch_graph

    assert "planner" in launch_graph(robot, {"planner": "true"}, int(os.environ["ROS_DOMAIN_ID"])).nodes
    log = tmp_path / "planner.log"
    code = run_and_stop(launch_command("planner", robot), node_env(tmp_path), log, signal.SIGINT, "planner")
    out = log.read_text(errors="replace")
    assert code == 0 and "invalid choice" not in out, out[-3000:]
    assert not clean_end(out), out[-3000:]


def test_a_node_that_cannot_start_ends_the_launch_with_its_reason(tmp_path: Path) -> None:
    """The launch's exit handler gets the node's exit code and last line: a failure, named."""
    from sim2real.ros_nodes.launch_description import NodeFailed, exit_outcome

    done = subprocess.run(launch_command("policy", "arm", "-p", "policy:=/nonexistent/policy.onnx"),
                          capture_output=True, text=True, env=node_env(tmp_path), timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    with pytest.raises(NodeFailed) as failed:
        exit_outcome("policy", done.returncode, last)
    message = str(failed.value)
    assert message.startswith(f"policy exited with code {done.returncode}: ")
    assert "/nonexistent/policy.onnx does not exist" in message
    assert exit_outcome("recorder", 0, "") == "recorder exited"  # a clean end still ends the launch


BLOCK_CONSOLE = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):  # a [ros]-only install: the console extra is missing
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("fastapi", "uvicorn", "starlette", "websockets"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
from sim2real.cli import main
sys.argv[0] = "sim2real"
sys.exit(main(sys.argv[1:]))
"""


def test_console_without_its_extra_names_the_extra(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", BLOCK_CONSOLE, *launch_command("console")[launch_command("console").index("deploy"):]]
    done = subprocess.run(cmd, capture_output=True, text=True, env=node_env(tmp_path), timeout=120)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert 'pip install "sim2real[console]"' in last, done.stderr[-2000:]


def test_an_error_from_a_missing_extra_names_the_extra() -> None:
    from sim2real.extras import describe_error

    try:
        try:
            importlib.import_module("uvicorn_not_installed")
        except ModuleNotFoundError as missing:
            missing.name = "uvicorn"  # as a [ros]-only install reports it
            raise RuntimeError("the console's server cannot start") from missing
    except RuntimeError as exc:
        assert describe_error(exc) == ("this needs uvicorn, which the 'console' extra installs: "
                                       'pip install "sim2real[console]"')
    assert describe_error(ValueError("bad value")) == "bad value"
    assert describe_error(TimeoutError()) == "TimeoutError"
