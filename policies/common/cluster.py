"""Where many runs go: a local Ray instance kept on loopback, or an existing Ray cluster.

Every command that fans work out (``sim2real sweep``, ``--ray`` on the multi-seed
commands, ``eval --workers``) connects through :func:`connect`, so the address rules
and the errors are the same everywhere:

* no address (and no ``RAY_ADDRESS``): a local instance on this machine, every Ray
  process bound to 127.0.0.1 (Ray binds the machine's address otherwise), with usage
  statistics off (Ray reports them over the internet by default);
* ``HOST:PORT`` or ``ray://HOST:PORT`` (or ``RAY_ADDRESS``): that cluster, checked with
  one TCP connection first so an unreachable address is a one-line error before
  anything starts.

:func:`run_calls` runs a list of calls in this process, or as Ray tasks when a Ray
address is given; results come back in the order of the calls either way.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sim2real.errors import ConfigError

LOCAL = "local"
"""The ``--ray`` value (and the flag without a value) for a local Ray instance."""

_ADDRESS = re.compile(r"^(?:ray://)?(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9.\-]+):(?P<port>\d{1,5})$")

T = TypeVar("T")


def add_ray_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """``--ray [ADDR]``: run ``what`` as Ray tasks, locally or on a cluster."""
    parser.add_argument(
        "--ray", nargs="?", const=LOCAL, metavar="ADDR",
        help=f"run {what} as Ray tasks: alone, on a local Ray instance; with HOST:PORT (or ray://HOST:PORT), "
             "on that cluster (default without the flag: one after another in this process)",
    )


def resolve_address(address: str | None) -> str | None:
    """The cluster address to join (``None``: start a local instance).

    ``address`` is a flag's value: ``None`` or :data:`LOCAL` fall back to
    ``RAY_ADDRESS`` when it is set. Raises :class:`ConfigError` on a malformed or
    unreachable address.
    """
    if address in (None, LOCAL):
        address = os.environ.get("RAY_ADDRESS") or None
        if address is None or address == LOCAL:
            return None
    if address == "auto":  # Ray's own lookup of a cluster started on this machine (`ray start`)
        return address
    m = _ADDRESS.match(address)
    if m is None:
        raise ConfigError("ray address", f"{address!r} is not HOST:PORT or ray://HOST:PORT")
    host, port = m.group("host").strip("[]"), int(m.group("port"))
    if not 0 < port < 65536:
        raise ConfigError("ray address", f"port {port} of {address!r} is out of range")
    try:
        with socket.create_connection((host, port), timeout=3.0):
            pass
    except OSError as exc:
        raise ConfigError("ray address", f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None
    return address


def connect(address: str | None = None, num_cpus: int | None = None) -> None:
    """Initialise Ray in this process (once): a local loopback instance or the cluster at ``address``.

    ``num_cpus`` caps a local instance (default: every core); a cluster brings its own.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    target = resolve_address(address)
    if target is None:
        # Keep every Ray process on loopback: with this off Ray uses 127.0.0.1 as the
        # node address instead of the machine's (it is Ray's switch for single-node use).
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray

    if ray.is_initialized():
        return
    if target is None:
        ray.init(num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False, configure_logging=False)
    else:
        ray.init(address=target, log_to_driver=False, configure_logging=False)


def run_calls(fn: Callable[..., T], calls: Sequence[dict[str, Any]], ray_address: str | None,
              num_cpus: float = 1.0) -> list[T]:
    """``fn(**kwargs)`` for each of ``calls``: in order in this process when ``ray_address``
    is ``None``, else as Ray tasks of ``num_cpus`` each (locally for :data:`LOCAL`).

    A call that fails raises here, as it would in this process, after the others finished.
    """
    if ray_address is None:
        return [fn(**kwargs) for kwargs in calls]
    connect(ray_address)
    import ray

    remote = ray.remote(num_cpus=num_cpus, max_retries=0)(fn)
    refs = [remote.remote(**kwargs) for kwargs in calls]
    results: list[T] = []
    first_error: BaseException | None = None
    for ref in refs:
        try:
            results.append(ray.get(ref))
        except ray.exceptions.RayTaskError as exc:
            first_error = first_error or exc.as_instanceof_cause()
    if first_error is not None:
        raise first_error
    return results
