"""Deployment graph of the quadruped (joint position targets, fall and torque protection, stand-down).

    ros2 launch sim2real quadruped.launch.py                      # simulated robot, classical controller
    ros2 launch sim2real quadruped.launch.py backend:=real policy:=/path/to/policy.onnx
    ros2 launch sim2real quadruped.launch.py record:=true         # MCAP rosbag2 of the run
    ros2 launch sim2real quadruped.launch.py planner:=true policy:=policies/baselines/QuadrupedWaypoints

Nodes (parameters from share/sim2real/config/quadruped.yaml, ros__parameters form):
planner (planner:=true: the path a QuadrupedWaypoints policy follows, on `plan`),
sim_bridge (backend:=sim only), hardware_bridge (backend:=real only: a
Unitree Go2 through its low-level DDS topics rt/lowstate and rt/lowcmd; try it against
`sim2real hardware emulate --robot quadruped`), policy, safety_filter, recorder (record:=true),
console (console:=true). The hardware bridge keeps the robot in its safe state until its
pre-flight check passes and it is enabled (`auto_enable` or its ~/enable service;
docs/hardware.md).
Each runs as sim2real deploy --node NAME -- --ros-args ... and configures and
activates itself (autostart). The graph itself (arguments, nodes, conditions) is
sim2real.ros_nodes.launch_description, shared by every robot's launch file.
"""

from sim2real.ros_nodes.launch_description import generate

ROBOT = "quadruped"


def generate_launch_description():
    return generate(ROBOT)
