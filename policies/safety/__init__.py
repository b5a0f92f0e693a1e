"""Safety filters between a policy and a robot, as plain Python (no ROS).

Each filter has a parameters dataclass and the contract
``filter(command, state) -> (safe_command, FilterReport)``; a
:class:`~sim2real.policies.safety.chain.SafetyChain` runs them per robot class
(:func:`~sim2real.policies.safety.presets.make_chain`). The ROS 2 node
``sim2real.ros_nodes.safety_filter`` wraps a chain; docs/deployment.md is the reference.
"""

from sim2real.policies.safety.base import SafetyFilter
from sim2real.policies.safety.chain import SafetyChain
from sim2real.policies.safety.presets import PARAMS, make_chain, params_from_dict
from sim2real.policies.safety.spaces import CommandSpace, command_space
from sim2real.policies.safety.types import ChainOutput, FilterReport, SafetyState

__all__ = [
    "PARAMS",
    "ChainOutput",
    "CommandSpace",
    "FilterReport",
    "SafetyChain",
    "SafetyFilter",
    "SafetyState",
    "command_space",
    "make_chain",
    "params_from_dict",
]
