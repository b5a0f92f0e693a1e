"""``console``: the correction console attached to a deployed graph.

Serves the console's page (:mod:`sim2real.console.server`) and speaks for the person
in the graph, always *before* the safety filter, on the robot's operator channel
(:class:`~sim2real.sim.core.deployment.OperatorSpace`):

* ``teleop_command`` (the arm): the filter's command mux, highest priority; the
  person's Cartesian velocities and gripper, the command's other elements held;
* ``operator_cmd_vel`` (the quadruped): the velocity command the policy tracks;
* ``operator_goal`` (the drone): the position setpoint the policy holds, moved at the
  person's velocity.

It publishes at ``publish_rate`` while the person or the dead man's hold is in control
and nothing otherwise (the policy and the mission command then). Reads the robot's
state streams, the policy's ``raw_command``, the filter's ``diagnostics``, the sim
bridge's ``episodes`` and each camera's ``<cam>/image_raw/compressed``. The e-stop
button calls the filter's ``~/trip_estop``; its reset, ``~/reset`` (which refuses while
the cause is present, and says so on the page); an e-stop latched or cleared by any
source (the filter's ``diagnostics``) is the handover's too.

The handover (who commands, the blend, the limits, the dead man) is
:class:`~sim2real.policies.teleop.operator.OperatorControl`'s: this node only converts
its command into the channel's message. It reports at 1 Hz on ``diagnostics`` (the mode,
the page's port, the counts), never the token: the URL is printed on stderr.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, Twist
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger

from sim2real.hardware.realtime import OPERATOR_PRIORITY
from sim2real.policies.safety.spaces import ARM_TWIST, CommandSpace, command_space
from sim2real.policies.teleop.operator import HUMAN, POLICY, OperatorSettings
from sim2real.policies.teleop.target import ConsoleTarget
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.base import ManagedNode, run_node
from sim2real.ros_nodes.qos import command_qos, mission_qos, sensor_qos, status_qos
from sim2real.ros_nodes.settings import ConsoleSettings
from sim2real.ros_nodes.state_input import StateStreams
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.frames import rotation

MAX_JPEG_BYTES = 4 << 20
"""A camera frame larger than this is refused (a 1080p JPEG is ~0.5 MB)."""
FRESH_POLICY = 0.5
"""s: a policy command older than this no longer counts as its current command."""


class RosConsoleTarget(ConsoleTarget):
    """What the page sees of the graph, and the person's command into it."""

    def __init__(self, node: ConsoleNode, robot: str, space: CommandSpace, cameras: list[str],
                 settings: OperatorSettings) -> None:
        super().__init__(robot, "ros", settings)
        self.node, self.space, self.cameras = node, space, cameras
        self.m = Measurements()
        self.policy_command: tuple[np.ndarray, float] | None = None
        self.mission: dict[str, np.ndarray] = {}
        self.diagnostics: dict[str, str] = {}
        self.gripper = float(space.hold[space.names.index("gripper")]) if "gripper" in space.names else 0.0
        """The gripper width the robot last received (the person moves it from there)."""
        self.setpoint: np.ndarray | None = None
        self._filter_estop = False

    def camera_names(self) -> list[str]:
        return list(self.cameras)

    def snapshot(self) -> dict[str, Any]:
        m, d = self.m, self.diagnostics
        state: dict[str, Any] = {}
        if m.joint_pos is not None:
            state["joint_pos"] = _round(m.joint_pos)
        if m.ee_pos is not None:
            state["ee_pos"], state["ee_quat"] = _round(m.ee_pos), _round(m.ee_quat)
        if m.base_pos is not None and m.base_quat is not None and m.base_lin_vel is not None:
            r = rotation(m.base_quat)
            state["height"] = round(float(m.base_pos[2]), 3)
            state["velocity_body"] = _round(r.T @ m.base_lin_vel)
            state["roll_pitch_yaw_deg"] = _round(np.degrees(_rpy(r)))
        for name in ("goal", "cmd_vel"):
            if name in self.mission:
                state[name] = _round(self.mission[name])
        return {"state": state, "control": self.control.status(time.monotonic()),
                "safety": {"estop": d.get("latched", "") if d.get("estop") == "True" else "",
                           "acting": [a for a in d.get("acted", "").split(",") if a],
                           "watchdog": d.get("reason", "") if "watchdog" in d.get("acted", "") else "",
                           "mode": d.get("mode", "no diagnostics yet"), "source": d.get("source", "")},
                "success_probability": None, "success_source": "", "episodes": self.episodes.summary()}

    def commanded(self) -> None:
        self.node.publish_operator()  # now, not at the next timer tick

    def estop(self, reason: str) -> str:
        """Latch the filter's e-stop (a blocking service call: the web layer runs it off
        its event loop)."""
        self.log(f"e-stop: {reason}")
        with self.lock:
            self.control.estop_latched(time.monotonic(), reason)
        self.node.publish_operator()  # the hold goes out now
        ok, message = self.node.call(self.node.trip_client)
        return "" if ok else f"the safety filter did not confirm the e-stop: {message}"

    def reset_estop(self) -> str:
        ok, message = self.node.call(self.node.reset_client)
        self.log(f"e-stop reset: {message}" if ok else f"e-stop reset refused: {message}")
        if ok:
            with self.lock:
                self.control.estop_reset(time.monotonic())
        return "" if ok else message

    def filter_estop(self, latched: bool, reason: str) -> None:
        """The filter's diagnostics say its e-stop latched or cleared (from any source):
        the handover follows the change. Called with the lock held."""
        if latched != self._filter_estop:
            self._filter_estop = latched
            if latched:
                self.control.estop_latched(time.monotonic(), reason)
            else:
                self.control.estop_reset(time.monotonic())

    # -- the person's command in the graph's units --------------------------------------------
    def fresh_policy(self, now: float) -> np.ndarray | None:
        """The policy's last ``raw_command`` while it counts as its current command."""
        if self.policy_command is None or now - self.policy_command[1] > FRESH_POLICY:
            return None
        return self.policy_command[0]

    def policy_in_operator_space(self, now: float) -> np.ndarray | None:
        """What the robot receives from the policy, on the operator's axes (where a
        takeover's blend starts)."""
        space = self.deployment.operator
        if space.channel == "teleop_command":
            policy = self.fresh_policy(now)
            if policy is None:
                return None
            raw = dict(zip(self.space.names, policy, strict=False))
            # The operator's gripper axis is a speed; the policy commands a width.
            return np.array([raw.get(a.name, 0.0) if a.name != "gripper" else 0.0 for a in space.axes])
        if space.channel == "cmd_vel" and "cmd_vel" in self.mission:
            return self.mission["cmd_vel"].copy()
        return None  # a setpoint is moved from where it is: its velocity starts at zero

    def follow_policy(self, now: float) -> None:
        """While the policy commands, the gripper width the robot receives is its."""
        policy = self.fresh_policy(now)
        if policy is not None and "gripper" in self.space.names:
            self.gripper = float(policy[self.space.names.index("gripper")])

    def teleop_command(self, command: np.ndarray, dt: float, now: float) -> np.ndarray:
        """The arm's full command from the operator's (units only): its velocities as they
        are, its gripper speed integrated into a width from the last one sent; elements
        the person does not drive (an impedance's stiffness) are the policy's, else held."""
        axes = dict(zip(self.deployment.operator.names, command, strict=True))
        if "gripper" in self.space.names:
            g = self.space.names.index("gripper")
            self.gripper = float(np.clip(self.gripper + axes.get("gripper", 0.0) * dt, self.space.lower[g],
                                         self.space.upper[g]))
        policy = self.fresh_policy(now)
        out = np.array(self.space.hold if policy is None else policy, dtype=float)
        for i, name in enumerate(self.space.names):
            if name in ARM_TWIST:
                out[i] = axes.get(name, 0.0)
            elif name == "gripper":
                out[i] = self.gripper
        return out


