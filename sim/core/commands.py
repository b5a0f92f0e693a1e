"""A robot's command vector for one action mode, as its robot describes it: element names,
SI units and the affine map from the policy's ``[-1, 1]`` (``command = offset + scale *
action``; log-uniform for ``log_elements``). Each robot's deployment description returns
its own (:meth:`~sim2real.sim.core.deployment.RobotDeployment.command_layout`);
``policies/safety/spaces.py`` builds the safety filter's command space from it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CommandLayout:
    names: tuple[str, ...]
    units: tuple[str, ...]
    offset: np.ndarray
    scale: np.ndarray
    control_dt: float
    log_elements: tuple[int, ...] = ()
    """Indices mapped log-uniformly: ``command = exp(offset + scale * action)``."""
