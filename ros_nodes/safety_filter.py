"""``safety_filter``: the only path from any command source to the robot.

Command inputs (all enter the chain's command mux, :mod:`sim2real.policies.safety.mux`;
the highest-priority source that spoke within its ``*_hold`` seconds has control):

* ``raw_command`` (std_msgs/Float64MultiArray): the policy, priority 10;
* ``command_twist`` (geometry_msgs/Twist): a joystick or teleop device, priority 50,
  for command spaces with Cartesian velocities (the arm's ``ee_delta``/``ee_impedance``);
* ``teleop_command`` (Float64MultiArray, the ``command`` layout): a teleoperation
  console, priority 100.

It subscribes the robot's state topics and publishes ``command`` after the robot's
filter chain (:mod:`sim2real.policies.safety`). A command is filtered and sent on every
state message (so a fresh measurement re-bounds it, like a ros2_control update) and/or
as soon as it arrives (``publish_on``: ``state``, ``command`` or ``both``). A timer every
quarter control period runs the watchdog, so a dead source or a frozen state stream
gives the safe action within 3 control periods (2.25 nominal). All timing uses the
control clock (monotonic, or sim time with ``use_sim_time``), never the wall clock.

E-stop: ``estop`` (std_msgs/Bool, ``true`` trips; ``false`` tells that the button was
released; sources publish it transient-local, :func:`~.qos.estop_qos`, so their state
outlives a filter restart) and the std_srvs/Trigger services ``~/trip_estop`` and
``~/reset``. Only ``~/reset`` clears the e-stop and the latched guards (fall, geofence,
latched watchdog), and it refuses while the cause is still present, including while any
e-stop source (each writer of ``estop``, told apart by its DDS GID) still asserts it or
is a durable writer not heard yet (:mod:`~.estop_sources`). Latches are written to
``latch_file`` the moment they latch, and a (re)configured node restores them, so no
lifecycle transition, restart or crash clears one. ``diagnostics``
(diagnostic_msgs/DiagnosticArray) reports the mode, the source in control, which
filters acted and by how much, and every rejected input.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import fields
from typing import Any

import numpy as np
from geometry_msgs.msg import Twist
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from sim2real.hardware.realtime import EXECUTOR_PRIORITY
from sim2real.policies.safety import PARAMS, SafetyChain, SafetyState, command_space, make_chain, params_from_dict
from sim2real.policies.safety.guards import stream_stopped
from sim2real.policies.safety.latch import LatchStore, default_latch_path
from sim2real.policies.safety.mux import CommandSource
from sim2real.policies.safety.tightening import directions
from sim2real.policies.safety.types import ChainOutput
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.base import ManagedNode, percentiles_ms, run_node
from sim2real.ros_nodes.command_gate import graph_query
from sim2real.ros_nodes.estop_sources import EStopSources
from sim2real.ros_nodes.hard_limits import HardLimits
from sim2real.ros_nodes.latency import LatencyStats
from sim2real.ros_nodes.qos import command_qos, estop_qos, status_qos
from sim2real.ros_nodes.settings import SafetyFilterSettings
from sim2real.ros_nodes.state_input import StateStreams
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import RobotDeployment

SOURCES = (("policy", 10, "raw_command"), ("twist", 50, "command_twist"), ("teleop", 100, "teleop_command"))
"""(source, priority, topic) of every command input, lowest priority first."""
TOPICS = {name: topic for name, _, topic in SOURCES}


class SafetyFilterNode(ManagedNode):
    executor_priority = EXECUTOR_PRIORITY
    fixed_parameters = frozenset({"robot"})
    """The robot decides which safety parameters exist: fixed at start."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("safety_filter", SafetyFilterSettings, **kwargs)
        # The safety parameters depend on the robot: declare them once `robot` is known
        # (declaring applies the overrides from the parameter file or the command line).
        robot = str(self.param("robot"))
        robot_deployment(robot)
        self.limit_names = [f.name for f in fields(PARAMS[robot])]
        self.hard_limits = HardLimits(directions(PARAMS[robot]))
        self.live_parameters = frozenset(self.hard_limits.directions)
        """Limits that may be tightened while configured (:meth:`apply_live` rebuilds the chain);
        the others are fixed at configure."""
        self.declare_settings(PARAMS[robot])
        self.robot_name = robot
        self.chain: SafetyChain | None = None
        """Built at the first configure and kept until the node is destroyed (latches too)."""
        self.state = SafetyState(now=0.0)
        self.stats: Counter[str] = Counter()
        self.max_change = 0.0
        self._window_change = 0.0
        self.processing = LatencyStats()
        """Seconds from an input's callback to the command's publish."""
        self.state_latency = LatencyStats()
        """Seconds from a state message's header stamp (its sender's clock) to the command it
        triggered being published: state message in -> command message out."""
        self._state_sent = 0.0
        self.last_output: ChainOutput | None = None
        self.safe_since: float | None = None
        self.safe_reasons: deque[tuple[float, str]] = deque(maxlen=100)
        """(node time, reason) of each start of the safe action (the latest 100)."""
        self.outputs = 0
        self.estop_sources = EStopSources(graph_query(self, self.resolve_topic_name("estop")))
        """Each ``estop`` writer's latest state (a pressed button refuses the reset)."""
        self.latch_store: LatchStore | None = None
        self.latched_at = 0.0
        """Unix s when the guards latched (none latched before; ``0``: none latched now)."""
        self._timers: list[Any] = []
        self._subscribed = False

    # -- lifecycle ---------------------------------------------------------------------------
    def load(self) -> None:
        robot = self.param("robot")
        if robot != self.robot_name:
            raise ValueError(f"parameter robot={robot!r} but the node was built for {self.robot_name!r}")
        info = robot_deployment(robot)
        mode = self.param("action_mode") or info.action_mode
        self.space = command_space(robot, mode, self.param("action_scale") or None)
        safety = self.params(self.limit_names)
        self.hard_limits.configure(self, safety)
        sources = [CommandSource(name, priority, float(self.param(f"{name}_hold"))) for name, priority, _ in SOURCES]
        previous = self.chain
        chain = make_chain(self.space, params_from_dict(robot, safety), sources,
                           estop=previous.estop if previous is not None else None)
        self.chain = chain
        self._restore_latches(previous, chain)
        self.joints = info.joints
        self.n_joints = info.safety_joints
        deadline = float(self.param("latency_deadline"))
        self.state_latency = LatencyStats(deadline)
        if not self._subscribed:  # subscriptions survive cleanup -> configure; make them once
            self._subscribe(info)
        self.report_period = 1.0 / float(self.param("diagnostics_rate"))  # the base's timer: report()
        publish_on = self.param("publish_on")
        if publish_on not in ("state", "command", "both"):
            raise ValueError(f"publish_on must be state, command or both, got {publish_on!r}")
        self._msg = M.command_array(np.zeros(self.space.size), self.space.names)
        self.on_state = publish_on in ("state", "both")
        self.on_command = publish_on in ("command", "both")
        self.get_logger().info(f"{robot} {mode}: guards {[g.name for g in chain.guards]}, "
                               f"limits {[f.name for f in chain.limits]}; sources "
                               + ", ".join(f"{t} ({n}, priority {p})" for n, p, t in SOURCES))

    def _subscribe(self, info: RobotDeployment) -> None:
        # Attitude and body rates also from the IMU: they stay fresh when odometry is lost.
        self.streams = StateStreams(self, info, self._on_state, imu=True, on_reject=self._reject_state)
        self.primary = "joint_states" if info.joints else "odom"
        # The state is as old as its oldest required stream; nothing runs before all arrived.
        self.required = [t for t, has in (("joint_states", bool(info.joints)), ("odom", info.floating_base),
                                          ("ee_pose", info.has_ee)) if has]
        self.arrivals: dict[str, float] = {}
        self.inputs = [
            self.create_subscription(Float64MultiArray, "raw_command", lambda m: self._on_command(m, "policy"),
                                     command_qos()),
            self.create_subscription(Float64MultiArray, "teleop_command", lambda m: self._on_command(m, "teleop"),
                                     command_qos()),
            self.create_subscription(Twist, "command_twist", self._on_twist, command_qos()),
            *self.streams.subscriptions]
        """The command and state inputs: the watchdog drains them before it judges."""
        # A transient-local reader gets each durable source's state even after a restart, but
        # does not match a volatile writer; the volatile reader takes those.
        self.create_subscription(Bool, "estop", self._on_estop, estop_qos(depth=64), message_info=True)
        self.create_subscription(Bool, "estop", self._on_estop, status_qos(), message_info=True)
        self.create_service(Trigger, "~/trip_estop", self._srv_trip)
        self.create_service(Trigger, "~/reset", self._srv_reset)
        self.create_service(Trigger, "~/reset_stats", self._srv_reset_stats)
        self.pub = self.create_publisher(Float64MultiArray, "command", command_qos(self.param("command_deadline")))
        self._subscribed = True

    def apply_live(self, changes: dict[str, Any]) -> str:
        """New safety limits, all at once: each must stay within its hard limit (only
        tightening, :mod:`~sim2real.policies.safety.tightening`); the chain is rebuilt from
        the merged values (its filters validate them: an invalid value refuses the whole
        change) and swapped in between two passes, carrying the e-stop, the sources'
        commands and the last output (so rate limits continue from it). Refused while the
        safe action runs: a landing or stand-down finishes under the limits it started
        with. Each change is logged with its old value (and is on ``/parameter_events``,
        which the recorder records)."""
        chain = self.configured_chain()
        if chain.mode == "safe" or chain.latched():
            return "the safe action is running (or a latch is set): reset first, then change limits"
        loosened = self.hard_limits.refuse(changes)
        if loosened:
            return loosened
        values = self.params(self.limit_names)
        old = {n: values[n] for n in changes}
        values.update(changes)
        try:
            new = make_chain(self.space, params_from_dict(self.robot_name, values), chain.mux.sources,
                             estop=chain.estop)
        except (ValueError, TypeError) as exc:  # ConfigError included
            return f"invalid: {exc}"
        new.command, new.command_stamp, new.mux, new.mode = chain.command, chain.command_stamp, chain.mux, chain.mode
        new.rejected, new.dropped_during_estop = chain.rejected, chain.dropped_during_estop
        if chain.last_output is not None:
            new.last_output = chain.last_output.copy()
            for f in new.filters:
                f.observe_output(new.last_output, self.state)
        new.on_latch_change = self._persist_latches
        self.chain = new
        self.get_logger().warning("safety limits tightened: " + ", ".join(f"{n} {old[n]} -> {v}"
                                                                           for n, v in changes.items()))
        return ""

    def configured_chain(self) -> SafetyChain:
        """The chain; only callbacks made at configure call this, so it exists."""
        if self.chain is None:
            raise RuntimeError("the safety filter is not configured")
        return self.chain

    def _restore_latches(self, previous: SafetyChain | None, chain: SafetyChain) -> None:
        """Latches of the previous chain and of the latch file trip the new chain's e-stop."""
        path = self.param("latch_file") or str(default_latch_path(self.get_fully_qualified_name(), self.robot_name,
                                                                  self.context.get_domain_id()))
        store = self.latch_store = LatchStore(path)
        carried = [r for r in (previous.latched() if previous is not None else []) if not r.startswith("estop:")]
        reasons = [r.removeprefix("estop: ") for r in dict.fromkeys(carried + store.load())]
        if reasons and not chain.estop.tripped:
            # One e-stop holds them all; its reason round-trips through the file unchanged.
            chain.trip_estop("; ".join(reasons))
        if reasons:
            self.get_logger().error(f"starting latched ({path}): {'; '.join(reasons)}; call ~/reset to clear")
        chain.on_latch_change = self._persist_latches
        self._persist_latches(chain.latched())

    def _persist_latches(self, reasons: list[str]) -> None:
        store = self.latch_store
        if store is None:  # the store is made before the first chain can latch
            raise RuntimeError("latches changed before the latch file was chosen")
        if bool(reasons) != bool(self.latched_at):
            self.latched_at = time.time() if reasons else 0.0
            if self.active:  # said at once: a simulator counts the episodes it holds apart
                self.publish_diagnostics()
        try:
            store.save(reasons)
        except OSError as exc:  # the latch still holds in memory; a restart would lose it: say so loudly
            self.stats["latch_write_errors"] += 1
            self.log_throttled("latch_write", f"cannot persist latches to {store.path}: {exc}", level="error")

    def start(self) -> None:
        # Checked every quarter period: with the 2-period timeout the safe action starts
        # within 2.25 periods, leaving scheduling slack below the 3-period requirement.
        self._timers = [self.create_control_timer(self.space.control_dt / 4, self._tick)]

    def stop(self) -> None:
        for t in self._timers:
            self.destroy_timer(t)
        self._timers = []

    def callback_failed(self, what: str, exc: Exception) -> None:
        self.stats["callback_errors"] += 1

    # -- inputs ------------------------------------------------------------------------------------
    def _reject_state(self, topic: str, reason: str) -> None:
        self.stats["rejected_state"] += 1

    def _on_state(self, topic: str, values: dict[str, np.ndarray | None], header: Any) -> None:
        now = self.now_s()
        if topic == "joint_states":  # the guards cover the first n joints (the arm's fingers: the gripper)
            values = {name: None if v is None else v[: self.n_joints] for name, v in values.items()}
        self.state.set(now, **values)
        if topic == self.primary:
            self._state_sent = M.stamp_to_sec(header.stamp)
        if topic in ("joint_states", "odom", "ee_pose"):
            self._state_arrived(topic, now)

    def _state_arrived(self, topic: str, now: float) -> None:
        t0 = time.perf_counter()
        self.arrivals[topic] = now
        if len(self.arrivals) < len(self.required):
            return
        # Re-dated on every stream, not only the primary: the bridge publishes odom just
        # after joint_states, and dating at joint_states alone aged the state by a period.
        self.state.state_stamp = min(self.arrivals.values())
        if self.on_state and topic == self.primary:
            self._run(t0, from_state=True)

    def _offer(self, source: str, values: Any, names: list[str] | None, t0: float) -> None:
        if self.chain is None:
            return
        reason = self.chain.offer(source, values, self.now_s(), names)
        if reason:
            kind = reason.split(":")[0].split(" ")[0]  # e-stop | overridden | the validation error
            kind = {"e-stop": "dropped", "overridden": "overridden"}.get(kind, "rejected")
            self.stats[kind] += 1
            if kind != "overridden":
                self.log_throttled(f"{source}{kind}{reason[:12]}", f"{kind} {TOPICS[source]}: {reason}",
                                   level="warning" if kind == "dropped" else "error")
            return
        if self.on_command:
            self._run(t0)

    def _on_command(self, msg: Float64MultiArray, source: str) -> None:
        self._offer(source, msg.data, M.command_labels(msg), time.perf_counter())

    def _on_twist(self, msg: Twist) -> None:
        t0 = time.perf_counter()
        lin, ang = M.twist_arrays(msg)
        last = self.chain.last_output if self.chain is not None else None
        command = self.space.twist_command(lin, ang, last)
        if command is None:
            self.stats["rejected"] += 1
            self.log_throttled("twist", f"rejected command_twist: {self.space.robot} {self.space.action_mode} "
                                        f"has no Cartesian velocity command", level="error")
            return
        self._offer("twist", command, None, t0)

    def _on_estop(self, msg: Bool, info: Any) -> None:
        pressed = self.estop_sources.said(info, bool(msg.data))
        if pressed:
            self.get_logger().error(f"e-stop pressed on {pressed}")
        if msg.data:
            self.trip(f"estop pressed on {pressed}" if pressed else "estop topic")

    def _srv_trip(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.trip("trip_estop service")
        response.success, response.message = True, "e-stop latched; call ~/reset to clear"
        return response

    def _srv_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.state.now = self.now_s()
        refusals = self.estop_sources.refusals()
        done, names = self.configured_chain().reset(self.state, bool(refusals))
        if not done:
            if refusals:
                names = [n if not n.startswith("estop:") else f"estop: {'; '.join(refusals)}" for n in names]
            self.get_logger().error(f"operator reset refused: {'; '.join(names)}")
            response.success, response.message = False, "refused: " + "; ".join(names)
            return response
        self.get_logger().warning(f"operator reset: cleared {names or 'nothing'}")
        response.success, response.message = True, f"cleared {names}"
        return response

    def _srv_reset_stats(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.stats.clear()
        self.processing.clear()
        self.state_latency.clear()
        self.max_change = 0.0
        response.success, response.message = True, "statistics cleared"
        return response

    def trip(self, reason: str) -> None:
        chain = self.configured_chain()
        if not chain.estop.tripped:
            self.get_logger().error(f"E-STOP: {reason}")
        chain.trip_estop(reason)
        self._run(time.perf_counter())

    # -- output ----------------------------------------------------------------------------------------
    def _tick(self) -> None:
        # The watchdog's clock: with no input at all, this is what notices. Safe action,
        # latched guards and e-stop are re-sent from here; nominal output comes from inputs,
        # so while nominal and fresh a tick only asks the watchdog (the rest runs per input).
        chain = self.chain
        if chain is None or not self.active:
            return
        if chain.mode == "nominal" and not chain.estop.tripped:
            if self._fresh(chain):
                return
            for sub in self.inputs:  # what has arrived counts before staleness is judged
                self.drain(sub)
            if self._fresh(self.configured_chain()):
                return
        self._run(time.perf_counter(), only_safe=True)

    def _fresh(self, chain: SafetyChain) -> bool:
        self.state.now = self.now_s()
        self.state.command_stamp = chain.command_stamp
        return not chain.watchdog.check(self.state)

    def _run(self, t0: float, only_safe: bool = False, from_state: bool = False) -> None:
        if not self.active or self.chain is None:
            return
        self.state.now = self.now_s()
        out = self.chain.step(self.state, only_safe=only_safe)
        if out.command is None:
            return
        self._msg.data = out.command  # one message, re-filled: the layout (names) never changes
        self.pub.publish(self._msg)
        self.processing.record(time.perf_counter() - t0)
        if from_state:
            self.state_latency.record(self.stamp_now_s() - self._state_sent)
            self.stats["states_answered"] += 1
        self.outputs += 1
        self._count(out)

    def _count(self, out: ChainOutput) -> None:
        self.stats["steps"] += 1
        self.stats[f"mode_{out.mode}"] += 1
        if out.mode == "safe":
            if self.safe_since is None:
                self.safe_since = self.state.now
                self.safe_reasons.append((self.state.now, out.reason))
                if "watchdog" in out.reason and stream_stopped(out.reason):  # not the wait for the first
                    self.stats["watchdog_trips"] += 1
                self.get_logger().warning(f"safe action: {out.reason}")
        elif self.safe_since is not None:
            self.get_logger().info("nominal again")
            self.safe_since = None
        if out.intervened:
            self.stats["interventions"] += 1
            for name in out.acted_names():
                self.stats[f"acted_{name}"] += 1
        if out.change > self.max_change:
            self.max_change = out.change
        if out.change > self._window_change:
            self._window_change = out.change
        self.last_output = out

    def summary(self) -> dict[str, Any]:
        """Flat counters (also the diagnostics' key-values)."""
        out = self.last_output
        chain = self.chain
        values: dict[str, Any] = {
            "mode": out.mode if out is not None else "idle",
            "estop": chain.estop.tripped if chain else False,
            "latched": "; ".join(chain.latched()) if chain else "",
            "latched_at": round(self.latched_at, 3),
            "source": chain.mux.active_name if chain else "",
            "rejected": chain.rejected if chain else 0,
            "dropped_during_estop": chain.dropped_during_estop if chain else 0,
            "bad_state_fields": chain.bad_state if chain else 0,
            "internal_errors": chain.internal_errors if chain else 0,
            "max_change_total": round(self.max_change, 6), **self.scheduling(),
            **({f"source_{k}": v for k, v in sorted(chain.mux.counts.items())} if chain else {}),
            **{k: v for k, v in sorted(self.stats.items())},
        }
        for f in chain.filters if chain else []:  # filters with their own state (e.g. the energy tank)
            status = getattr(f, "status", None)
            if status is not None:
                values.update({k: round(float(v), 6) for k, v in status().items()})
        values.update({f"processing_{k}": v for k, v in percentiles_ms(self.processing).items()})
        values.update({f"state_to_command_{k}": v for k, v in percentiles_ms(self.state_latency).items()})
        return values

    def report(self) -> None:
        self.publish_diagnostics()

    def publish_diagnostics(self) -> None:
        if self.chain is None:
            return
        out = self.last_output
        values = self.summary()
        values.update({"acted": ",".join(out.acted_names()) if out else "", "reason": out.reason if out else "",
                       "max_change_window": round(self._window_change, 6), "last_rejection": self.chain.last_rejection})
        if values["mode"] == "safe" or self.chain.estop.tripped:
            level, message = 2, f"safe action: {values['reason']}"
        elif self._window_change > 0 or self.chain.last_rejection:
            level, message = 1, "filters acting"
        else:
            level, message = 0, values["mode"]
        if self.chain.last_rejection:
            message += f"; rejected: {self.chain.last_rejection}"
        self._window_change = 0.0
        self.chain.last_rejection = ""
        self.publish_status(level, message, values)


def main(args: list[str] | None = None) -> int:
    return run_node(SafetyFilterNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
