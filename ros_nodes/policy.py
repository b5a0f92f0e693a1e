"""``policy``: runs an exported policy (ONNX + metadata, no torch) at its control rate.

With ``align_to_state`` (default) a period's action is taken as soon as a fresh state
arrives (the timer acts when none does), so the state is not up to a period old.

``configure`` loads the policy and checks it against the robot: the metadata's robot,
the observation layout the task builds (block names, order and sizes) and the action
size must match, or configuration fails with the difference in the log. Each timer
tick rebuilds the observation from the latest state topics (through the task's own
``observe``, :mod:`sim2real.ros_nodes.robots`), refuses to act on missing or stale
state (the safety filter's watchdog then takes over) and publishes the raw command on
``raw_command`` in physical units with the element names in the layout.

A path-following policy (the hierarchy's ``QuadrupedWaypoints`` follower) also needs the
planner's path on ``plan`` (``nav_msgs/Path``) and the rangefinders on ``ranges/<name>``;
a drone's gate course (``DroneGates``) its gates on ``course`` (``std_msgs/String``, JSON,
as the sim bridge publishes it) and the gate planner's path on ``plan``. A malformed path
or course is refused and, with no valid one, the node does not act.

``policy: classical`` runs the robot's classical controller instead (arm: Cartesian
reaching, quadruped: PD stand, drone: cascaded PID) through the same path.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Path
from std_msgs.msg import Float64MultiArray, String

from sim2real.hardware.realtime import EXECUTOR_PRIORITY
from sim2real.policies.classical import controller_for
from sim2real.policies.safety.spaces import command_space
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes import path_messages as P
from sim2real.ros_nodes.base import ManagedNode, percentiles_ms, run_node
from sim2real.ros_nodes.latency import LatencyStats
from sim2real.ros_nodes.qos import command_qos, mission_qos
from sim2real.ros_nodes.robots import ObservationBuilder, make_task
from sim2real.ros_nodes.settings import PolicySettings
from sim2real.ros_nodes.state_input import StateStreams
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements, RobotDeployment
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import Task


class ClassicalPolicy:
    """The robot's classical controller behind the policy interface (``obs -> action``)."""

    def __init__(self, task: Task) -> None:
        self.controller = controller_for(task)
        self.control_dt = float(task.control_dt)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return np.asarray(self.controller.act(obs[None]))[0]


