"""``hardware_bridge``: the ROS 2 driver of a real arm speaking the sim2real arm protocol
(``hardware/arm_protocol.py``, UDP), or of its emulator (``sim2real hardware emulate``).

It exposes exactly what ``sim_bridge`` exposes for the arm, with the same QoS:
``joint_states``, ``ee_pose``, ``ee_pose_desired`` (sensor data, published the moment a
state packet arrives, stamped with the arrival time), the ``command`` subscription
(std_msgs/Float64MultiArray, physical units, checked for size, labels and finite
values before anything is sent, and accepted from the safety filter only: see
:mod:`sim2real.ros_nodes.command_gate`), ``goal`` and
``episodes`` when the robot side sends MISSION packets (the emulator does; with a real
robot an operator publishes ``goal``), and ``diagnostics`` with the packet statistics
of both directions and the robot's status word.

A receive thread owns the socket's input; the executor thread only sends. The robot
itself holds when commands stop (``command_timeout`` on its side), so a dead host, a
dead bridge or a lost network all end in a holding arm.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from rclpy.event_handler import SubscriptionEventCallbacks
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from sim2real.hardware.arm_client import ArmLink, Received
from sim2real.hardware.arm_protocol import Mission, State, Status, mode_from_name
from sim2real.policies.safety.spaces import command_space
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.base import ManagedNode, percentiles_ms, run_node
from sim2real.ros_nodes.command_gate import CommandGate
from sim2real.ros_nodes.latency import LatencyStats
from sim2real.ros_nodes.qos import command_qos, mission_qos, sensor_qos, status_qos
from sim2real.ros_nodes.settings import HardwareBridgeSettings
from sim2real.sim import robot_deployment
from sim2real.sim.core.errors import ConfigError

STATUS_BITS = {str(bit.name).lower(): bit for bit in Status}


class HardwareBridge(ManagedNode):
    """ROS 2 <-> arm protocol. Counters: see :meth:`summary`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("hardware_bridge", HardwareBridgeSettings, **kwargs)
        self.link: ArmLink | None = None
        self.commands_received = self.commands_rejected = self.commands_sent = self.send_failures = 0
        self.commands_without_state = 0
        self.commands_refused = 0
        self.deadline_misses = 0
        self.status_counts = dict.fromkeys(STATUS_BITS, 0)
        self.robot_status = Status(0)
        self.episodes = self.successes = 0
        self.latencies = LatencyStats()
        """Seconds from a state packet's arrival to the command computed from it leaving."""
        self.state_sequence = 0
        self._state_arrival = 0.0
        self._last_goal: tuple | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._status_timer: Any = None

    # -- lifecycle -------------------------------------------------------------------
    def load(self) -> None:
        p = self.params()
        if p["robot"] != "arm":
            raise ConfigError("robot", f"the hardware bridge speaks the arm protocol only, not {p['robot']!r}")
        self.info = robot_deployment("arm")
        self.space = command_space("arm", p["action_mode"])
        self.link = ArmLink((p["robot_address"], int(p["robot_port"])), mode_from_name(p["action_mode"]),
                            local=(p["local_address"], int(p["local_port"])))
        sensor = sensor_qos()
        self.pub_joints = self.create_publisher(JointState, "joint_states", sensor)
        self.pub_ee = self.create_publisher(PoseStamped, "ee_pose", sensor)
        self.pub_ee_d = self.create_publisher(PoseStamped, "ee_pose_desired", sensor)
        self.pub_goal = self.create_publisher(PoseStamped, "goal", mission_qos()) if p["publish_mission"] else None
        self.pub_episode = self.create_publisher(String, "episodes", status_qos())
        events = SubscriptionEventCallbacks(deadline=self._on_deadline)
        self.create_subscription(Float64MultiArray, "command", self._on_command,
                                 command_qos(p["command_deadline"]), event_callbacks=events)
        self.gate = CommandGate(self, "command", p["command_publisher"])
        self.state_timeout = float(p["state_timeout"])
        self.get_logger().info(f"arm at {self.link.robot[0]}:{self.link.robot[1]} from "
                               f"{self.link.local_address[0]}:{self.link.local_address[1]} "
                               f"({self.space.action_mode}; command elements: {list(self.space.names)})")

    def unload(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._receive_loop, name="hardware_bridge_rx", daemon=True)
        self._thread.start()
        self._status_timer = self.create_control_timer(1.0, self.report)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._status_timer is not None:
            self.destroy_timer(self._status_timer)
            self._status_timer = None

    def destroy_node(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self.unload()
        super().destroy_node()

    # -- robot -> ROS ----------------------------------------------------------------
    def _receive_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._receive()
            except Exception as exc:  # keep the driver alive; no state meanwhile: the watchdogs act
                if not self.context.ok():  # shutting down (Ctrl-C, SIGTERM): nothing left to publish to
                    return
                self.log_throttled("rx_error", f"receive loop error: {exc!r}", level="error")
                self._stop.wait(0.1)

    def _receive(self) -> None:
        link = self.link
        if link is None:  # unloaded while the loop starts: the loop ends with _stop
            self._stop.wait(0.1)
            return
        last_state = time.monotonic()
        link.hello()
        while not self._stop.is_set():
            packet = link.receive(timeout=min(self.state_timeout, 0.1))
            if packet is None or not isinstance(packet.payload, State):
                if packet is not None and isinstance(packet.payload, Mission):
                    self._on_mission(packet.payload)
                if time.monotonic() - last_state > self.state_timeout:
                    # No state: (re)announce ourselves; the policy and the safety filter see the
                    # state stream stop and act on their own watchdogs meanwhile.
                    self.log_throttled("no_state", f"no state from the robot for {self.state_timeout:.2f} s; "
                                                   "sending HELLO", level="warning")
                    link.hello()
                    last_state = time.monotonic()
                continue
            last_state = packet.received_at
            self._on_state(packet, packet.payload)

    def _on_state(self, packet: Received, s: State) -> None:
        """``s``: the packet's payload."""
        self.state_sequence, self._state_arrival = packet.header.sequence, packet.received_at
        self.robot_status = s.status
        for name, bit in STATUS_BITS.items():
            self.status_counts[name] += int(bool(s.status & bit))
        if s.status & Status.ESTOP:
            self.log_throttled("estop", "the robot reports its e-stop engaged: holding", level="error")
        stamp = self.get_clock().now().to_msg()
        self.pub_joints.publish(M.joint_state(self.info.joints, s.joint_pos, s.joint_vel, s.joint_effort, stamp))
        self.pub_ee.publish(M.pose_stamped(s.ee_pos, s.ee_quat, stamp))
        self.pub_ee_d.publish(M.pose_stamped(s.ee_pos_desired, s.ee_quat_desired, stamp))

    def _on_mission(self, m: Mission) -> None:
        if m.episodes > self.episodes:
            self.pub_episode.publish(String(data=json.dumps({"episodes": m.episodes, "successes": m.successes})))
        self.episodes, self.successes = m.episodes, m.successes
        key = tuple(m.goal)
        if self.pub_goal is not None and key != self._last_goal:
            self._last_goal = key
            self.pub_goal.publish(M.pose_stamped(m.goal, np.array([1.0, 0, 0, 0]), self.get_clock().now().to_msg()))

    # -- ROS -> robot ----------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray) -> None:
        refused = self.gate.check()
        if refused:  # the robot holds on its own command timeout
            self.commands_refused += 1
            self.log_throttled("foreign", refused, level="error")
            return
        values, key, reason = M.driver_command(msg, self.space.names)
        if values is None:
            self.commands_rejected += 1
            self.log_throttled(key, reason, level="error")
            return
        self.commands_received += 1
        if not self.active or self.link is None:
            return
        if not self._state_arrival or time.monotonic() - self._state_arrival > self.state_timeout:
            # A command answers a state; with none (or an old one) the robot would refuse it as stale.
            self.commands_without_state += 1
            self.log_throttled("no_state_command", "command not sent: no recent state from the robot")
            return
        try:
            self.link.send_command(values, self.state_sequence)
        except OSError as exc:  # network down: the robot times out and holds on its own
            self.send_failures += 1
            self.log_throttled("send_failed", f"command not sent: {exc}", level="error")
            return
        self.commands_sent += 1
        if self._state_arrival:
            self.latencies.append(time.monotonic() - self._state_arrival)

    def _on_deadline(self, event: Any) -> None:
        self.deadline_misses += 1

    # -- reporting ---------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        link = self.link.stats.flat() if self.link is not None else {}
        return {"episodes": self.episodes, "successes": self.successes,
                "commands_received": self.commands_received, "commands_rejected": self.commands_rejected,
                "commands_sent": self.commands_sent, "send_failures": self.send_failures,
                "commands_without_state": self.commands_without_state,
                "commands_refused": self.commands_refused,
                "command_deadline_misses": self.deadline_misses,
                "step_overruns": self.status_counts["overrun"], "robot_status": int(self.robot_status),
                **{f"status_{k}": v for k, v in self.status_counts.items()},
                **{f"packets_{k}": v for k, v in link.items()},
                **{f"state_to_send_{k}": v for k, v in percentiles_ms(self.latencies).items()}}

    def report(self) -> None:
        s = self.summary()
        bad = self.robot_status & (Status.ESTOP | Status.ERROR)
        level = 2 if bad else (1 if s["packets_rejected"] or self.robot_status & Status.HOLDING else 0)
        names = [n for n, bit in STATUS_BITS.items() if self.robot_status & bit] or ["ok"]
        self.publish_status(level, f"robot {'+'.join(names)}; {s['packets_rejected']} packets rejected", s)


def main(args: list[str] | None = None) -> int:
    return run_node(HardwareBridge, args)


if __name__ == "__main__":
    raise SystemExit(main())
