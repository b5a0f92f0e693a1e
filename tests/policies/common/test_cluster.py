"""Ray connection rules: addresses are checked before anything starts; a local
instance stays on loopback; calls return in order, in-process or as Ray tasks."""

from __future__ import annotations

import socket
import textwrap

import pytest

from sim2real.errors import ConfigError
from sim2real.policies.common import cluster


def _square(x: int) -> int:
    return x * x


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address", ["nohost", "host:port", "http://x:1", "1.2.3.4:99999"])
def test_malformed_address_is_one_line_error(address: str) -> None:
    with pytest.raises(ConfigError, match="ray address"):
        cluster.resolve_address(address)


def test_unreachable_address_is_an_error_before_ray_starts() -> None:
    port = _free_port()  # nothing listens there once the socket is closed
    with pytest.raises(ConfigError, match=f"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        cluster.resolve_address(f"127.0.0.1:{port}")


def test_local_falls_back_to_ray_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert cluster.resolve_address(None) is None
    assert cluster.resolve_address(cluster.LOCAL) is None
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    assert cluster.resolve_address(cluster.LOCAL) == "auto"


def test_run_calls_in_process_keeps_order() -> None:
    assert cluster.run_calls(_square, [{"x": i} for i in range(4)], None) == [0, 1, 4, 9]


def test_run_calls_as_ray_tasks_matches_in_process(ray_local) -> None:
    # A library function: Ray workers import it by name (a test module is not importable there).
    calls = [{"text": "the quick brown fox " * i, "width": 9} for i in range(5)]
    assert cluster.run_calls(textwrap.fill, calls, cluster.LOCAL) == cluster.run_calls(textwrap.fill, calls, None)


def test_local_instance_listens_on_loopback_only(ray_local) -> None:
    import psutil

    ray_pids = {p.pid for p in psutil.process_iter(["cmdline"])
                if any("ray" in part for part in (p.info["cmdline"] or [])[:3])}
    bound = {c.laddr.ip for c in psutil.net_connections("tcp") if c.pid in ray_pids and c.status == "LISTEN"}
    assert bound, "no Ray listening socket found"
    assert bound <= {"127.0.0.1", "::ffff:127.0.0.1", "::1"}, bound
