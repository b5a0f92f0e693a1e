"""Shared node machinery: lifecycle nodes that can start themselves, parameters
declared from plain dicts or dataclasses, throttled logging and a main() helper.

Clocks. Every timing decision (staleness, timeouts, rate limits, timers) uses the
node's *control clock*: the monotonic (steady) clock, or the simulation clock
(``/clock``) when ``use_sim_time`` is set. Never the wall clock: setting the system
time (NTP, an operator) would otherwise delay or trigger a watchdog. Header stamps are
still ROS time (what other nodes compare), and latencies measured against them use
:meth:`ManagedNode.stamp_now_s`.

Callbacks never end the executor: an exception in any subscription, timer or service
callback is caught, counted and logged (throttled), and :meth:`ManagedNode.callback_failed`
lets the node go to its safe state (the safety filter sends the safe action).

Lifecycle (managed) nodes: ``configure`` loads (models, policies, parameters),
``activate`` starts commanding, ``deactivate`` stops publishing, ``cleanup`` unloads.
With ``autostart: true`` (the default in config/*.yaml) a node configures and
activates itself, so ``ros2 launch`` needs no lifecycle manager; a manager (or
``ros2 lifecycle set``) can still drive it with ``autostart: false``.
"""

from __future__ import annotations

import array
import contextlib
import inspect
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import rclpy
from rclpy.clock import Clock
from rclpy.clock_type import ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn

from sim2real.errors import ConfigError
from sim2real.ros_nodes.node_log import NodeLogger
from sim2real.sim.core.schema import FieldSpec, coerce, fields_of

Params = dict[str, Any]


class ThrottledLog:
    """Logging that cannot raise, and ``log_throttled``, for an rclpy node (mixed in
    before the node class): :meth:`get_logger` is a :class:`~.node_log.NodeLogger`."""

    _throttle: dict[str, float]
    _safe_logger: NodeLogger

    def get_logger(self) -> NodeLogger:
        if not hasattr(self, "_safe_logger"):
            node: Any = super()  # the rclpy node class this is mixed into
            self._safe_logger = NodeLogger(node.get_logger())
        return self._safe_logger

    def log_throttled(self, key: str, message: str, period: float = 1.0, level: str = "warning") -> None:
        """Log ``message`` at most once per ``period`` seconds per ``key`` (first one always)."""
        if not hasattr(self, "_throttle"):
            self._throttle = {}
        t = time.monotonic()
        if t - self._throttle.get(key, -1e9) >= period:
            if len(self._throttle) > 4096:  # keys carry message fragments: never an unbounded table
                self._throttle.clear()
            self._throttle[key] = t
            self.get_logger().log(message, level)


