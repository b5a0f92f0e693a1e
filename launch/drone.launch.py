"""Deployment graph of the quadrotor (thrust and body-rate commands, geofence, tilt limit, hover-then-land).

    ros2 launch sim2real drone.launch.py                      # simulated robot, classical controller
    ros2 launch sim2real drone.launch.py backend:=real policy:=/path/to/policy.onnx
    ros2 launch sim2real drone.launch.py record:=true         # MCAP rosbag2 of the run

Nodes (parameters from share/sim2real/config/drone.yaml, ros__parameters form):
sim_bridge (backend:=sim only; with backend:=real the robot's driver publishes the state
topics and subscribes to command), policy, safety_filter, recorder (record:=true).
Each runs as sim2real deploy --node NAME -- --ros-args ... and configures and
activates itself (autostart). The graph itself (arguments, nodes, conditions) is
sim2real.ros_nodes.launch_description, shared by every robot's launch file.
"""

from sim2real.ros_nodes.launch_description import generate

ROBOT = "drone"


def generate_launch_description():
    return generate(ROBOT)