class ConsoleNode(ManagedNode):
    # In its own process, the executor (the dead man's tick, the robot's state streams) runs
    # real-time beside the page's receiver (the web server thread, also OPERATOR_PRIORITY):
    # at normal priority a competitor can preempt it while it holds the GIL, and then both
    # the dead man's tick and the receiver wait.
    executor_priority = OPERATOR_PRIORITY

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("console", ConsoleSettings, **kwargs)
        self.target: RosConsoleTarget | None = None
        self.server: Any = None
        self._timers: list[Any] = []
        self._was: str = POLICY
        self._last_publish = 0.0

    def load(self) -> None:
        p = self.params()
        deployment_space = command_space(p["robot"], p["action_mode"] or _driver_mode(p["robot"]))
        cameras = [c.strip() for c in p["cameras"].split(",") if c.strip()]
        settings = OperatorSettings(blend_seconds=p["blend_seconds"], timeout=p["timeout"])
        target = self.target = RosConsoleTarget(self, p["robot"], deployment_space, cameras, settings)
        self.period = 1.0 / float(p["publish_rate"])
        StateStreams(self, target.deployment, self._on_state)
        self.create_subscription(Float64MultiArray, "raw_command", self._on_raw, command_qos())
        self.create_subscription(DiagnosticArray, "diagnostics", self._on_diagnostics, status_qos())
        self.create_subscription(String, "episodes", self._on_episode, status_qos())
        self.create_subscription(PoseStamped, "goal", self._on_goal, mission_qos())
        self.create_subscription(Twist, "cmd_vel", self._on_cmd_vel, mission_qos())
        for cam in cameras:
            self.create_subscription(CompressedImage, f"{cam}/image_raw/compressed",
                                     lambda msg, cam=cam: self._on_image(cam, msg), sensor_qos())
        channel = target.deployment.operator.channel
        self.pub: Any = {"teleop_command": lambda: self.create_publisher(Float64MultiArray, "teleop_command",
                                                                         command_qos()),
                         "cmd_vel": lambda: self.create_publisher(Twist, "operator_cmd_vel", command_qos()),
                         "goal": lambda: self.create_publisher(PoseStamped, "operator_goal", command_qos())}[channel]()
        filter_name = p["safety_filter"]
        self.trip_client = self.create_client(Trigger, f"{filter_name}/trip_estop")
        self.reset_client = self.create_client(Trigger, f"{filter_name}/reset")
        self._serve(p)

    def _serve(self, p: dict[str, Any]) -> None:
        import argparse

        from sim2real.console.launch import start_console

        if self.target is not None and self.server is None:
            self.server = start_console(self.target, argparse.Namespace(
                console_bind=p["bind"], console_port=int(p["port"]), console_spacemouse=bool(p["spacemouse"])))

    def start(self) -> None:
        self._timers = [self.create_control_timer(self.period, self._tick)]  # report(): the base's 1 Hz timer

    def stop(self) -> None:
        for timer in self._timers:
            self.destroy_timer(timer)
        self._timers = []

    def report(self) -> None:
        """1 Hz status on ``diagnostics`` like every node's (``deploy`` waits for it): who
        commands, the port the page is served on, the counts. Never the token: the URL
        with it is printed on this process's stderr only (diagnostics reach every
        listener and the bag)."""
        target, server = self.target, self.server
        if target is None:
            return
        with target.lock:
            control = target.control
            values: dict[str, Any] = {"mode": control.mode, "operator": bool(control.owner), "estop": control.estop,
                                      **control.counts}
        try:
            values["port"] = server.port if server is not None else 0
        except RuntimeError:  # not listening (any more)
            values["port"] = 0
        self.publish_status(0 if values["port"] else 1, f"{values['mode']}, page on port {values['port']}", values)

    def unload(self) -> None:
        self._stop_server()

    def destroy_node(self) -> None:
        self._stop_server()  # the page's server goes with the node, however the node ends
        super().destroy_node()

    def _stop_server(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def call(self, client: Any, timeout: float = 2.0) -> tuple[bool, str]:
        """Call a Trigger service and wait for its answer (the executor answers it)."""
        if not client.service_is_ready() and not client.wait_for_service(timeout_sec=timeout):
            return False, f"{client.srv_name} is not available"
        done = threading.Event()
        future = client.call_async(Trigger.Request())
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            return False, f"{client.srv_name} did not answer within {timeout:.0f} s"
        result = future.result()
        return (bool(result.success), str(result.message)) if result is not None else (False, "no answer")

    # -- inputs -----------------------------------------------------------------------------------
    def _on_state(self, topic: str, values: dict[str, np.ndarray | None], header: Any) -> None:
        if self.target is not None:
            with self.target.lock:
                for name, value in values.items():
                    if hasattr(self.target.m, name):
                        setattr(self.target.m, name, value)

    def _on_raw(self, msg: Float64MultiArray) -> None:
        values = np.asarray(msg.data, dtype=float)
        if self.target is not None and values.shape == (self.target.space.size,) and np.all(np.isfinite(values)):
            with self.target.lock:
                self.target.policy_command = (values, time.monotonic())

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        status = M.node_status(msg, self.param("safety_filter"))
        if self.target is not None and status is not None:
            with self.target.lock:
                d = self.target.diagnostics = status[0]
                self.target.filter_estop(d.get("estop") == "True", d.get("latched", ""))

    def _on_episode(self, msg: String) -> None:
        try:
            record = json.loads(msg.data)
            success, held = bool(record["success"]), bool(record.get("under_latch", False))
        except (ValueError, KeyError, TypeError, AttributeError):
            return self.log_throttled("episode", "ignored a malformed episodes message", level="warning")
        if self.target is not None:
            with self.target.lock:
                self.target.episodes.end(success, counted=not held)

    def _on_goal(self, msg: PoseStamped) -> None:
        pos, _ = M.pose_arrays(msg.pose)
        if self.target is not None and np.all(np.isfinite(pos)):
            with self.target.lock:
                self.target.mission["goal"] = pos

    def _on_cmd_vel(self, msg: Twist) -> None:
        lin, ang = M.twist_arrays(msg)
        cmd = np.array([lin[0], lin[1], ang[2]])
        if self.target is not None and np.all(np.isfinite(cmd)):
            with self.target.lock:
                self.target.mission["cmd_vel"] = cmd

    def _on_image(self, camera: str, msg: CompressedImage) -> None:
        data = bytes(msg.data)
        if "jpeg" not in msg.format.lower() or not data.startswith(b"\xff\xd8") or len(data) > MAX_JPEG_BYTES:
            return self.log_throttled(f"image{camera}", f"ignored a {camera} frame that is no JPEG", level="warning")
        if self.target is not None:
            self.target.frames.put(camera, data, M.stamp_to_sec(msg.header.stamp))

    # -- the person's command out -----------------------------------------------------------------
    def _tick(self) -> None:
        self.publish_operator()

    def publish_operator(self) -> None:
        """The person's command (or the hold) into the graph; nothing while the policy commands."""
        target = self.target
        if target is None or not self.active:
            return
        now = time.monotonic()
        with target.lock:
            # Published on the timer and at once on each command: integrate over the real interval.
            dt = min(max(now - self._last_publish, 0.0), 2 * self.period)
            self._last_publish = now
            out = target.control.output(now, target.policy_in_operator_space(now))
            target.episodes.step(0.0, out.mode == HUMAN)
            self._was, was = out.mode, self._was
            if out.mode == POLICY or out.command is None:
                target.setpoint = None
                target.follow_policy(now)
                return
            channel = target.deployment.operator.channel
            if channel == "teleop_command":
                command = target.teleop_command(out.command, dt, now)
                self.pub.publish(M.command_array(command, target.space.names))
            elif channel == "cmd_vel":
                self.pub.publish(M.twist(np.r_[out.command[:2], 0.0], np.r_[0.0, 0.0, out.command[2]]))
            else:  # goal: the setpoint starts where the mission's is and moves at the person's velocity
                if target.setpoint is None or was == POLICY:
                    start = target.mission.get("goal", target.m.base_pos)
                    target.setpoint = None if start is None else np.array(start, dtype=float)
                if target.setpoint is not None:
                    target.setpoint = target.setpoint + out.command * dt
                    self.pub.publish(M.pose_stamped(target.setpoint, np.array([1.0, 0, 0, 0]),
                                                    self.get_clock().now().to_msg()))


def _driver_mode(robot: str) -> str:
    from sim2real.sim import robot_deployment

    deployment = robot_deployment(robot)
    return deployment.driver_mode(deployment.action_mode, {})[0]


def _rpy(r: np.ndarray) -> np.ndarray:
    return np.array([np.arctan2(r[2, 1], r[2, 2]), -np.arcsin(np.clip(r[2, 0], -1.0, 1.0)),
                     np.arctan2(r[1, 0], r[0, 0])])


def _round(values: np.ndarray | None) -> list[float] | None:
    return None if values is None else [round(float(v), 4) for v in values]


def main(args: list[str] | None = None) -> int:
    return run_node(ConsoleNode, args)


if __name__ == "__main__":
    raise SystemExit(main())
