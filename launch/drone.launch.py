"""Deployment graph of the quadrotor (thrust and body-rate commands, geofence, tilt limit, hover-then-land).

    ros2 launch sim2real drone.launch.py                      # simulated robot, classical controller
    ros2 launch sim2real drone.launch.py backend:=real policy:=/path/to/policy.onnx
    ros2 launch sim2real drone.launch.py record:=true         # MCAP rosbag2 of the run
    ros2 launch sim2real drone.launch.py planner:=true policy:=policies/baselines/DroneWaypoints

Nodes (parameters from share/sim2real/config/drone.yaml, ros__parameters form):
planner (planner:=true: a waypoint mission's sequence on `plan`, for DroneWaypoints),
sim_bridge (backend:=sim only), hardware_bridge (backend:=real only: a
Crazyflie through cflib's CRTP link; try it against `sim2real hardware emulate --robot
drone`), policy, safety_filter, recorder (record:=true),
console (console:=true). The hardware bridge keeps the robot in its safe state until its
pre-flight check passes and it is enabled (`auto_enable` or its ~/enable service;
docs/hardware.md).
Each runs as sim2real deploy --node NAME -- --ros-args ... and configures and
activates itself (autostart). The graph itself (arguments, nodes, conditions) is
sim2real.ros_nodes.launch_description, shared by every robot's launch file.
"""

from sim2real.ros_nodes.launch_description import generate

ROBOT = "drone"


def generate_launch_description():
    return generate(ROBOT)
