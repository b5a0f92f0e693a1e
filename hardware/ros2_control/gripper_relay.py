"""The gripper relay: runs on the robot's PC beside ``franka_gripper_node`` and turns the
width the host wants (std_msgs/Float64 on ``sim2real/gripper_width``, m) into
franka_gripper's own actions, one at a time at the gripper's pace:
``franka_gripper/move`` to open (franka_msgs/action/Move: width, speed) and
``franka_gripper/grasp`` to close (franka_msgs/action/Grasp: width, speed, force, epsilon),
as franka_gripper's own ``gripper_action`` server chooses between them.

Why a relay: franka_msgs has no Python wheel, so the host (pip's rclpy) cannot build its
action types; the robot's PC has them in its franka_ros2 workspace. The gripper takes
about a second per move and runs one action at a time, so the host's 20 Hz width is
never forwarded as a stream: a goal goes out only when no action runs and the wanted
width differs by more than ``--deadband`` from the width last asked for and from the
fingers' (a closed grasp around an object stays as it is).

Self-contained (rclpy and the message packages only): with the franka_ros2 workspace
sourced, ``python3 -m sim2real.hardware.ros2_control.gripper_relay --namespace franka``,
or this file copied to the robot's PC and run with ``python3``. Not tested here: no
franka_msgs (:class:`GoalChooser`, the decisions, is).
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class GripperGoal:
    kind: Literal["move", "grasp"]
    width: float
    """m between the fingers."""


class GoalChooser:
    """Which goal to send, if any, given the wanted width, the fingers' width and whether
    an action runs."""

    def __init__(self, deadband: float = 0.005) -> None:
        self.deadband = deadband
        self._asked: float | None = None

    def next_goal(self, wanted: float | None, current: float | None, busy: bool) -> GripperGoal | None:
        if wanted is None or current is None or busy:
            return None
        if self._asked is not None and abs(wanted - self._asked) < self.deadband:
            return None  # asked already: a grasp stopped by an object is not asked again
        if abs(wanted - current) < self.deadband:
            return None
        self._asked = wanted
        return GripperGoal("move" if wanted > current else "grasp", wanted)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="franka_gripper actions from the width sim2real asks for")
    parser.add_argument("--namespace", default="franka", help="franka.launch.py's namespace:= (default franka)")
    parser.add_argument("--gripper-node", default="franka_gripper",
                        help="franka_gripper_node's name (panda_gripper in franka_ros2's 0.1 releases)")
    parser.add_argument("--speed", type=float, default=0.1, help="m/s (franka_gripper's default_speed)")
    parser.add_argument("--force", type=float, default=20.0, help="N a grasp holds with")
    parser.add_argument("--epsilon", type=float, default=0.08, help="m: a grasp succeeds at any width this close")
    parser.add_argument("--deadband", type=float, default=0.005, help="m: smaller changes send no goal")
    args = parser.parse_args(argv)
    try:
        actions: Any = importlib.import_module("franka_msgs.action")
    except ImportError as exc:
        raise SystemExit(f"franka_msgs is not importable ({exc}): source the franka_ros2 workspace first") from exc
    import rclpy
    from rclpy.action.client import ActionClient
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64

    rclpy.init()
    node = Node("sim2real_gripper_relay", namespace=args.namespace)
    move = ActionClient(node, actions.Move, f"{args.gripper_node}/move")
    grasp = ActionClient(node, actions.Grasp, f"{args.gripper_node}/grasp")
    chooser = GoalChooser(args.deadband)
    state: dict[str, Any] = {"wanted": None, "current": None, "busy": False}

    def on_width(msg: Float64) -> None:
        state["wanted"] = float(msg.data)

    def on_fingers(msg: JointState) -> None:
        state["current"] = float(sum(msg.position))  # each finger is half the width

    def done(_: Any) -> None:
        state["busy"] = False

    def accepted(future: Any) -> None:
        handle = future.result()
        if handle is None or not handle.accepted:
            state["busy"] = False
            return
        handle.get_result_async().add_done_callback(done)

    def tick() -> None:
        goal = chooser.next_goal(state["wanted"], state["current"], state["busy"])
        if goal is None:
            return
        if goal.kind == "move":
            request = actions.Move.Goal(width=goal.width, speed=args.speed)
            client = move
        else:
            request = actions.Grasp.Goal(width=goal.width, speed=args.speed, force=args.force)
            request.epsilon.inner = request.epsilon.outer = args.epsilon
            client = grasp
        state["busy"] = True
        client.send_goal_async(request).add_done_callback(accepted)

    node.create_subscription(Float64, "sim2real/gripper_width", on_width, 10)
    node.create_subscription(JointState, f"{args.gripper_node}/joint_states", on_fingers, 1)
    node.create_timer(0.05, tick)
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
