"""``sim_bridge``: a simulated robot that speaks the topics of a real robot's driver.

Publishes ``joint_states`` (sensor_msgs/JointState), ``odom`` (nav_msgs/Odometry)
and ``imu`` (sensor_msgs/Imu) for floating bases, ``ee_pose`` / ``ee_pose_desired``
(geometry_msgs/PoseStamped) for the arm, camera images at ``image_rate`` (``cameras``:
``<camera>/image_raw`` and ``<camera>/image_raw/compressed`` for each; else
``camera/image_raw``, see :class:`~sim2real.ros_nodes.settings.SimBridgeSettings`),
``/clock`` (simulation time) and the task's mission: ``goal``
(PoseStamped: the reach/hover target) and ``cmd_vel`` (Twist: the quadruped's
velocity command), standing in for an operator. Episode results go to ``episodes``
(std_msgs/String, JSON); those run under a latched safety guard are counted apart
(:mod:`~sim2real.ros_nodes.latched_episodes`).

Accepts ``command`` (std_msgs/Float64MultiArray, forward-command-controller style,
physical units: joint targets, torques, Cartesian velocities, or the drone's
collective thrust and body rates, see ``policies/safety/spaces.py``) from the safety
filter only (:mod:`sim2real.ros_nodes.command_gate`: each message must come from the
filter's writer the bridge bound to when it started; any other writer's is refused).
Twists, teleoperation and console commands go to the safety filter's inputs. With no
command for ``command_timeout`` seconds it applies the driver's hold (drone: motors
off). When the bound filter leaves the graph the robot holds until a filter runs again
and an operator calls ``~/enable`` (std_srvs/Trigger), which binds to it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped, Twist
from rclpy.event_handler import SubscriptionEventCallbacks
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger

from sim2real.hardware.realtime import EXECUTOR_PRIORITY
from sim2real.ros_nodes import images
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.base import ManagedNode, percentiles_ms, run_node
from sim2real.ros_nodes.command_gate import CommandGate
from sim2real.ros_nodes.latched_episodes import FilterLatch
from sim2real.ros_nodes.latency import LatencyStats
from sim2real.ros_nodes.newest_only import NewestOnly
from sim2real.ros_nodes.qos import command_qos, mission_qos, sensor_qos, status_qos
from sim2real.ros_nodes.settings import SimBridgeSettings
from sim2real.ros_nodes.sim_robot import SimRobot
from sim2real.ros_nodes.state_output import StatePublishers
from sim2real.sim.core.errors import ConfigError


@dataclass
class ImageStream:
    """One simulated camera's publishers."""

    camera: str | None
    """MuJoCo camera (``None``: the robot's first, the single ``camera`` stream)."""
    frame_id: str
    raw: Any
    compressed: Any | None

    def wanted(self) -> tuple[bool, bool]:
        """Whether someone subscribes (raw, compressed): an unwatched stream is not rendered."""
        raw = self.raw.get_subscription_count() > 0
        return raw, self.compressed is not None and self.compressed.get_subscription_count() > 0


