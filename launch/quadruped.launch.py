"""Deployment graph of the quadruped (joint position targets, fall and torque protection, stand-down).

    ros2 launch sim2real quadruped.launch.py                      # simulated robot, classical controller
    ros2 launch sim2real quadruped.launch.py backend:=real policy:=/path/to/policy.onnx
    ros2 launch sim2real quadruped.launch.py record:=true         # MCAP rosbag2 of the run

Nodes (parameters from share/sim2real/config/quadruped.yaml, ros__parameters form):
sim_bridge (backend:=sim only; with backend:=real the robot's driver publishes the state
topics and subscribes to command), policy, safety_filter, recorder (record:=true).
Each runs as sim2real deploy --node NAME -- --ros-args ... and configures and
activates itself (autostart). The graph itself (arguments, nodes, conditions) is
sim2real.ros_nodes.launch_description, shared by every robot's launch file.
"""

from sim2real.ros_nodes.launch_description import generate

ROBOT = "quadruped"


def generate_launch_description():
    return generate(ROBOT)
