"""The arm's kinematics for the ros2_control backends: the simulator's own
(:mod:`sim2real.sim.arm.joint_ik`, where the simulated UR5e runs the same IK step), named
here for the backends and their tests."""

from __future__ import annotations

from sim2real.sim.arm.joint_ik import ArmKinematics, IkConfig, JointChain, arm_model, franka_chain, ur5e_chain

__all__ = ["ArmKinematics", "IkConfig", "JointChain", "arm_model", "franka_chain", "ur5e_chain"]
