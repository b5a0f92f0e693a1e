"""What a Franka under ros2_control presents on ROS 2, shared by the backend and its
emulator: joint names, topic names, QoS, and a private rclpy context spun on a thread.

Names follow franka_ros2 with ``arm_id`` (``panda`` by default: the simulated arm has the
Panda's kinematics and limits; an FR3 runs with ``arm_id: fr3``, franka_ros2's
``robot_type``). All topics are relative to the robot's namespace (franka.launch.py's
``namespace:=``; ``franka`` by default, :data:`NAMESPACE`).

franka_ros2's own topology (``topology: franka_ros2``, franka_bringup's franka.launch.py):

* ``franka/joint_states`` (sensor_msgs/JointState): the 7 arm joints from
  ``joint_state_broadcaster`` (``ros2_control_node`` remaps its ``joint_states`` there),
  once per controller-manager update: 1 kHz (franka's controllers.yaml ``update_rate``),
  250 Hz with our controller file (the broadcaster's own ``update_rate``).
* ``franka_gripper/joint_states``: ``<arm_id>_finger_joint1/2`` from ``franka_gripper_node``
  (each finger half the width, velocities 0) at its ``state_publish_rate`` (15 Hz in
  franka_ros2's franka_gripper_node.yaml; 50 Hz in the 0.1 releases); absent without a
  gripper (``load_gripper:=false``).
* ``joint_states``: ``joint_state_publisher`` merging both at ``rate: 30``, for RViz. Not
  read: 30 Hz is slower than the policy's loop.
* ``joint_trajectory_controller/joint_trajectory`` (trajectory_msgs/JointTrajectory):
  ros2_controllers' joint trajectory controller, loaded from the file we ship
  (config/franka_ros2_controllers.yaml).
* ``franka_gripper/move``, ``grasp``, ``homing`` (franka_msgs actions): the gripper's
  own interface. franka_msgs has no Python wheel, so the host sends the width on
  :data:`GRIPPER_WIDTH` and the relay (:mod:`.gripper_relay`, run on the robot's PC where
  franka_msgs is installed) turns it into Move/Grasp goals. The gripper node is
  ``panda_gripper`` in franka_ros2's 0.1 releases (the backend's ``gripper_node``).

The single-stream topology (``topology: merged``, this project's first emulator): all 9
joints in one ``joint_states``, ``forward_position_controller/commands``
(std_msgs/Float64MultiArray, 7 positions) and ``gripper_controller/commands`` (one
element, the width).

ros2_control's controllers subscribe with the system default QoS (reliable, keep last
10); the broadcaster publishes the same way. The backend subscribes best effort, keep
last 1 (a late joint state is worthless), which matches a reliable publisher.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Literal

from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

ARM_STATES = "franka/joint_states"
GRIPPER_STATES = "franka_gripper/joint_states"
JOINT_STATES = "joint_states"
"""franka_ros2: joint_state_publisher's 30 Hz merge; ``merged``: all 9 joints at full rate."""
TRAJECTORY = "joint_trajectory_controller/joint_trajectory"
GRIPPER_WIDTH = "sim2real/gripper_width"
"""std_msgs/Float64: the wanted width between the fingers, m (to the gripper relay)."""
POSITION_COMMANDS = "forward_position_controller/commands"
GRIPPER_COMMANDS = "gripper_controller/commands"
"""Relative to the robot's namespace (:data:`NAMESPACE`)."""

ARM_STATE_RATE = 1000.0
"""Hz of ``franka/joint_states`` with franka_bringup's own controllers.yaml (the broadcaster
runs at the controller manager's ``update_rate``)."""
BROADCASTER_RATE = 250.0
"""Hz of ``franka/joint_states`` with the controller file we ship
(config/franka_ros2_controllers.yaml: the broadcaster's own ``update_rate``): what the
host reads at most anyway (``read_rate_hz``), at a quarter of the DDS traffic."""
GRIPPER_STATE_RATE = 15.0
"""Hz of ``franka_gripper/joint_states``: franka_gripper_node.yaml's ``state_publish_rate``."""

NAMESPACE = "franka"
"""Where the robot's ros2_control graph lives (franka_ros2's ``namespace:=franka``). Not
the root: the deployment graph's own ``/joint_states`` (the simulator's joint names, the
policy's and the safety filter's input, published by the hardware bridge) would collide
with the robot's."""


Topology = Literal["franka_ros2", "merged"]
CommandInterface = Literal["position", "velocity", "trajectory"]
"""How an arm's targets reach its controller: a forward position or velocity controller's
stream (the backend interpolates), or one joint trajectory point per target (the
controller interpolates)."""


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
