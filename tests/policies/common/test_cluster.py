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


@pytest.mark.heavy
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


def _crash() -> None:
    """Kills the process it runs in: a Ray worker lost mid-task."""
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def test_results_reported_as_they_arrive_and_returned_in_order(ray_local) -> None:
    calls = [{"text": "ab " * i, "width": 4} for i in range(4)]
    seen: dict[int, list[str]] = {}
    got = cluster.run_calls(textwrap.wrap, calls, cluster.LOCAL, on_result=seen.__setitem__)
    assert got == [textwrap.wrap(**c) for c in calls] and seen == dict(enumerate(got))


def test_a_failing_task_raises_its_own_error_after_the_others(ray_local) -> None:
    seen: list[int] = []
    calls = [{"address": "127.0.0.1:1"}, {"address": "nohost"}, {"address": cluster.LOCAL}]
    with pytest.raises(ConfigError, match=r"^ray address: cannot reach") as info:
        cluster.run_calls(cluster.resolve_address, calls, cluster.LOCAL, on_result=lambda i, _: seen.append(i))
    assert type(info.value) is ConfigError and "\n" not in str(info.value)  # one line, not Ray's traceback
    assert seen == [2]


def test_a_lost_worker_is_retried_then_reported(ray_local) -> None:
    import sys

    from ray import cloudpickle  # Ray's own copy pickles its tasks

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # a test module is not importable on workers
    try:
        with pytest.raises(cluster.WorkerLostError, match=r"_crash #0: its Ray worker was lost"):
            cluster.run_calls(_crash, [{}], cluster.LOCAL, max_retries=1)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
