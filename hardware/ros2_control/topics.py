"""What a Franka under ros2_control presents on ROS 2, shared by the backend and its
emulator: joint names, topic names, QoS, and a private rclpy context spun on a thread.

Names follow franka_ros2 with ``arm_id`` (``panda`` by default: the simulated arm has the
Panda's kinematics and limits; an FR3 runs with ``arm_id: fr3``):

All topics are in the robot's namespace (``/franka/...`` by default, :data:`NAMESPACE`):

* ``joint_states`` (sensor_msgs/JointState): ``<arm_id>_joint1..7`` from
  ``joint_state_broadcaster`` and ``<arm_id>_finger_joint1/2`` (each finger's opening,
  m) from the gripper's state publisher, merged as franka's launch files merge them.
* ``forward_position_controller/commands`` (std_msgs/Float64MultiArray, 7 joint
  positions in joint order): ros2_control's ``forward_command_controller``.
* ``joint_trajectory_controller/joint_trajectory`` (trajectory_msgs/JointTrajectory).
* ``gripper_controller/commands`` (std_msgs/Float64MultiArray, one element: the width
  between the fingers, m). Franka's gripper is really an action server
  (``franka_gripper/move``: width, speed); a forward position controller on the width
  is the simplest topic-only stand-in with the same meaning of the number.

ros2_control's controllers subscribe with the system default QoS (reliable, keep last
10); the broadcaster publishes the same way. The backend subscribes best effort, keep
last 1 (a late joint state is worthless), which matches a reliable publisher.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

JOINT_STATES = "joint_states"
POSITION_COMMANDS = "forward_position_controller/commands"
TRAJECTORY = "joint_trajectory_controller/joint_trajectory"
GRIPPER_COMMANDS = "gripper_controller/commands"
"""Relative to the robot's namespace (:data:`NAMESPACE`)."""

NAMESPACE = "franka"
"""Where the robot's ros2_control graph lives (franka_ros2's ``namespace:=franka``). Not
the root: the deployment graph's own ``/joint_states`` (the simulator's joint names, the
policy's and the safety filter's input, published by the hardware bridge) would collide
with the robot's."""


def arm_joint_names(arm_id: str = "panda") -> tuple[str, ...]:
    """The 7 arm joints as franka_ros2 names them, in the simulator's joint order."""
    return tuple(f"{arm_id}_joint{i}" for i in range(1, 8))


def finger_joint_names(arm_id: str = "panda") -> tuple[str, ...]:
    """The two finger joints (the simulator's ``finger_left``, ``finger_right``)."""
    return (f"{arm_id}_finger_joint1", f"{arm_id}_finger_joint2")


def controller_qos() -> QoSProfile:
    """ros2_control's ``SystemDefaultsQoS``: reliable, keep last 10, volatile."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def state_qos() -> QoSProfile:
    """What the host reads joint states with: best effort, keep last 1."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def domain_id(options: dict[str, Any]) -> int:
    """The DDS domain: ``options["domain_id"]``, else ``$ROS_DOMAIN_ID``, else 0."""
    value = options.get("domain_id", os.environ.get("ROS_DOMAIN_ID", "0"))
    return int(value)


class RosThread:
    """One rclpy context, one node and a single-threaded executor spinning on its own
    thread: the backend and the emulator each get their own, so neither depends on
    whoever else uses rclpy in the process (the bridge's own context, other tests)."""

    def __init__(self, node_name: str, domain: int, namespace: str = NAMESPACE,
                 realtime: tuple[str, int] | None = None) -> None:
        self.context = Context()
        self._realtime = realtime
        """(name, SCHED_FIFO priority) to spin at (:mod:`sim2real.hardware.realtime`), or None."""
        import rclpy

        rclpy.init(context=self.context, domain_id=domain)
        self.node = Node(node_name, namespace=namespace, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.error = ""
        """Why the executor stopped spinning on its own (empty while it spins)."""
        self._thread = threading.Thread(target=self._spin, name=f"{node_name}_spin", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        import contextlib

        from rclpy.executors import ExternalShutdownException

        from sim2real.hardware.realtime import FAST_DDS_RECEIVE_THREADS, realtime_thread

        # At real-time priority when asked: a real-time loop of this process waits for the
        # GIL whenever this thread holds it, and a normal-priority holder is preempted by
        # every competing process meanwhile. Fast DDS's listeners with it, as the graph's
        # executors raise theirs: they deliver the joint states it waits for.
        scheduled = (realtime_thread(self._realtime[0], self._realtime[1], cpu=None,
                                     helpers=FAST_DDS_RECEIVE_THREADS) if self._realtime
                     else contextlib.nullcontext())
        try:
            with scheduled:
                self.executor.spin()
        except ExternalShutdownException:  # close(): the context shut down under the executor
            return
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    @property
    def spinning(self) -> bool:
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop spinning, destroy the node, shut the context down (idempotent)."""
        import rclpy

        if not self.context.ok():
            return
        self.executor.shutdown(timeout_sec=2.0)
        self._thread.join(timeout=2.0)  # no callback may run while the node is destroyed
        self.node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)
