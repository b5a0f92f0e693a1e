"""Deployment graph of the Holybro X500 (a PX4 multicopter: thrust and body-rate commands
through MAVLink offboard, geofence, tilt limit, hover-then-land).

    ros2 launch sim2real x500.launch.py                       # simulated X500, its classical controller
    ros2 launch sim2real x500.launch.py backend:=real         # PX4 SITL's offboard port (udpout:127.0.0.1:14580)
    ros2 launch sim2real x500.launch.py backend:=real backend_options:='{"url": "serial:/dev/ttyACM0:921600"}'
    sim2real hardware emulate --robot x500 &                  # its emulator: PX4 behind MAVLink on loopback
    ros2 launch sim2real x500.launch.py backend:=real policy:=X500Waypoints   # + its planner

Nodes (parameters from share/sim2real/config/x500.yaml): planner (a waypoint mission's
sequence on `plan`, for X500Waypoints), sim_bridge (backend:=sim only), hardware_bridge
(backend:=real only: the ``px4`` backend, with the X500's airframe behind its normalized
thrust), policy, safety_filter, recorder (record:=true), console (console:=true), as
every robot's launch file (sim2real.ros_nodes.launch_description; docs/deployment.md,
"Launch behaviour"). The hardware bridge keeps the vehicle disarmed until its pre-flight
check passes and it is enabled (`auto_enable` or its ~/enable service; docs/hardware.md).
"""

from sim2real.ros_nodes.launch_description import generate

ROBOT = "x500"


def generate_launch_description():
    return generate(ROBOT)
