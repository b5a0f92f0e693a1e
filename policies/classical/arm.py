"""Scripted Cartesian controller for the arm: reaching and peg insertion.

It drives the arm's Cartesian impedance (``ee_delta`` or ``ee_impedance`` action modes).
The action moves the impedance setpoint; each control step the controller moves it a
fraction ``setpoint_gain`` of the way to the goal (``goal - setpoint``, the setpoint read
from the ``setpoint_offset`` block) plus a small integral term ``ki * (goal - x)`` that
removes the steady-state error of payloads and the null-space springs, rate-limited to
``max_speed``. A gain below 1 keeps the loop stable with a control step of actuation
latency (with gain 1 it would oscillate). Together with the impedance law inside MuJoCo
this is an operational-space controller ``F = K (x_goal - x) - D xdot`` with a
rate-limited, integrating setpoint.

Used as the demo's arm controller and as the scripted operator for human-in-the-loop RL.

Behaviour by observation layout:

``target_rel_ee`` (reach)
    move the fingertip to the target, gripper pointing down.
``hole_rel_peg_tip`` (peg_insert)
    hover ``hover_height`` above the hole, align within ``align_tolerance``, then descend
    at ``insert_speed`` toward ``insert_overshoot`` below the required depth.
"""

from __future__ import annotations

import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.arm.control import REF_QUAT
from sim2real.sim.arm.rotations import mat_to_quat, quat_conj, quat_mul, quat_to_rotvec, rot6d_to_mat
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.core.task import Task

Layout = list[tuple[str, int]]