class PolicyNode(ManagedNode):
    executor_priority = EXECUTOR_PRIORITY

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("policy", PolicySettings, **kwargs)
        self.m = Measurements()
        self.mission: dict[tuple[str, str], tuple[Any, float]] = {}
        """(``goal`` | ``cmd_vel`` | ``path`` | ``course``, ``mission`` | ``operator``) ->
        (value, arrival time)."""
        self.state_header: dict[str, float] = {}
        self.ticks = 0
        self.published = 0
        self.skipped = 0
        self.deadline_misses = 0
        self.latencies = LatencyStats()
        """Seconds from the newest state message's header stamp to the raw command."""
        self.compute = LatencyStats()
        self._timer = None
        self._last_tick: float | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def load(self) -> None:
        p = self.params()
        robot = p["robot"]
        info = robot_deployment(robot)
        if p["policy"] in ("", "classical"):
            task_name, mode = p["task"] or info.task, p["action_mode"] or info.action_mode
            options = json.loads(p["task_options"] or "{}")
            self.task = make_task(task_name, mode, options)
            self.runner: Any = ClassicalPolicy(self.task)
            source = f"classical controller for {task_name}"
        else:
            from sim2real.policies.deploy import OnnxPolicy

            policy = OnnxPolicy(p["policy"])
            meta = policy.metadata
            if meta.get("robot") != robot:
                raise ConfigError("policy", f"{p['policy']} was trained for {meta.get('robot')!r}, not {robot!r}")
            mode, options = policy.action_mode, dict(meta.get("task_options") or {})
            self.task = make_task(policy.task, mode, options)
            policy.check_observation_layout(self.task.observation_layout())  # names, order, sizes
            if policy.action_layout != [(n, int(s)) for n, s in self.task.action_layout()]:
                raise ConfigError("policy", f"action layout {policy.action_layout} differs from the task's "
                                            f"{self.task.action_layout()}")
            self.runner = policy
            source = f"{policy.path} ({policy.task}, {mode})"
        self.space = command_space(robot, mode, options.get("action_scale"))
        action_size = sum(n for _, n in self.task.action_layout())
        if action_size != self.space.size:
            raise ConfigError("action_mode", f"action size {action_size} != command size {self.space.size}")
        self.robot = robot
        self.joints = info.joints
        self.builder = ObservationBuilder(robot, self.task, action_size)
        # The rangefinders first: the last required stream paces the loop (align_to_state).
        self.required = [*(["ranges"] if "ranges" in info.required(self.task) else []), *info.state_topics()]
        rate = p["control_rate"] or 1.0 / float(self.task.control_dt)
        self.period = 1.0 / rate
        self.max_age = p["max_state_age_periods"] * self.period
        self.last_action = np.zeros(action_size)
        self.align = bool(p["align_to_state"])
        self.operator_hold = float(p["operator_hold"])
        self._last_state: float | None = None
        self._state_interval = self.period
        self._subscribe(info)
        self.pub = self.create_publisher(Float64MultiArray, "raw_command", command_qos())
        self.get_logger().info(f"loaded {source}; {rate:.0f} Hz; observation {self.builder.layout}")

    def _subscribe(self, info: RobotDeployment) -> None:
        self.streams = StateStreams(self, info, self._on_state, ranges="ranges" in self.required)
        self.create_subscription(PoseStamped, "goal", lambda m: self._on_goal(m, "mission"), mission_qos())
        self.create_subscription(Twist, "cmd_vel", lambda m: self._on_cmd_vel(m, "mission"), mission_qos())
        self.create_subscription(Path, "plan", self._on_plan, mission_qos())
        if "course" in self.builder.missing(Measurements()):  # a gate course's gates
            self.create_subscription(String, "course", self._on_course, mission_qos())
        # A person steering through the correction console overrides the mission while fresh.
        self.create_subscription(PoseStamped, "operator_goal", lambda m: self._on_goal(m, "operator"), command_qos())
        self.create_subscription(Twist, "operator_cmd_vel", lambda m: self._on_cmd_vel(m, "operator"), command_qos())

    def start(self) -> None:
        # An activation starts from rest, as a training episode does.
        self.last_action[:] = 0.0
        self.builder.restart()
        self._last_tick = self.now_s()
        self._timer = self.create_control_timer(self.period, self._tick)

    def stop(self) -> None:
        if self._timer is not None:
            self.destroy_timer(self._timer)
        self._timer = None

    def summary(self) -> dict[str, Any]:
        """Flat counters and latency percentiles (also the diagnostics' key-values)."""
        out: dict[str, Any] = {"ticks": self.ticks, "published": self.published, "skipped": self.skipped,
                               "deadline_misses": self.deadline_misses, **self.scheduling()}
        out.update({f"state_to_command_{k}": v for k, v in percentiles_ms(self.latencies).items()})
        out.update({f"inference_{k}": v for k, v in percentiles_ms(self.compute).items()})
        return out

    def report(self) -> None:
        level = 0 if self.skipped == 0 else 1
        self.publish_status(level, f"{self.published} commands, {self.skipped} skipped", self.summary())

    # -- state topics --------------------------------------------------------------------------
    def _arrived(self, topic: str, header: Any) -> None:
        now = self.now_s()
        self.m.stamps[topic] = now
        self.state_header[topic] = M.stamp_to_sec(header.stamp)
        # Align acting with fresh state: act on the first complete state update that comes
        # within half a state interval of the period's end, instead of at the timer's
        # arbitrary phase (up to a period late). The timer acts only if states stop.
        if self.align and topic == self.required[-1]:
            if self._last_state is not None:
                self._state_interval += 0.1 * (now - self._last_state - self._state_interval)
            self._last_state = now
            due = self.period - 0.5 * min(self._state_interval, self.period)
            if self._last_tick is None or now - self._last_tick >= due:
                self._act(now)

    def _on_state(self, topic: str, values: dict[str, np.ndarray | None], header: Any) -> None:
        for name, value in values.items():
            setattr(self.m, name, value)
        self._arrived(topic, header)

    def _on_goal(self, msg: PoseStamped, source: str) -> None:
        pos, _ = M.pose_arrays(msg.pose)
        if np.all(np.isfinite(pos)):
            self.mission[("goal", source)] = (pos, self.now_s())

    def _on_cmd_vel(self, msg: Twist, source: str) -> None:
        lin, ang = M.twist_arrays(msg)
        cmd = np.array([lin[0], lin[1], ang[2]])
        if np.all(np.isfinite(cmd)):
            self.mission[("cmd_vel", source)] = (cmd, self.now_s())

    def _on_plan(self, msg: Path) -> None:
        parsed = P.parse_path(msg)
        if isinstance(parsed, str):  # fail closed: no path to follow until a valid one comes
            self.mission.pop(("path", "mission"), None)
            self.log_throttled("plan", f"rejected plan: {parsed}; not acting until a valid one arrives",
                               level="error")
            return
        self.mission[("path", "mission")] = (parsed, self.now_s())

    def _on_course(self, msg: String) -> None:
        try:
            course = json.loads(msg.data)
            why = "" if isinstance(course, dict) else "not a JSON object"
        except ValueError as exc:
            course, why = None, f"not JSON ({exc})"
        if why:  # fail closed, as for a bad plan
            self.mission.pop(("course", "mission"), None)
            self.log_throttled("course", f"rejected course: {why}; not acting until a valid one arrives", level="error")
            return
        self.mission[("course", "mission")] = (course, self.now_s())

    def _mission_inputs(self, now: float) -> None:
        """The goal and velocity command the observation uses: the operator's while fresh
        (``operator_hold``), else the mission's."""
        for name in ("goal", "cmd_vel", "path", "course"):
            operator = self.mission.get((name, "operator"))
            mission = self.mission.get((name, "mission"))
            fresh = operator is not None and 0.0 <= now - operator[1] <= self.operator_hold
            chosen = operator if fresh else mission
            setattr(self.m, name, None if chosen is None else chosen[0])

    # -- control ----------------------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.now_s()
        if self.align and self._last_tick is not None and now - self._last_tick < 1.5 * self.period:
            return  # fresh states are driving the loop
        self._act(now)

    def _act(self, now: float) -> None:
        if not self.active:
            return
        if self._last_tick is not None and now - self._last_tick > 1.5 * self.period:
            self.deadline_misses += 1
        self._last_tick = now
        self.ticks += 1
        self._mission_inputs(now)
        missing = self.builder.missing(self.m)
        stale = [t for t in self.required if now - self.m.stamps.get(t, -1e9) > self.max_age]
        if missing or stale:
            self.skipped += 1
            why = f"missing {missing}" if missing else f"stale {stale} (older than {self.max_age * 1e3:.0f} ms)"
            self.log_throttled("stale", f"not acting: state {why}")
            return
        t0 = time.perf_counter()
        try:
            obs = self.builder.build(self.m, self.last_action)
            action = np.asarray(self.runner(obs), dtype=np.float64).reshape(-1)
        except Exception as exc:  # a failing inference must not stop the node; the watchdog acts
            self.skipped += 1
            self.log_throttled("inference", f"not acting: observation or inference failed ({exc})", level="error")
            return
        self.last_action = np.clip(np.nan_to_num(action), -1.0, 1.0)
        # Reference modes (quadruped trot, drone PID) add their reference here.
        command = self.task.deploy_command(action, obs, self.space.action_to_command)
        self.pub.publish(M.command_array(command, self.space.names))
        self.compute.record(time.perf_counter() - t0)
        self.published += 1
        newest = max(self.state_header[t] for t in self.required)
        self.latencies.record(self.stamp_now_s() - newest)


def main(args: list[str] | None = None) -> int:
    return run_node(PolicyNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
