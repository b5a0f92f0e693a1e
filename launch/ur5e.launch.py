"""Deployment graph of the UR5e (flange velocity commands through ur_robot_driver's
forward position controller, workspace box, joint guards).

    ros2 launch sim2real ur5e.launch.py                     # simulated UR5e, its classical reach
    ros2 launch sim2real ur5e.launch.py backend:=real backend_options:='{"domain_id": 7}'
                                                            # a UR under ur_robot_driver on domain 7
    sim2real hardware emulate --robot ur5e &              # its emulator, the driver on domain 0
    ros2 launch sim2real ur5e.launch.py backend:=real backend_options:='{"domain_id": 0}'

Nodes (parameters from share/sim2real/config/ur5e.yaml): sim_bridge (backend:=sim only),
hardware_bridge (backend:=real only: the ``ur`` backend, ur_robot_driver's topics in the
DDS domain its ``backend_options`` name: the driver runs at the root namespace, so
``backend:=real`` without ``domain_id`` fails), policy, safety_filter, recorder
(record:=true), console (console:=true), as every robot's launch file
(sim2real.ros_nodes.launch_description; docs/deployment.md, "Launch behaviour").
"""

from sim2real.ros_nodes.launch_description import generate

ROBOT = "ur5e"


def generate_launch_description():
    return generate(ROBOT)
