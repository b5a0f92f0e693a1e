"""Deployment graph of the quadrotor (thrust and body-rate commands, geofence, tilt limit, hover-then-land).

    ros2 launch sim2real drone.launch.py                      # simulated robot, its shipped policy
    ros2 launch sim2real drone.launch.py backend:=real policy:=/path/to/policy.onnx
    ros2 launch sim2real drone.launch.py backend:=real hardware_backend:=px4   # a PX4 vehicle over MAVLink
    ros2 launch sim2real drone.launch.py record:=true         # MCAP rosbag2 of the run
    ros2 launch sim2real drone.launch.py policy:=classical    # its classical controller
    ros2 launch sim2real drone.launch.py policy:=DroneWaypoints   # + its planner

Nodes (parameters from share/sim2real/config/drone.yaml, ros__parameters form, and what the
policy needs: its task, command layout and planner, as `sim2real deploy` sets them):
planner (a waypoint mission's sequence on `plan`, for DroneWaypoints: started for a policy
that follows a path, planner:=true/false forces it on/off),
sim_bridge (backend:=sim only), hardware_bridge (backend:=real only: a
Crazyflie through cflib's CRTP link, or with hardware_backend:=px4 a PX4 vehicle through
MAVLink offboard; try either against `sim2real hardware emulate --robot drone
[--backend px4]`), policy, safety_filter, recorder (record:=true),
console (console:=true). The hardware bridge keeps the robot in its safe state until its
pre-flight check passes and it is enabled (`auto_enable` or its ~/enable service;
docs/hardware.md).
Each runs as sim2real deploy --node NAME -- --ros-args ... and configures and
activates itself (autostart). A node that exits ends the launch, non-zero with its
reason when it failed; nodes end with the launch process however it ends. The graph
itself (arguments, nodes, parameters) is sim2real.ros_nodes.launch_description, shared
by every robot's launch file (docs/deployment.md, "Launch behaviour").
"""

from sim2real.ros_nodes.launch_description import generate

ROBOT = "drone"


def generate_launch_description():
    return generate(ROBOT)
