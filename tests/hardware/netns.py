"""A private robot network for tests: two network namespaces joined by a veth pair, the
robot's side at 192.168.123.161/24 and the host's at 192.168.123.10/24 (Unitree's
wiring). Nothing in them can reach the machine's own network: each namespace has only
its loopback and its end of the pair, so multicast discovery and a robot's default
settings (domain 0, fixed ports) can be tested without touching the machine's network or
another test's. Needs root (``ip netns``), as CI and this machine have."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

ROBOT_ADDRESS = "192.168.123.161/24"
HOST_ADDRESS = "192.168.123.10/24"


@dataclass(frozen=True)
class RobotNetwork:
    robot: str
    """The robot's namespace."""
    host: str
    """The host's namespace (where the stack runs)."""

    def run_in(self, namespace: str, cmd: list[str]) -> list[str]:
        """``cmd`` run inside ``namespace``."""
        return run_in(namespace, cmd)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@contextlib.contextmanager
def private_loopback() -> Iterator[str]:
    """A fresh namespace with only its own loopback: a robot's fixed defaults (domain 0,
    port 19850) there meet no other run's."""
    _need_root()
    ns = f"s2r-lo-{os.getpid() % 100000}"
    try:
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        yield ns
    finally:
        _remove(ns)


def run_in(namespace: str, cmd: list[str]) -> list[str]:
    """``cmd`` run inside ``namespace``."""
    return ["ip", "netns", "exec", namespace, *cmd]


def _need_root() -> None:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")


def _remove(ns: str) -> None:
    """End every process in ``ns``, then the namespace."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@contextlib.contextmanager
def robot_network() -> Iterator[RobotNetwork]:
    """Two fresh namespaces joined as Unitree wires a Go2, removed afterwards."""
    _need_root()
    tag = f"{os.getpid() % 100000}"
    net = RobotNetwork(robot=f"s2r-robot-{tag}", host=f"s2r-host-{tag}")
    robot_end, host_end = f"s2r-r{tag}", f"s2r-h{tag}"
    try:
        for ns in (net.robot, net.host):
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", robot_end, "type", "veth", "peer", "name", host_end)
        for ns, end, address in ((net.robot, robot_end, ROBOT_ADDRESS), (net.host, host_end, HOST_ADDRESS)):
            _ip("link", "set", end, "netns", ns)
            _ip("-n", ns, "addr", "add", address, "dev", end)
            _ip("-n", ns, "link", "set", end, "up")
        yield net
    finally:
        for ns in (net.robot, net.host):
            _remove(ns)
        subprocess.run(["ip", "link", "del", robot_end], capture_output=True)  # if it never moved
