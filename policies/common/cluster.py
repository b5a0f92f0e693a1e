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
address is given; results come back in the order of the calls either way. The
multi-seed commands (``study passivity``, ``bench hil``, ``robustness``, the
baselines) all fan out through it. :func:`run_actors` does the same for objects that
hold state while they work (``eval --workers``: one batched simulation per actor).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sim2real.errors import ConfigError, Sim2RealError

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


class WorkerLostError(Sim2RealError):
    """A Ray worker (or its node) died running a call, more often than its retries allowed."""


def run_calls(fn: Callable[..., T], calls: Sequence[dict[str, Any]], ray_address: str | None,
              num_cpus: float = 1.0, max_retries: int = 0,
              on_result: Callable[[int, T], None] | None = None) -> list[T]:
    """``fn(**kwargs)`` for each of ``calls``: in order in this process when ``ray_address``
    is ``None``, else as Ray tasks of ``num_cpus`` each (locally for :data:`LOCAL`).
    Results come back in the order of the calls either way.

    ``on_result(i, result)`` sees each call's result as soon as it is there (in this
    process: in order; with Ray: in the order the tasks finish), so a command can save
    its progress as it goes.

    Failures: in this process the first failing call raises at once. With Ray the others
    run to the end (and ``on_result`` sees them), then the failure of the earliest call
    raises here: the exception the call raised itself (a :class:`ConfigError` stays one
    line in the CLI), not Ray's wrapper. ``max_retries``: how often Ray re-runs a call
    whose *worker died* (crash, out-of-memory kill, lost node; an exception the call
    raises is never retried). Only for idempotent calls: a training run that resumes from
    its run folder, an evaluation. Past the retries the loss raises :class:`WorkerLostError`.
    """
    if ray_address is None:
        results: list[T] = []
        for i, kwargs in enumerate(calls):
            results.append(fn(**kwargs))
            if on_result is not None:
                on_result(i, results[-1])
        return results
    connect(ray_address)
    import ray
    from ray import exceptions as ray_errors

    remote = ray.remote(num_cpus=num_cpus, max_retries=max_retries)(fn)
    index = {remote.remote(**kwargs): i for i, kwargs in enumerate(calls)}
    got: dict[int, T] = {}
    errors: dict[int, BaseException] = {}
    pending = list(index)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for ref in done:
            i = index[ref]
            try:
                got[i] = ray.get(ref)
            except ray_errors.RayError as exc:
                errors[i] = _unwrap(exc, getattr(fn, "__name__", "call"), i)
                continue
            if on_result is not None:
                on_result(i, got[i])
    if errors:
        raise errors[min(errors)]
    return [got[i] for i in range(len(calls))]


def run_actors(cls: type, inits: Sequence[dict[str, Any]], method: str, ray_address: str | None,
               num_cpus: float = 1.0, max_restarts: int = 0) -> list[Any]:
    """One ``cls(**init)`` per entry of ``inits``, each asked ``method()`` once; the answers
    in the order of ``inits``.

    With ``ray_address`` each object is a Ray actor of ``num_cpus`` (a process of its own,
    holding what it built, e.g. a batched simulation and a policy), all working at once;
    without, they run one after another here. ``max_restarts``: how often Ray rebuilds an
    actor whose process died and asks it again, for objects whose answer depends only on
    their ``init`` (a re-run gives the same answer). Errors as in :func:`run_calls`.
    """
    if ray_address is None:
        return [getattr(cls(**init), method)() for init in inits]
    connect(ray_address)
    import ray
    from ray import exceptions as ray_errors

    actor_cls = ray.remote(num_cpus=num_cpus, max_restarts=max_restarts, max_task_retries=max_restarts)(cls)
    actors: list[Any] = [actor_cls.remote(**init) for init in inits]
    try:
        refs = [getattr(a, method).remote() for a in actors]
        results: list[Any] = []
        errors: dict[int, BaseException] = {}
        for i, ref in enumerate(refs):
            try:
                results.append(ray.get(ref))
            except ray_errors.RayError as exc:
                errors[i] = _unwrap(exc, f"{cls.__name__}.{method}", i)
        if errors:
            raise errors[min(errors)]
        return results
    finally:
        for a in actors:
            ray.kill(a)


def _unwrap(exc: BaseException, what: str, i: int) -> BaseException:
    """The exception a Ray task raised itself, or :class:`WorkerLostError` for a lost worker."""
    from ray import exceptions as ray_errors

    if isinstance(exc, ray_errors.RayTaskError):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException) and not isinstance(cause, ray_errors.RayError):
            return cause
        return exc.as_instanceof_cause()
    lost = (ray_errors.WorkerCrashedError, ray_errors.RayActorError, ray_errors.NodeDiedError,
            ray_errors.OwnerDiedError, ray_errors.LocalRayletDiedError, ray_errors.ObjectLostError,
            ray_errors.OutOfMemoryError)
    if not isinstance(exc, lost):
        return exc
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return WorkerLostError(f"{what} #{i}: its Ray worker was lost ({type(exc).__name__}: {first})")