class ArmCartesianController:
    """Batched reaching / peg-insertion controller.

    Args:
        observation_layout: The task's ``observation_layout()``.
        action_layout: The task's ``action_layout()`` (``ee_delta`` or ``ee_impedance``).
        setpoint_gain: Fraction of the setpoint-to-goal distance moved per step.
        ki: Integral gain per control step on the measured pose error (not applied to
            the peg's descent, so pressing on the hole's bottom winds nothing up).
        max_speed: Largest setpoint speed (m/s) while moving freely.
        stiffness_action: Stiffness action in [-1, 1] used in ``ee_impedance`` mode
            (0 = geometric middle of the stiffness range).
        hover_height: Peg: height of the peg tip above the hole while aligning (m).
        align_tolerance: Peg: horizontal error below which the peg descends (m).
        insert_overshoot: Peg: how far below the required depth the setpoint goes (m),
            which presses the peg down with ``K * overshoot``.
        insert_depth: Peg: depth below the hole's top the peg must reach (m).
        insert_speed: Peg: setpoint speed while descending into the hole (m/s).
    """

    def __init__(
        self,
        observation_layout: Layout,
        action_layout: Layout,
        setpoint_gain: float = 0.5,
        ki: float = 0.1,
        max_speed: float = 0.6,
        stiffness_action: float = 0.0,
        hover_height: float = 0.02,
        align_tolerance: float = 0.002,
        insert_overshoot: float = 0.01,
        insert_depth: float = 0.03,
        insert_speed: float = 0.05,
    ) -> None:
        self.obs_index = layout_slices(observation_layout)
        self.act_index = layout_slices(action_layout)
        self.action_size = sum(n for _, n in action_layout)
        if "ee_delta_pos" not in self.act_index:
            raise ConfigError("action_mode", "ArmCartesianController needs the ee_delta or ee_impedance action mode")
        if "target_rel_ee" in self.obs_index:
            self.mode = "reach"
        elif "hole_rel_peg_tip" in self.obs_index:
            self.mode = "peg"
        else:
            raise ConfigError("observation_layout", "needs a 'target_rel_ee' (reach) or 'hole_rel_peg_tip' (peg) block")
        if "setpoint_offset" not in self.obs_index:
            raise ConfigError("observation_layout", "needs the 'setpoint_offset' block of the Cartesian action modes")
        if not 0.0 < setpoint_gain <= 1.0:
            raise ConfigError("setpoint_gain", f"must be in (0, 1], got {setpoint_gain}")
        if not 0.0 <= ki <= 1.0:
            raise ConfigError("ki", f"must be in [0, 1], got {ki}")
        if max_speed <= 0 or insert_speed <= 0:
            raise ConfigError("max_speed", "speeds must be positive")
        self.setpoint_gain = setpoint_gain
        self.ki = ki
        self.max_step = min(max_speed * C.CONTROL_DT, C.EE_DELTA_POS_MAX)
        self.insert_step = min(insert_speed * C.CONTROL_DT, C.EE_DELTA_POS_MAX)
        self.stiffness_action = float(np.clip(stiffness_action, -1.0, 1.0))
        self.hover_height = hover_height
        self.align_tolerance = align_tolerance
        self.insert_overshoot = insert_overshoot
        self.insert_depth = insert_depth
        self._descending: np.ndarray | None = None

    @classmethod
    def for_task(cls, task: Task, **kwargs: float) -> ArmCartesianController:
        """Build from a task instance (``env.task`` or ``vec_env.task``)."""
        return cls(task.observation_layout(), task.action_layout(), **kwargs)

    def reset(self, env_ids: np.ndarray | list[int] | None = None) -> None:
        """Forget per-episode state of ``env_ids`` (default: all); call at episode starts,
        e.g. with ``np.flatnonzero(done)`` after a vector env's automatic resets."""
        if env_ids is None or self._descending is None:
            self._descending = None
        else:
            self._descending[np.asarray(env_ids, dtype=int)] = False

    def act(self, obs: np.ndarray) -> np.ndarray:
        """Actions ``[B, A]`` in [-1, 1] for observations ``[B, O]``."""
        obs = np.atleast_2d(np.asarray(obs, dtype=float))
        B = obs.shape[0]
        offset = obs[:, self.obs_index["setpoint_offset"]]
        ki = np.full((B, 3), self.ki)
        if self.mode == "reach":
            pos_error = obs[:, self.obs_index["target_rel_ee"]]
            step = np.full(B, self.max_step)
        else:
            pos_error, descending = self._peg_error(obs)
            step = np.where(descending, self.insert_step, self.max_step)
            ki[descending, 2] = 0.0
        rot_error = self._orientation_error(obs[:, self.obs_index["ee_rot6d"]])
        # goal - setpoint = (goal - x) - (setpoint - x).
        g = self.setpoint_gain
        delta_pos = g * (pos_error - offset[:, :3]) + ki * pos_error
        delta_rot = g * (rot_error - offset[:, 3:]) + self.ki * rot_error

        action = np.zeros((B, self.action_size))
        action[:, self.act_index["ee_delta_pos"]] = _saturate(delta_pos, step[:, None]) / C.EE_DELTA_POS_MAX
        action[:, self.act_index["ee_delta_rot"]] = _saturate(delta_rot, C.EE_DELTA_ROT_MAX) / C.EE_DELTA_ROT_MAX
        for name in ("stiffness_pos", "stiffness_rot"):
            if name in self.act_index:
                action[:, self.act_index[name]] = self.stiffness_action
        if "gripper" in self.act_index:
            action[:, self.act_index["gripper"]] = -1.0 if self.mode == "peg" else 1.0
        return action

    # -- pieces -----------------------------------------------------------------
    def _orientation_error(self, rot6d: np.ndarray) -> np.ndarray:
        """World-frame rotation vector from the measured orientation to gripper-down."""
        current = mat_to_quat(rot6d_to_mat(rot6d))
        return quat_to_rotvec(quat_mul(REF_QUAT, quat_conj(current)))

    def _peg_error(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fingertip displacement that moves the peg tip toward the next waypoint, and
        which envs are descending into the hole (the updated ``self._descending``)."""
        to_hole = obs[:, self.obs_index["hole_rel_peg_tip"]]
        horizontal = np.linalg.norm(to_hole[:, :2], axis=1)
        descending = self._descending
        if descending is None or len(descending) != len(obs):
            descending = self._descending = np.zeros(len(obs), dtype=bool)
        # Descend once aligned; climb back to hover height if the peg slid off the hole
        # while still above its rim.
        inside = to_hole[:, 2] > 0.0  # hole top above the tip: already in the hole
        descending |= horizontal < self.align_tolerance
        descending &= (horizontal < 3 * self.align_tolerance) | inside
        error = to_hole.copy()
        error[:, 2] += np.where(descending, -(self.insert_depth + self.insert_overshoot), self.hover_height)
        return error, descending


def _saturate(v: np.ndarray, limit: float | np.ndarray) -> np.ndarray:
    """Scale rows of ``v`` so their norm is at most ``limit`` (keeps the direction)."""
    norm = np.linalg.norm(v, axis=1, keepdims=True)
    return v * np.minimum(1.0, limit / np.maximum(norm, 1e-12))


def controller_for(task: Task, num_envs: int = 1) -> ArmCartesianController:
    """The arm's classical controller for ``task`` (Cartesian action modes).

    Raises:
        ConfigError: a joint-space action mode.
    """
    if task.action_mode not in ("ee_delta", "ee_impedance"):
        raise ConfigError("action_mode", f"the arm's classical controller acts in ee_delta or ee_impedance, "
                                         f"not {task.action_mode!r}")
    return ArmCartesianController.for_task(task)


class ArmOracle:
    """The arm's oracle: its Cartesian controller, reset at every episode (the evaluator's
    ``on_reset``). It sees the full state, and the randomized dynamics (masses, servo
    gains, friction, damping) act below the servos that track its setpoints, so no true
    parameter would change what it commands: the best model-based controller the arm has."""

    def __init__(self, controller: ArmCartesianController) -> None:
        self.controller = controller

    def on_reset(self, env_ids: list[int], draws: list[dict]) -> None:
        self.controller.reset(env_ids)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self.controller.act(obs)


def oracle_for(task: Task, num_envs: int = 1) -> tuple[ArmOracle, str] | None:
    """The arm's oracle in the task's own Cartesian mode; None where the Cartesian
    controller cannot act (joint-space modes, tasks it has no goal for)."""
    try:
        return ArmOracle(controller_for(task, num_envs)), task.action_mode
    except (ConfigError, ValueError, KeyError):
        return None