class ManagedNode(ThrottledLog, LifecycleNode):
    """A lifecycle node with declared-parameter helpers and an ``active`` flag.

    Parameters are read at ``configure``. A parameter set while the node is configured
    is refused with the reason, never accepted and ignored, unless the node lists it in
    :attr:`live_parameters` and :meth:`apply_live` applies it (atomically, or refuses).
    """

    live_parameters: frozenset[str] = frozenset()
    """Parameters that may change while the node is configured (see :meth:`apply_live`)."""

    fixed_parameters: frozenset[str] = frozenset()
    """Parameters fixed when the node starts (declared ``read_only``)."""

    report_period: float = 1.0
    """s between two :meth:`report` calls while the node is active."""

    executor_priority: int | None = None
    """SCHED_FIFO priority of the node's executor where the system permits it
    (:func:`executor_realtime`): the policy -> filter -> robot path's nodes at
    :data:`~sim2real.hardware.realtime.EXECUTOR_PRIORITY`, the correction console's at
    :data:`~sim2real.hardware.realtime.OPERATOR_PRIORITY`; ``None``: normal scheduling."""

    def __init__(self, name: str, settings: type, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.active = False
        self.callback_errors = 0
        self.load_error = ""
        """Why the last ``configure`` failed (empty: it did not)."""
        self._loaded: list[Any] = []
        """What :meth:`load` created (destroyed at cleanup)."""
        from diagnostic_msgs.msg import DiagnosticArray

        from sim2real.ros_nodes.qos import status_qos

        self._pub_diag = self.create_publisher(DiagnosticArray, "diagnostics", status_qos())
        self.configured = False
        self.specs: dict[str, FieldSpec] = {}
        """Every declared setting's type, range and description (see :meth:`declare_settings`)."""
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.declare_settings(settings)
        self._sim_time = bool(self.get_parameter("use_sim_time").value)
        self.control_clock: Clock = self.get_clock() if self._sim_time else Clock(clock_type=ClockType.STEADY_TIME)
        """Monotonic, or the simulation clock with ``use_sim_time``: see the module docstring."""

    def declare_settings(self, settings: type) -> None:
        """Each field of dataclass ``settings`` as a parameter with its descriptor; the
        value from a parameter file or the command line is checked like every later set.

        Raises:
            ConfigError: an override has the wrong type or is out of range (one line,
                naming the node and the parameter).
        """
        from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

        from sim2real.ros_nodes.parameters import descriptor, ros_value

        for spec in fields_of(settings):
            self.specs[spec.name] = spec
            name = spec.name
            desc = descriptor(spec, live=name in self.live_parameters, read_only=name in self.fixed_parameters)
            try:
                self.declare_parameter(spec.name, ros_value(spec, spec.default), desc)
            except (InvalidParameterTypeException, InvalidParameterValueException) as exc:
                error = ConfigError(f"{self.get_name()}.{spec.name}", " ".join(str(exc).split()))
                # The node never finished construction: leave the context without it (a
                # subclass's destroy_node would reach for attributes it never set).
                ManagedNode.destroy_node(self)
                raise error from None

    def destroy_node(self) -> None:
        super().destroy_node()
        # rclpy's LifecycleNode leaves its state machine, which holds the rcl node, to the
        # garbage collector, and our nodes sit in reference cycles: the node outlived its
        # context by seconds to minutes. Its name stayed in the graph (the SROS2 reader saw
        # two `safety_filter`s) and the next node of that name in the process logged over
        # its dead /rosout publisher ("publisher's context is invalid": logs lost).
        self._state_machine.destroy_when_not_in_use()

    def check_overrides(self) -> None:
        """Refuse a parameter from a file or the command line that no node of the graph
        declares: ROS would ignore it silently, and a misspelt safety limit would then be
        the default while the operator believes it set.

        Raises:
            ConfigError: naming the unknown parameters and this node's own.
        """
        from sim2real.ros_nodes.settings import graph_parameter_names

        # rclpy keeps the overrides (parameter files, -p, parameter_overrides=) here and
        # has no public accessor; tests/ros_nodes/test_parameters.py pins it.
        given = set(getattr(self, "_parameter_overrides", {}))
        unknown = sorted(given - set(self._parameters) - graph_parameter_names())
        if unknown:
            raise ConfigError(f"{self.get_name()}", f"unknown parameter(s) {', '.join(unknown)}; "
                              f"this node's: {', '.join(sorted(self.specs))}")

    # -- callbacks that cannot kill the executor -------------------------------------------
    def _guarded(self, callback: Callable[..., Any], what: str, arity: int | None = None) -> Callable[..., Any]:
        """``callback`` that never raises into the executor. ``arity``: how many arguments
        rclpy passes (rclpy inspects the signature: a subscription whose callback takes two
        gets the message's ``MessageInfo``); ``None``: any."""
        def run(*args: Any) -> Any:
            try:
                return callback(*args)
            except Exception as exc:
                if not self.context.ok():  # Ctrl-C shut the context under a running callback: no failure
                    return args[1] if what.startswith("service") and len(args) == 2 else None
                self.callback_errors += 1
                self.log_throttled("cb:" + what, f"{what} callback failed: {type(exc).__name__}: {exc}",
                                   level="error")
                try:
                    self.callback_failed(what, exc)
                except Exception as inner:  # the safe reaction itself failed: say so, keep spinning
                    self.log_throttled("cbf:" + what, f"safe reaction to the failure failed: {inner!r}",
                                       level="fatal")
                if what.startswith("service") and len(args) == 2:  # rclpy must still answer
                    response = args[1]
                    if hasattr(response, "success"):
                        response.success, response.message = False, f"failed: {type(exc).__name__}: {exc}"
                    return response
                return None
        if arity == 0:  # a timer: rclpy passes a TimerInfo to a callback that can take one
            return lambda: run()
        if arity == 1:
            return lambda msg: run(msg)
        if arity == 2:
            return _with_message_info(run)
        return run

    def _on_set_parameters(self, params: list[Any]) -> Any:
        from rcl_interfaces.msg import SetParametersResult

        for p in params:  # the type and the closed range were checked by rclpy; the rest here
            spec = self.specs.get(p.name)
            if spec is not None:
                try:
                    coerce(_plain(p.value), spec.type, p.name)
                except ConfigError as exc:
                    return SetParametersResult(successful=False, reason=str(exc))
        if not self.configured:  # read at the next configure
            return SetParametersResult(successful=True)
        fixed = sorted(p.name for p in params if p.name not in self.live_parameters)
        if fixed:
            return SetParametersResult(successful=False, reason=(
                f"{', '.join(fixed)}: read at configure; deactivate and clean up {self.get_name()}, "
                "set it, then configure again"))
        try:
            reason = self.apply_live({p.name: _plain(p.value) for p in params})
        except Exception as exc:  # a refusal, never a half-applied change
            reason = f"{type(exc).__name__}: {exc}"
        if reason:
            self.get_logger().warning(f"parameter change refused: {reason}")
        else:
            self.get_logger().warning(f"parameters changed while configured: {sorted(p.name for p in params)}")
        return SetParametersResult(successful=not reason, reason=reason)

    def apply_live(self, changes: dict[str, Any]) -> str:
        """Apply ``changes`` (names in :attr:`live_parameters`) to the running node at once;
        return ``""`` or why they were refused (then nothing changed)."""
        return "no live parameters"

    def callback_failed(self, what: str, exc: Exception) -> None:
        """Called after a callback raised; nodes that command a robot go safe here."""

    def create_subscription(self, msg_type: Any, topic: str, callback: Callable[..., Any], qos_profile: Any,
                            message_info: bool = False, **kwargs: Any) -> Any:
        """rclpy's, with the callback guarded; ``message_info``: ``callback(msg, info)``
        receives each message's :class:`rclpy.subscription.MessageInfo` (its publisher's GID)."""
        if kwargs.get("event_callbacks") is None and _never_incompatible(qos_profile):
            # rclpy's default event handlers only warn about QoS incompatibility, which a
            # best-effort volatile subscription cannot have; each costs the executor two
            # wait-set entries on every spin (measured: a third of the filter's misses).
            from rclpy.event_handler import SubscriptionEventCallbacks

            kwargs["event_callbacks"] = SubscriptionEventCallbacks(use_default_callbacks=False)
        arity = 2 if message_info else 1
        return super().create_subscription(msg_type, topic, self._guarded(callback, f"subscription {topic}", arity),
                                           qos_profile, **kwargs)

    def drain(self, subscription: Any, limit: int = 16) -> int:
        """Run ``subscription``'s callback now on every message already waiting for it (at
        most ``limit``); returns how many. A watchdog calls this before it judges: rclpy's
        executor runs a node's ready timers before its subscriptions, and a deadman fired
        with a fresh command already waiting (0.4-0.6 ms old, measured under load)."""
        from rclpy.subscription import Subscription

        taken = 0
        try:
            with subscription.handle:
                while taken < limit:
                    pair = subscription.handle.take_message(subscription.msg_type, subscription.raw)
                    if pair is None:
                        break
                    taken += 1
                    with_info = subscription._callback_type is Subscription.CallbackType.WithMessageInfo
                    subscription.callback(*(pair if with_info else pair[:1]))
        except Exception as exc:  # a destroyed subscription at shutdown: nothing to drain
            if self.context.ok():
                self.log_throttled("drain", f"could not take waiting messages: {exc!r}", level="error")
        return taken

    def create_service(self, srv_type: Any, name: str, callback: Callable[..., Any], *args: Any,
                       **kwargs: Any) -> Any:
        return super().create_service(srv_type, name, self._guarded(callback, f"service {name}"), *args, **kwargs)

    def create_control_timer(self, period: float, callback: Callable[[], Any]) -> Any:
        """A timer on the control clock (monotonic, or sim time), guarded like every callback."""
        return self.create_timer(period, self._guarded(callback, "timer", 0), clock=self.control_clock)

    def param(self, name: str) -> Any:
        return self.get_parameter(name).value

    def params(self, names: list[str] | None = None) -> Params:
        """Current values of ``names`` (default: every declared setting)."""
        return {n: self.param(n) for n in (names if names is not None else self.specs)}

    def now_s(self) -> float:
        """The control clock in seconds: monotonic, or sim time with ``use_sim_time``."""
        if not self._sim_time:  # CLOCK_MONOTONIC, the steady clock's source, without a Time object
            return time.monotonic()
        return self.control_clock.now().nanoseconds * 1e-9

    def stamp_now_s(self) -> float:
        """ROS time in seconds, comparable with other nodes' header stamps (measurements
        only: never a timing decision)."""
        if not self._sim_time:  # ROS time is the system clock then
            return time.time()
        return self.get_clock().now().nanoseconds * 1e-9


    def publish_status(self, level: int, message: str, values: dict[str, Any]) -> None:
        """One DiagnosticStatus named after this node on ``diagnostics``."""
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        # `level` is a byte field: rclpy accepts an int here but it does not survive
        # serialization (2 arrived as 237 over DDS), so send the byte itself.
        status = DiagnosticStatus(level=bytes([level]), name=self.get_name(), message=message, hardware_id="sim2real")
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._pub_diag.publish(msg)

    def autostart(self) -> None:
        """Configure and activate now when the ``autostart`` parameter is true.

        Raises:
            SystemExit: configuring failed. A node that cannot load its policy or
                configuration must end its process with one clear line and a non-zero
                exit (launch then reports it), not idle unconfigured while the robot waits.
        """
        if not self.param("autostart"):
            return
        if self.trigger_configure() != TransitionCallbackReturn.SUCCESS:
            raise SystemExit(f"{self.get_name()}: cannot start: {self.load_error or 'configure failed'}")
        if self.trigger_activate() != TransitionCallbackReturn.SUCCESS:
            raise SystemExit(f"{self.get_name()}: cannot start: activate failed")

    # Subclasses implement load()/unload() and start()/stop(); failures abort the transition.
    def load(self) -> None: ...
    def unload(self) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...

    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        before = self._entities()
        try:
            self.check_overrides()
            self.load()
        except Exception as exc:  # the caller decides: autostart exits, a lifecycle manager retries
            from sim2real.extras import describe_error

            self.load_error = describe_error(exc)  # a missing extra says which to install
            self.get_logger().error(f"configure failed: {self.load_error}")
            self._loaded = [e for key, e in self._entities().items() if key not in before]
            self._destroy_loaded()  # a retry creates them again
            return TransitionCallbackReturn.FAILURE
        self._loaded = [e for key, e in self._entities().items() if key not in before]
        self.load_error = ""
        self.configured = True
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.start()
        self.active = True
        self._stop_reports()
        self._report_timer = self.create_control_timer(self.report_period, self.report)
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        self._stop_reports()
        self.stop()
        return TransitionCallbackReturn.SUCCESS

    def _stop_reports(self) -> None:
        timer = getattr(self, "_report_timer", None)
        if timer is not None:
            self.destroy_timer(timer)
        self._report_timer = None

    def report(self) -> None:
        """The node's status on ``diagnostics``, every :attr:`report_period` while active:
        what the operator reads, and the heartbeat ``deploy`` watches (a node silent for
        5 s ends the run). Nodes with figures override it; this one says it is alive."""
        summary: Any = getattr(self, "summary", None)
        values: Any = summary() if summary is not None else {}
        self.publish_status(0, "active", values)

    def scheduling(self) -> dict[str, Any]:
        """How the node's executor is scheduled (for its report): ``SCHED_FIFO 30`` or why not."""
        status = getattr(self, "realtime_status", None)
        return {"scheduling": status.line() if status is not None else "normal"}

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.configured = False
        self.unload()
        self._destroy_loaded()
        return TransitionCallbackReturn.SUCCESS

    def _entities(self) -> dict[int, Any]:
        """The node's publishers, subscriptions, services, clients and timers, by id."""
        kinds = (self.publishers, self.subscriptions, self.services, self.clients, self.timers)
        return {id(e): e for kind in kinds for e in kind}

    def _destroy_loaded(self) -> None:
        """Destroy what :meth:`load` created. A reconfigured node creates its endpoints
        again; the old ones kept would answer ``~/enable`` twice and run every command's
        callback twice (and a configure that failed half-way would leave them behind)."""
        from rclpy.client import Client
        from rclpy.publisher import Publisher
        from rclpy.service import Service
        from rclpy.subscription import Subscription
        from rclpy.timer import Timer

        destroy: list[tuple[type, Any]] = [
            (Publisher, self.destroy_publisher), (Subscription, self.destroy_subscription),
            (Service, self.destroy_service), (Client, self.destroy_client), (Timer, self.destroy_timer)]
        for entity in self._loaded:
            next(d for cls, d in destroy if isinstance(entity, cls))(entity)
        self._loaded = []

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.active = False
        return TransitionCallbackReturn.SUCCESS

    def wind_down(self) -> None:
        """Leave the way deactivate and cleanup would (timers stopped, files closed, the
        robot link released), when the process ends with the node still up. Never raises:
        each step that fails is logged and the next one still runs."""
        steps = [("stop", self.stop), ("reports", self._stop_reports)] if self.active else []
        steps += [("unload", self.unload)] if self.configured else []
        self.active = self.configured = False
        for what, step in steps:
            try:
                step()
            except Exception as exc:
                self.get_logger().error(f"shutdown: {what} failed: {type(exc).__name__}: {exc}")


def _plain(value: Any) -> Any:
    """A parameter's value as the settings' loader reads it: rclpy hands array parameters
    over as ``array.array`` (a live change of a list limit was refused as "not a list")."""
    return list(value) if isinstance(value, array.array) else value


def _never_incompatible(qos: Any) -> bool:
    """A subscription QoS that every publisher's QoS matches (best effort, volatile, no
    deadline or liveliness lease)."""
    from rclpy.duration import Infinite
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    if not isinstance(qos, QoSProfile):
        return False
    unset = (Infinite, None)
    return (qos.reliability == ReliabilityPolicy.BEST_EFFORT and qos.durability == DurabilityPolicy.VOLATILE
            and (qos.deadline in unset or qos.deadline.nanoseconds == 0)
            and (qos.liveliness_lease_duration in unset or qos.liveliness_lease_duration.nanoseconds == 0))


def percentiles_ms(seconds: Any, deadline: float = 0.0) -> dict[str, float]:
    """p50/p99/max in milliseconds (NaN when empty); with ``deadline`` (s) also the
    number of samples above it."""
    import numpy as np

    from sim2real.ros_nodes.latency import LatencyStats

    if isinstance(seconds, LatencyStats):
        return seconds.summary_ms()
    a = np.asarray(list(seconds), dtype=np.float64) * 1e3
    out: dict[str, float] = {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan"), "n": len(a)}
    if len(a):
        out.update(p50_ms=round(float(np.percentile(a, 50)), 4), p99_ms=round(float(np.percentile(a, 99)), 4),
                   max_ms=round(float(a.max()), 4))
    if deadline > 0:
        out["over_deadline"] = int(np.sum(a > deadline * 1e3))
    return out


@contextlib.contextmanager
def executor_realtime(name: str, nodes: list[Any]) -> Iterator[Any]:
    """The calling thread (an executor's) at real-time priority while it spins, when any
    of ``nodes`` asks for it (``executor_priority``, the highest of them) and the system
    permits it (:mod:`sim2real.hardware.realtime`: SCHED_FIFO, the control path's at
    ``EXECUTOR_PRIORITY``, below the loops that write to the robot; memory locked; the
    collector's old objects frozen). A normal-priority executor in a process with a
    real-time thread (the console's web server) stalls that thread too: preempted while
    it holds the GIL, it keeps the GIL until a competitor lets it run again.
    Fast DDS's listener threads (:data:`~sim2real.hardware.realtime.FAST_DDS_RECEIVE_THREADS`)
    go one priority below the executor: they deliver every message it waits for, and at
    normal priority a loaded machine delays them (p99 60 ms instead of 3.6 ms state ->
    command, ``sim2real bench deploy --load 4``). Without the privilege: one warning,
    normal scheduling, and the node's report says why."""
    priorities = [p for n in nodes if (p := getattr(n, "executor_priority", None)) is not None]
    if not priorities:
        yield None
        return
    from sim2real.hardware.realtime import FAST_DDS_RECEIVE_THREADS, realtime_thread

    with realtime_thread(f"{name} executor", max(priorities), cpu=None,
                         helpers=FAST_DDS_RECEIVE_THREADS) as status:
        for node in nodes:
            node.realtime_status = status
        yield status


EXECUTORS = ("events", "single", "multi")
"""rclpy executors a node may spin in (``SIM2REAL_EXECUTOR`` for a node process)."""


def make_executor(kind: str, context: Any = None, threads: int = 2) -> Any:
    """An rclpy executor: ``"events"``, ``"single"`` or ``"multi"`` (``threads``).

    A node process spins in ``"events"``, rclpy's C++ EventsExecutor: callbacks run in
    the order their events arrived, without rebuilding a wait set of every entity (15
    services, the subscriptions, timers, QoS events) on each wake. Measured on the Go2's
    emulated stock pairing, idle: the wait-set ``SingleThreadedExecutor`` let the policy's
    commands reach the bridge 465 ms late at p99 and tripped the 60 ms watchdog 131 times
    in 30 s (the robot never walked); the events executor 28 ms and 3 trips (it walked).
    ``SIM2REAL_EXECUTOR=single`` brings the wait-set executor back for comparison.

    Raises:
        ConfigError: an unknown ``kind``.
    """
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor

    if kind == "events":
        from rclpy.experimental.events_executor import EventsExecutor

        return EventsExecutor(context=context)
    if kind == "single":
        return SingleThreadedExecutor(context=context)
    if kind == "multi":
        return MultiThreadedExecutor(num_threads=threads, context=context)
    raise ConfigError("executor", f"{kind!r} is not one of {', '.join(EXECUTORS)}")


def _with_message_info(run: Callable[..., Any]) -> Callable[..., Any]:
    """``run(msg, info)`` as a subscription callback that rclpy recognizes as taking the
    message's info (it binds the signature) under either executor: rclpy's wait-set
    executors call ``callback(msg, info)``, its EventsExecutor (Kilted) calls
    ``callback((msg, info))`` with the pair as one argument."""
    def taking(*args: Any) -> Any:
        return run(*args[0]) if len(args) == 1 else run(*args)

    two = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in ("msg", "info")]
    taking.__signature__ = inspect.Signature(two)  # type: ignore[attr-defined]
    return taking


def run_node(factory: Callable[[], ManagedNode], args: list[str] | None = None) -> int:
    """Spin one node until a stop signal (the body of each node module's ``main``); 0 on a
    clean end, SIGINT and SIGTERM at any moment included.

    The node process owns its signals (:mod:`~sim2real.ros_nodes.process_life`): until
    the ROS context exists SIGINT and SIGTERM end it at once, from then on they are only
    noted (Ctrl-C reaches every process of the terminal's group and ``ros2 launch`` may
    send another), and the process gets SIGTERM when its parent ends. rclpy installs no
    handler of its own: its handler shut the context down under a running callback,
    which then failed (``RCLError: context is invalid``), and left
    :meth:`ManagedNode.wind_down` a dead context. Here the loop ends between two
    callbacks, within ``poll`` s of the signal, then the node winds down (its safe
    state, files closed) while the context still works, then the context ends.
    """
    from rclpy.signals import SignalHandlerOptions

    from sim2real.ros_nodes.process_life import end_with_parent, ignore_stop_signals, note_stop_signals

    poll = 0.1  # s: the longest the node spins on after a stop signal (its wait wakes to look)
    stop = note_stop_signals()
    end_with_parent(signal.SIGTERM)
    stop.running()
    rclpy.init(args=args if args is not None else sys.argv, signal_handler_options=SignalHandlerOptions.NO)
    try:
        executor = make_executor(os.environ.get("SIM2REAL_EXECUTOR", "events"))
        node = factory()
    except ConfigError as exc:  # a bad parameter: one line and a non-zero exit, nothing started
        rclpy.shutdown()
        raise SystemExit(f"cannot start: {exc}") from None
    try:
        if not stop.requested:
            node.autostart()
        executor.add_node(node)
        with executor_realtime(node.get_name(), [node]):
            while not stop.requested and rclpy.ok():
                executor.spin_once(timeout_sec=poll)
    except ExternalShutdownException:  # another part of the process ended the context: an end too
        pass
    finally:
        executor.shutdown()
        node.wind_down()
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        # Ignored rather than restored: a late SIGINT (launch's, after the terminal's)
        # while Python finalizes would meet the default action and turn 0 into -2.
        ignore_stop_signals()
    return 0