def camera_names(text: str) -> list[str]:
    """``"front, wrist"`` -> ``["front", "wrist"]``.

    Raises:
        ConfigError: a name is given twice.
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError("cameras", f"{', '.join(twice)} given more than once")
    return names


class SimBridge(ManagedNode):
    """Steps a :class:`~sim2real.ros_nodes.sim_robot.SimRobot` once per control period."""

    executor_priority = EXECUTOR_PRIORITY

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("sim_bridge", SimBridgeSettings, **kwargs)
        self.robot: SimRobot | None = None
        self.command: np.ndarray | None = None
        self.command_time = -1e9
        self.commands_received = 0
        self.commands_rejected = 0
        self.commands_refused = 0
        """Commands refused because something other than the safety filter publishes on ``command``."""
        self.deadline_misses = 0
        self.overruns = 0
        self.simulated = 0.0
        """s of simulation stepped since start, across episodes (its ratio to the wall
        clock says whether the host kept real time)."""
        self.step_seconds = LatencyStats()
        self._timer = None
        self._image_timer = None
        self._last_mission: tuple | None = None
        self.streams: list[ImageStream] = []
        self.views: LiveViews | None = None
        self.frames_published = 0
        """Camera frames rendered and published (each camera's frame counts once)."""
        self.commands_before_binding = 0
        """Commands refused while the bridge was still binding (the filter not yet named by discovery)."""
        self._episode_started = time.time()
        """Unix s when the current episode began (the filter's latch time is Unix s too)."""
        self.binding = False
        """Bind to the safety filter at its first command (set when the bridge starts: a
        simulated robot is enabled by starting it; after a loss only ``~/enable`` binds)."""
        self._enable_service = False

    # -- lifecycle -------------------------------------------------------------------
    def load(self) -> None:
        p = self.params()
        names = camera_names(p["cameras"])
        if names and p["image_rate"] <= 0:
            raise ConfigError("cameras", f"{p['cameras']!r} given with image_rate 0: set image_rate (Hz)")
        size = (int(p["image_width"]), int(p["image_height"])) if p["image_rate"] > 0 else (0, 0)
        try:
            r = self.robot = SimRobot(p["robot"], p["task"], p["action_mode"], p["dr"], int(p["seed"]),
                                      json.loads(p["task_options"] or "{}"), render_size=size,
                                      cameras=tuple(names) or (p["camera"],))
        except ConfigError as exc:  # name the parameter that was set
            raise (ConfigError("camera", exc.message) if exc.field == "cameras" and not names else exc) from None
        self.space = r.space
        sensor = sensor_qos()
        self.state_out = StatePublishers(self, r.info)
        self.streams = self._image_streams(names) if p["image_rate"] > 0 else []
        if self.streams:  # the GL context now, not at the first frame beside the running loop
            r.prepare_views()
        self.jpeg_quality = int(p["jpeg_quality"])
        self.pub_clock = self.create_publisher(Clock, "/clock", sensor)
        self.pub_episode = self.create_publisher(String, "episodes", status_qos())
        self.pub_goal = self.create_publisher(PoseStamped, "goal", mission_qos()) if p["publish_mission"] else None
        self.pub_cmd_vel = (self.create_publisher(Twist, "cmd_vel", mission_qos())
                            if p["publish_mission"] and hasattr(r.task, "command") else None)
        # The course a planner plans on, for the tasks whose policy follows a planned path.
        self.pub_course = (self.create_publisher(String, "course", mission_qos())
                           if p["publish_mission"] and r.task.course(0) is not None else None)
        self._last_course: str | None = None
        events = SubscriptionEventCallbacks(deadline=self._on_deadline)
        self.command_sub = self.create_subscription(Float64MultiArray, "command", self._on_command,
                                                    command_qos(p["command_deadline"]), event_callbacks=events,
                                                    message_info=True)
        self.gate = CommandGate.for_node(self, "command", p["command_publisher"])
        self.filter_latch = FilterLatch(self, p["command_publisher"])
        if not self._enable_service:  # services survive cleanup -> configure
            self.create_service(Trigger, "~/enable", self._on_enable)
            self._enable_service = True
        if not p["publish_mission"] and hasattr(r.task, "command"):
            self.create_subscription(Twist, "cmd_vel", self._on_cmd_vel, mission_qos())
        self.timeout = float(p["command_timeout"])
        self.period = r.control_dt / max(float(p["real_time_factor"]), 1e-3)
        self.image_period = 1.0 / p["image_rate"] if p["image_rate"] > 0 else 0.0
        self.get_logger().info(
            f"{p['robot']} {r.task_name} ({r.space.action_mode}) at {1 / self.period:.0f} Hz; "
            f"command elements: {list(r.space.names)}"
        )

    def start(self) -> None:
        self.binding = self.gate.bound is None and not self.gate.lost
        self._episode_started = time.time()
        self.publish_state()
        self._timer = self.create_control_timer(self.period, self._tick)
        if self.image_period and self.views is None:
            self.views = LiveViews(self, self.configured_robot())
            self._image_timer = self.create_control_timer(self.image_period, self._publish_images)

    def stop(self) -> None:
        for t in (self._timer, self._image_timer):
            if t is not None:
                self.destroy_timer(t)
        self._timer = self._image_timer = None

    def destroy_node(self) -> None:
        if self.views is not None:  # its thread publishes: stop it before the publishers go
            self.views.close()
            self.views = None
        super().destroy_node()

    def unload(self) -> None:
        if self.views is not None:
            self.views.close()  # its thread releases the GL context
            self.views = None
        if self.robot is not None:
            self.robot.close()  # the simulation stays readable

    def _image_streams(self, names: list[str]) -> list[ImageStream]:
        """``camera/image_raw`` alone (no ``cameras``), or two topics per camera."""
        sensor = sensor_qos()
        if not names:
            return [ImageStream(None, "camera", self.create_publisher(Image, "camera/image_raw", sensor), None)]
        streams = []
        for name in names:
            try:
                raw = self.create_publisher(Image, f"{name}/image_raw", sensor)
                compressed = self.create_publisher(CompressedImage, f"{name}/image_raw/compressed", sensor)
            except Exception as exc:  # rclpy's InvalidTopicNameException and kin
                raise ConfigError("cameras", f"camera {name!r} cannot name a topic: {exc}") from None
            streams.append(ImageStream(name, name, raw, compressed))
        return streams

    def configured_robot(self) -> SimRobot:
        """The simulated robot; only code run after configure calls this, so it exists."""
        if self.robot is None:
            raise RuntimeError("the sim bridge is not configured")
        return self.robot

    def summary(self) -> dict[str, Any]:
        eps = self.robot.episodes if self.robot is not None else []
        held = sum(e.under_latch for e in eps)
        return {"episodes": len(eps) - held, "successes": sum(e.success for e in eps if not e.under_latch),
                "episodes_under_latch": held,
                "commands_received": self.commands_received, "commands_rejected": self.commands_rejected,
                "commands_refused": self.commands_refused, "commands_before_binding": self.commands_before_binding,
                "frames_published": self.frames_published,
                "command_deadline_misses": self.deadline_misses, "step_overruns": self.overruns,
                "sim_time": round(self.robot.sim_time, 3) if self.robot is not None else 0.0,
                "simulated_total": round(self.simulated, 3), **self.scheduling(),
                **{f"step_{k}": v for k, v in percentiles_ms(self.step_seconds).items()}}

    def report(self) -> None:
        s = self.summary()
        self.publish_status(0, f"{s['episodes']} episodes, {s['successes']} successes", s)

    # -- inputs ----------------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray, info: Any) -> None:
        unbound = ""
        if self.binding:
            unbound = self.gate.bind(time.monotonic())
            if not unbound:
                self.binding = False
                self.get_logger().info(f"commands from {self.gate.bound.qualified if self.gate.bound else '?'}")
        refused = self.gate.admit(info, time.monotonic())
        if refused and unbound:  # starting: the filter's first commands can come before discovery names it
            self.commands_before_binding += 1
            self.log_throttled("binding", f"not bound to a safety filter yet, the robot holds: {unbound}",
                               level="info")
            return
        if refused:
            self.commands_refused += 1
            self.log_throttled("foreign", refused, level="error")
            return
        values, key, reason = M.driver_command(msg, self.space.names)
        if values is None:
            self.commands_rejected += 1
            self.log_throttled(key, reason, level="error")
            return
        self.command, self.command_time = values, time.monotonic()
        self.commands_received += 1

    def _on_enable(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """An operator's go after the filter was lost: bind to the filter running now."""
        reason = self.gate.bind(time.monotonic()) if self.active else "the sim bridge is not active"
        if reason:
            self.get_logger().error(f"enable refused: {reason}")
        else:
            self.binding = False
            self.get_logger().warning(f"enabled: commands from {self.gate.bound.qualified if self.gate.bound else '?'}")
        response.success, response.message = not reason, reason or "enabled"
        return response

    def _on_cmd_vel(self, msg: Twist) -> None:
        lin, ang = M.twist_arrays(msg)
        self.configured_robot().set_velocity_command(np.array([lin[0], lin[1], ang[2]]))

    def _on_deadline(self, event: Any) -> None:
        self.deadline_misses += 1

    # -- the loop ----------------------------------------------------------------------
    def _tick(self) -> None:
        if not self.active or self.robot is None:
            return
        t0 = time.perf_counter()
        lost = self.gate.watch(time.monotonic())
        if lost:
            self.command = None
            self.get_logger().error(f"{lost}: the robot holds until a safety filter runs and ~/enable is called")
        if self.command is None or time.monotonic() - self.command_time > self.timeout:
            self.drain(self.command_sub)  # a command already waiting is not a stale one
        command = self.command
        fresh = command is not None and time.monotonic() - self.command_time <= self.timeout
        latched = self.filter_latch.under_latch(self._episode_started)
        record = self.robot.step(command if command is not None and fresh else self.robot.hold_command(), latched)
        self.simulated += self.robot.control_dt
        self.publish_state()
        if record is not None:
            self._episode_started = time.time()
            self.pub_episode.publish(String(data=json.dumps(record.__dict__)))
            note = " (under a latched safety guard: not the policy's, not counted)" if record.under_latch else ""
            self.get_logger().info(f"episode {record.index}: success={record.success} after {record.seconds:.1f} s"
                                   + note)
        dt = time.perf_counter() - t0
        self.step_seconds.append(dt)
        if dt > self.period:
            self.overruns += 1

    def publish_state(self) -> None:
        r = self.configured_robot()
        m = r.measure()
        stamp = self.get_clock().now().to_msg()
        self.state_out.publish(m, stamp, r.linear_acceleration() if r.info.floating_base else None)
        clock = Clock()
        clock.clock = M.sec_to_stamp(r.sim_time)
        self.pub_clock.publish(clock)
        self._publish_mission(m, stamp)

    def _publish_mission(self, m: Any, stamp: Any) -> None:
        if self.pub_course is not None:
            course = json.dumps(self.configured_robot().task.course(0))
            if course != self._last_course:  # a new episode's course: the planner plans again
                self._last_course = course
                self.pub_course.publish(String(data=course))
        key = (None if m.goal is None else tuple(m.goal), None if m.cmd_vel is None else tuple(m.cmd_vel))
        if key == self._last_mission:
            return
        self._last_mission = key
        if self.pub_goal is not None and m.goal is not None:
            self.pub_goal.publish(M.pose_stamped(m.goal, np.array([1.0, 0, 0, 0]), stamp))
        if self.pub_cmd_vel is not None and m.cmd_vel is not None:
            self.pub_cmd_vel.publish(M.twist(np.r_[m.cmd_vel[:2], 0.0], np.r_[0.0, 0.0, m.cmd_vel[2]]))

    def _publish_images(self) -> None:
        """Hand the live-view thread the current pose (rendering runs off the control thread)."""
        if not self.active or self.robot is None or self.views is None:
            return
        if any(any(s.wanted()) for s in self.streams):
            self.views.offer(self.robot.pose(), self.get_clock().now().to_msg())


class LiveViews:
    """Draws, encodes and publishes the cameras of the newest pose on a thread of their own
    (:class:`~.newest_only.NewestOnly`, which owns the GL context): 2 x 320x240 at 15 Hz
    is 30 renders/s, which on the control thread made a quadruped miss its 50 Hz period
    and fall. A pose still waiting when a newer one arrives is dropped."""

    def __init__(self, node: SimBridge, robot: SimRobot) -> None:
        self.node, self.robot = node, robot
        self.worker: NewestOnly[tuple[Any, Any]] = NewestOnly(
            "sim-bridge-live-views", lambda item: self._draw(*item), self._failed,
            teardown=robot.close,  # the thread that draws with the GL context closes it
            merge=self._carry_heightfields)

    @property
    def frames_dropped(self) -> int:
        return self.worker.dropped

    def offer(self, pose: Any, stamp: Any) -> None:
        self.worker.offer((pose, stamp))

    @staticmethod
    def _carry_heightfields(dropped: tuple[Any, Any], newer: tuple[Any, Any]) -> tuple[Any, Any]:
        newer[0].heightfields_changed |= dropped[0].heightfields_changed
        return newer

    def _failed(self, exc: Exception) -> None:
        if not self.worker.stopping:  # publishers going away at shutdown are no failure
            self.node.log_throttled("live_views", f"camera frame failed: {exc}", level="error")

    def _draw(self, pose: Any, stamp: Any) -> None:
        node = self.node
        for s in node.streams:
            raw, compressed = s.wanted()
            if not (raw or compressed):
                continue
            frame = self.robot.render_pose(pose, s.camera)
            if frame is None:
                continue
            if raw:
                s.raw.publish(images.image_message(frame, stamp, s.frame_id))
            if compressed and s.compressed is not None:
                s.compressed.publish(images.compressed_message(frame, stamp, s.frame_id, node.jpeg_quality))
            node.frames_published += 1

    def close(self) -> None:
        self.worker.close()


def main(args: list[str] | None = None) -> int:
    return run_node(SimBridge, args)


if __name__ == "__main__":
    raise SystemExit(main())
