"""``safety_filter``: the only path from a policy to the robot.

Subscribes ``raw_command`` (the policy's Float64MultiArray) and the robot's state
topics; publishes ``command`` after the robot's filter chain
(:mod:`sim2real.policies.safety`). A command is filtered and sent on every state
message (so a fresh measurement re-bounds it, like a ros2_control update) and/or as
soon as it arrives (``publish_on``: ``state``, ``command`` or ``both``). A timer every quarter control period
runs the watchdog, so a dead policy or a frozen state stream gives the safe action within
3 control periods (2.25 nominal).

E-stop: ``estop`` (std_msgs/Bool, ``true`` trips) and the std_srvs/Trigger services
``~/trip_estop`` and ``~/reset``; only ``~/reset`` clears it (and the latched fall,
geofence and watchdog states). Commands that arrive during an e-stop are dropped.
``diagnostics`` (diagnostic_msgs/DiagnosticArray) reports the mode, which filters
acted and by how much they changed the command, and every rejected input.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from sim2real.policies.safety import PARAMS, SafetyState, command_space, make_chain, params_from_dict
from sim2real.policies.safety.types import ChainOutput
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.base import ManagedNode, dataclass_defaults, percentiles_ms, run_node
from sim2real.ros_nodes.qos import command_qos, sensor_qos, status_qos
from sim2real.ros_nodes.robots import robot_info

LATENCY_SAMPLES = 60_000
"""Latency samples kept (two minutes at 500 Hz); ``~/reset_stats`` clears them."""

NODE_DEFAULTS: dict[str, Any] = {
    "robot": "arm",
    "action_mode": "",
    "action_scale": 0.0,
    "command_deadline": 0.0,
    "publish_on": "both",
    "diagnostics_rate": 10.0,
    "latency_deadline": 0.002,
}


def declared_parameters(robot: str) -> dict[str, Any]:
    """Every parameter the node declares for ``robot`` (node settings + safety parameters)."""
    return {**NODE_DEFAULTS, **dataclass_defaults(PARAMS[robot]())}


class SafetyFilterNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("safety_filter", NODE_DEFAULTS, **kwargs)
        # The safety parameters depend on the robot: declare them once `robot` is known
        # (declaring applies the overrides from the parameter file or the command line).
        robot = str(self.param("robot"))
        robot_info(robot)
        for key, value in dataclass_defaults(PARAMS[robot]()).items():
            self.declare_parameter(key, value)
        self.robot_name = robot
        self.chain = None
        self.state = SafetyState(now=0.0)
        self.stats: Counter[str] = Counter()
        self.max_change = 0.0
        self._window_change = 0.0
        self.processing: deque[float] = deque(maxlen=LATENCY_SAMPLES)
        """Seconds from an input's callback to the command's publish."""
        self.state_latency: deque[float] = deque(maxlen=LATENCY_SAMPLES)
        """Seconds from a state message's header stamp (its sender's clock) to the command it
        triggered being published: state message in -> command message out."""
        self._state_sent = 0.0
        self.last_output: ChainOutput | None = None
        self.safe_since: float | None = None
        self.safe_reasons: deque[tuple[float, str]] = deque(maxlen=100)
        """(node time, reason) of each start of the safe action (the latest 100)."""
        self.outputs = 0
        self._timers: list[Any] = []

    # -- lifecycle ---------------------------------------------------------------------------
    def load(self) -> None:
        robot = self.param("robot")
        if robot != self.robot_name:
            raise ValueError(f"parameter robot={robot!r} but the node was built for {self.robot_name!r}")
        info = robot_info(robot)
        mode = self.param("action_mode") or info.action_mode
        self.space = command_space(robot, mode, self.param("action_scale") or None)
        safety = {k: self.param(k) for k in dataclass_defaults(PARAMS[robot]())}
        self.chain = make_chain(self.space, params_from_dict(robot, safety))
        self.joints = info.joints
        s = sensor_qos()
        if info.joints:
            self.create_subscription(JointState, "joint_states", self._on_joints, s)
        if info.floating_base:
            self.create_subscription(Odometry, "odom", self._on_odom, s)
        if info.has_ee:
            self.create_subscription(PoseStamped, "ee_pose", lambda m: self._on_pose(m, False), s)
            self.create_subscription(PoseStamped, "ee_pose_desired", lambda m: self._on_pose(m, True), s)
        self.primary = "joint_states" if info.joints else "odom"
        # The state is as old as its oldest required stream; nothing runs before all arrived.
        self.required = [t for t, has in (("joint_states", bool(info.joints)), ("odom", info.floating_base),
                                          ("ee_pose", info.has_ee)) if has]
        self.arrivals: dict[str, float] = {}
        self.create_subscription(Float64MultiArray, "raw_command", self._on_command, command_qos())
        self.create_subscription(Bool, "estop", self._on_estop, status_qos())
        self.create_service(Trigger, "~/trip_estop", self._srv_trip)
        self.create_service(Trigger, "~/reset", self._srv_reset)
        self.create_service(Trigger, "~/reset_stats", self._srv_reset_stats)
        self.pub = self.create_publisher(Float64MultiArray, "command", command_qos(self.param("command_deadline")))
        publish_on = self.param("publish_on")
        if publish_on not in ("state", "command", "both"):
            raise ValueError(f"publish_on must be state, command or both, got {publish_on!r}")
        self.on_state = publish_on in ("state", "both")
        self.on_command = publish_on in ("command", "both")
        self.get_logger().info(f"{robot} {mode}: guards {[g.name for g in self.chain.guards]}, "
                               f"limits {[f.name for f in self.chain.limits]}")

    def start(self) -> None:
        # Checked every quarter period: with the 2-period timeout the safe action starts
        # within 2.25 periods, leaving scheduling slack below the 3-period requirement.
        self._timers = [self.create_timer(self.space.control_dt / 4, self._tick)]
        rate = float(self.param("diagnostics_rate"))
        if rate > 0:
            self._timers.append(self.create_timer(1.0 / rate, self.publish_diagnostics))

    def stop(self) -> None:
        for t in self._timers:
            self.destroy_timer(t)
        self._timers = []

    # -- inputs ------------------------------------------------------------------------------------
    def _on_joints(self, msg: JointState) -> None:
        parsed = M.parse_joint_state(msg, self.joints)
        if isinstance(parsed, str):
            self.stats["rejected_state"] += 1
            self.log_throttled("joints" + parsed[:16], f"rejected joint_states: {parsed}", level="error")
            return
        pos, vel, eff = parsed
        self._state_sent = M.stamp_to_sec(msg.header.stamp)
        n = 7 if self.robot_name == "arm" else len(pos)
        self.state.joint_pos, self.state.joint_vel = pos[:n], vel[:n]
        self.state.joint_effort = None if eff is None else eff[:n]
        self._state_arrived("joint_states")

    def _on_odom(self, msg: Odometry) -> None:
        parsed = M.parse_odometry(msg)
        if isinstance(parsed, str):
            self.stats["rejected_state"] += 1
            self.log_throttled("odom" + parsed[:16], f"rejected odom: {parsed}", level="error")
            return
        s = self.state
        s.base_pos, s.base_quat, s.base_lin_vel, s.base_ang_vel = parsed
        self._state_arrived("odom")

    def _on_pose(self, msg: PoseStamped, desired: bool) -> None:
        pos, quat = M.pose_arrays(msg.pose)
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))):
            self.log_throttled("pose", "rejected end-effector pose: non-finite", level="error")
            return
        if desired:
            self.state.ee_pos_desired, self.state.ee_quat_desired = pos, quat
        else:
            self.state.ee_pos, self.state.ee_quat = pos, quat
            self._state_arrived("ee_pose")

    def _state_arrived(self, topic: str) -> None:
        t0 = time.perf_counter()
        self.arrivals[topic] = self.now_s()
        if any(t not in self.arrivals for t in self.required):
            return
        # Re-dated on every stream, not only the primary: the bridge publishes odom just
        # after joint_states, and dating at joint_states alone aged the state by a period.
        self.state.state_stamp = min(self.arrivals[t] for t in self.required)
        if self.on_state and topic == self.primary:
            self._run(t0, from_state=True)

    def _on_command(self, msg: Float64MultiArray) -> None:
        t0 = time.perf_counter()
        reason = self.chain.accept(np.asarray(msg.data, dtype=np.float64), self.now_s(), M.command_labels(msg))
        if reason:
            kind = "dropped" if reason.startswith("e-stop") else "rejected"
            self.stats[kind] += 1
            self.log_throttled(kind + reason[:12], f"{kind} raw_command: {reason}",
                               level="warning" if kind == "dropped" else "error")
            return
        if self.on_command:
            self._run(t0)

    def _on_estop(self, msg: Bool) -> None:
        if msg.data:
            self.trip("estop topic")

    def _srv_trip(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.trip("trip_estop service")
        response.success, response.message = True, "e-stop latched; call ~/reset to clear"
        return response

    def _srv_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        cleared = self.chain.reset()
        self.get_logger().warning(f"operator reset: cleared {cleared or 'nothing'}")
        response.success, response.message = True, f"cleared {cleared}"
        return response

    def _srv_reset_stats(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.stats.clear()
        self.processing.clear()
        self.state_latency.clear()
        self.max_change = 0.0
        response.success, response.message = True, "statistics cleared"
        return response

    def trip(self, reason: str) -> None:
        if not self.chain.estop.tripped:
            self.get_logger().error(f"E-STOP: {reason}")
        self.chain.trip_estop(reason)
        self._run(time.perf_counter())

    # -- output ----------------------------------------------------------------------------------------
    def _tick(self) -> None:
        # The watchdog's clock: with no input at all, this is what notices. Safe action,
        # latched guards and e-stop are re-sent from here; nominal output comes from inputs.
        self._run(time.perf_counter(), only_safe=True)

    def _run(self, t0: float, only_safe: bool = False, from_state: bool = False) -> None:
        if not self.active or self.chain is None:
            return
        self.state.now = self.now_s()
        out = self.chain.step(self.state, only_safe=only_safe)
        if out.command is None:
            return
        self.pub.publish(M.command_array(out.command, self.space.names))
        self.processing.append(time.perf_counter() - t0)
        if from_state:
            self.state_latency.append(self.now_s() - self._state_sent)
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
                self.get_logger().warning(f"safe action: {out.reason}")
        elif self.safe_since is not None:
            self.get_logger().info("nominal again")
            self.safe_since = None
        if out.intervened:
            self.stats["interventions"] += 1
        for name in out.acted_names():
            self.stats[f"acted_{name}"] += 1
        self.max_change = max(self.max_change, out.change)
        self._window_change = max(self._window_change, out.change)
        self.last_output = out

    def summary(self) -> dict[str, Any]:
        """Flat counters (also the diagnostics' key-values)."""
        out = self.last_output
        values: dict[str, Any] = {
            "mode": out.mode if out is not None else "idle",
            "estop": self.chain.estop.tripped,
            "rejected": self.chain.rejected,
            "dropped_during_estop": self.chain.dropped_during_estop,
            "max_change_total": round(self.max_change, 6),
            **{k: v for k, v in sorted(self.stats.items())},
        }
        for f in self.chain.filters:  # filters with their own state (e.g. the energy tank)
            status = getattr(f, "status", None)
            if status is not None:
                values.update({k: round(float(v), 6) for k, v in status().items()})
        values.update({f"processing_{k}": v for k, v in percentiles_ms(self.processing).items()})
        deadline = float(self.param("latency_deadline"))
        values.update({f"state_to_command_{k}": v for k, v in percentiles_ms(self.state_latency, deadline).items()})
        return values

    def publish_diagnostics(self) -> None:
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
