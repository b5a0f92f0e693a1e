"""Deployment graph of the 7-DoF arm (Cartesian velocity commands, workspace box, joint guards).

    ros2 launch sim2real arm.launch.py                      # simulated robot, classical controller
    ros2 launch sim2real arm.launch.py backend:=real policy:=/path/to/policy.onnx
    ros2 launch sim2real arm.launch.py record:=true         # MCAP rosbag2 of the run

Nodes (parameters from share/sim2real/config/arm.yaml, ros__parameters form):
sim_bridge (backend:=sim only), hardware_bridge (backend:=real only: the ROS 2 driver of
an arm speaking the sim2real UDP protocol, robot_address/robot_port in arm.yaml; try it
against `sim2real hardware emulate --robot arm`), policy, safety_filter, recorder
(record:=true).
Each runs as sim2real deploy --node NAME -- --ros-args ... and configures and
activates itself (autostart).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, SetEnvironmentVariable, Shutdown
from launch.conditions import IfCondition, LaunchConfigurationEquals
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node

from launch import LaunchDescription

ROBOT = "arm"


def _node(name, config, overrides=(), condition=None):
    return Node(
        package="sim2real",
        executable="sim2real",
        name=name,
        arguments=["deploy", "--node", name, "--"],
        parameters=[config, *overrides],
        output="screen",
        emulate_tty=True,
        condition=condition,
        # Any node ending ends the launch: a node that cannot load its policy exits non-zero
        # with one error line, and the rest must not run on without it.
        on_exit=Shutdown(reason=f"{name} exited"),
    )


def _discovery():
    """ROS_AUTOMATIC_DISCOVERY_RANGE for every node: ``auto`` keeps a simulated robot's DDS
    traffic on this machine (LOCALHOST) and lets a real one reach its driver (SUBNET)."""
    d, b = LaunchConfiguration("discovery"), LaunchConfiguration("backend")
    return SetEnvironmentVariable("ROS_AUTOMATIC_DISCOVERY_RANGE", PythonExpression(
        ["'", d, "' if '", d, "' != 'auto' else ('LOCALHOST' if '", b, "' == 'sim' else 'SUBNET')"]))


def generate_launch_description():
    config = os.path.join(get_package_share_directory("sim2real"), "config", ROBOT + ".yaml")
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "backend", default_value="sim", choices=["sim", "real"],
                description="sim: start the MuJoCo sim bridge; real: start the hardware bridge to the arm",
            ),
            DeclareLaunchArgument(
                "policy", default_value="classical",
                description="exported policy (policy.onnx, its .json or folder) or 'classical'",
            ),
            DeclareLaunchArgument("record", default_value="false", description="record an MCAP rosbag2"),
            DeclareLaunchArgument(
                "discovery", default_value="auto", choices=["auto", "LOCALHOST", "SUBNET", "SYSTEM_DEFAULT", "OFF"],
                description="DDS discovery range; auto: LOCALHOST for backend:=sim, SUBNET for real "
                            "(then secure the graph with SROS2, docs/deployment.md)",
            ),
            _discovery(),
            _node("sim_bridge", config, condition=LaunchConfigurationEquals("backend", "sim")),
            _node("hardware_bridge", config, condition=LaunchConfigurationEquals("backend", "real")),
            _node("safety_filter", config),
            _node("policy", config, overrides=[{"policy": LaunchConfiguration("policy")}]),
            _node("recorder", config, condition=IfCondition(LaunchConfiguration("record"))),
        ]
    )
