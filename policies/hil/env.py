"""The environment as HIL-SERL's actor sees it.

Observations are dicts of arrays: ``state`` (float32: proprioception in ``pixels`` mode,
the full observation vector in ``state`` mode) and one ``uint8 [3, H, W]`` image per
camera. The reward is sparse (1 on success) unless configured otherwise, or comes from a
success classifier; every action passes :class:`~.safety.ActionSafety` first.

:class:`ArmHilEnv` is that contract and everything it shares (safety, the gripper, the
reward, truncation); where the arm is comes from a subclass: :class:`HilEnv` steps the
simulated arm, :class:`sim2real.ros_nodes.hil_env.GraphArmEnv` a real (or emulated) arm
through the deployment graph's safety filter. The full observation vector stays
available (``full_obs``) for the scripted operator, which plays the part of a person who
can see the scene (only the simulator knows the whole scene).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

import numpy as np

from sim2real.errors import ConfigError
from sim2real.policies.hil.config import EnvConfig
from sim2real.policies.hil.safety import ActionSafety, SafetyReport
from sim2real.sim import make, robot_deployment
from sim2real.sim.arm.base import ArmTask
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.layout import layout_slices
from sim2real.sim.core.rendering import OffscreenRenderer

Obs = dict[str, np.ndarray]

PROPRIO_BLOCKS = ("joint_pos", "joint_vel", "ee_pos", "ee_rot6d", "gripper_width", "setpoint_offset", "last_action")
"""What a real arm measures about itself (no object or target positions)."""

Step = tuple[np.ndarray, float, bool, bool, dict[str, Any]]
"""A subclass's step: the full observation vector, the task's reward, terminated,
truncated and an info dict with ``success``."""


class ArmHilEnv(abc.ABC):
    """One arm task with HIL-SERL's observations, reward and safety.

    Args:
        config: Environment settings.
        task: The arm task (its layouts, workspace box and control period).
        success_fn: Optional reward classifier: ``obs -> bool``; replaces the task's
            success for the reward and the episode's end (the real-arm setting).
    """

    paces_itself: bool = False
    """True when :meth:`step` takes one control period of real time (a real arm);
    False when it returns at once (the simulator)."""
    knows_scene: bool = False
    """``full_obs`` holds the whole scene (objects, targets: only the simulator knows
    them); on a real arm its other blocks are meaningless and must not be read."""

    def __init__(self, config: EnvConfig, task: ArmTask, success_fn: Callable[[Obs], bool] | None = None) -> None:
        self.config = config
        self.task = task
        self.obs_layout = task.observation_layout()
        self.action_layout = task.action_layout()
        self.action_dim = sum(n for _, n in self.action_layout)
        slices = layout_slices(self.obs_layout)
        self._ee_pos = slices["ee_pos"]
        if config.obs_mode == "pixels":
            self._state_index = np.concatenate([np.arange(slices[n].start, slices[n].stop) for n in PROPRIO_BLOCKS
                                                if n in slices])
        else:
            self._state_index = np.arange(sum(n for _, n in self.obs_layout))
        self.cameras = tuple(config.cameras) if config.obs_mode == "pixels" else ()
        self.safety = ActionSafety(
            self.action_layout,
            task.workspace_low + config.workspace_margin,
            task.workspace_high - config.workspace_margin,
            config.max_step_m,
        )
        self.success_fn = success_fn
        self.has_gripper = self.action_layout[-1][0] == "gripper"
        if config.discrete_gripper and not self.has_gripper:
            raise ConfigError("env.discrete_gripper", f"{config.task} has no gripper action")
        self._gripper_command = 1.0
        self.full_obs = np.zeros(0)
        self.steps = 0

    # -- what a subclass provides ------------------------------------------------------
    @abc.abstractmethod
    def _restart(self, seed: int | None) -> np.ndarray:
        """Start an episode; the full observation vector."""

    @abc.abstractmethod
    def _advance(self, action: np.ndarray) -> Step:
        """Apply one safe action ``[A]`` in [-1, 1] for one control period."""

    @abc.abstractmethod
    def _images(self) -> dict[str, np.ndarray]:
        """``[image_size, image_size, 3]`` uint8 per configured camera, now."""

    @abc.abstractmethod
    def measurements(self) -> Measurements:
        """The arm's state now (joints, end effector, goal), for the console's page."""

    @abc.abstractmethod
    def views(self, cameras: tuple[str, ...], size: tuple[int, int]) -> dict[str, np.ndarray]:
        """Live views for a person: ``(width, height)`` rgb frames of the named cameras
        (those it has), called from the actor's thread."""

    def close(self) -> None:
        """Release what the environment holds (idempotent)."""

    # -- the contract ------------------------------------------------------------------
    @property
    def control_dt(self) -> float:
        return float(self.task.control_dt)

    @property
    def state_dim(self) -> int:
        return len(self._state_index)

    def observation_shapes(self) -> dict[str, tuple[int, ...]]:
        s = self.config.image_size
        return {"state": (self.state_dim,), **{cam: (3, s, s) for cam in self.cameras}}

    def _observe(self, full: np.ndarray) -> Obs:
        self.full_obs = full
        obs: Obs = {"state": full[self._state_index].astype(np.float32)}
        if self.cameras:
            images = self._images()
            for cam in self.cameras:
                obs[cam] = np.ascontiguousarray(images[cam].transpose(2, 0, 1))
        return obs

    def reset(self, seed: int | None = None) -> Obs:
        full = self._restart(seed)
        self.steps = 0
        self._gripper_command = 1.0  # episodes start with the gripper open
        return self._observe(full)

    def step(self, action: np.ndarray) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        """Returns ``obs, reward, terminated, truncated, info``.

        ``info["action"]`` is the command clipped to [-1, 1]: what the buffers store. The
        motion limit and the workspace box are a fixed function of (command, state), part
        of the environment as the learner sees it; storing the limited action instead
        would leave the critic blind to the commands the policy actually proposes.
        ``info["applied_action"]`` is what reached the arm, ``info["safety"]`` what safety did.
        """
        proposed = np.array(action, dtype=float).reshape(-1)
        to_apply = proposed.copy()
        if self.config.discrete_gripper and to_apply.shape == (self.action_dim,) and np.isfinite(to_apply[-1]):
            if abs(to_apply[-1]) > 0.5:
                self._gripper_command = float(np.sign(to_apply[-1]))
            to_apply[-1] = self._gripper_command  # "stay": the previous command
        safe, report = self.safety(to_apply, self.full_obs[self._ee_pos])
        full, reward, terminated, truncated, info = self._advance(safe.astype(np.float32))
        self.steps += 1
        ended = terminated or truncated
        obs = self._observe(full)
        success = bool(info["success"])
        if self.success_fn is not None:
            success = bool(self.success_fn(obs))
            terminated = (success and self.config.end_on_success) or (terminated and not info["success"])
        if self.config.sparse_reward or self.success_fn is not None:
            reward = float(success)
        # The task ended on its own success the classifier did not see: the episode is
        # over all the same, but that is no terminal state of the learner's task.
        truncated = truncated or self.steps >= self.config.max_episode_steps or (ended and not terminated)
        command = safe if report.non_finite else np.clip(proposed, -1.0, 1.0)
        info = {**info, "success": success, "action": command.astype(np.float32), "applied_action": safe,
                "safety": report}
        return obs, float(reward), bool(terminated), bool(truncated), info


class HilEnv(ArmHilEnv):
    """The simulated arm.

    Args:
        config: Environment settings.
        seed: Seed of the task's resets.
        success_fn: Optional reward classifier (see :class:`ArmHilEnv`).
    """

    knows_scene = True

    def __init__(self, config: EnvConfig, seed: int = 0, success_fn: Callable[[Obs], bool] | None = None) -> None:
        options = {} if config.end_on_success else {"end_on_success": False}
        self.sim = make(config.task, seed=seed, privileged_info=False, **options)
        task = self.sim.task
        if not isinstance(task, ArmTask):  # the workspace box and the gripper are an arm's
            self.sim.close()
            raise ConfigError("env.task", f"{config.task} is not an arm task")
        super().__init__(config, task, success_fn)
        self._renderer: OffscreenRenderer | None = None
        self._views: OffscreenRenderer | None = None
        self._read_state = robot_deployment("arm").state_reader(task, self.sim.model)

    def _restart(self, seed: int | None) -> np.ndarray:
        full, _ = self.sim.reset(seed=seed)
        return full

    def _advance(self, action: np.ndarray) -> Step:
        return self.sim.step(action)

    def _images(self) -> dict[str, np.ndarray]:
        if self._renderer is None:
            s = self.config.image_size
            self._renderer = OffscreenRenderer(self.sim.model, s, s)
        return {cam: self._renderer.render(self.sim.model, self.sim.data, cam) for cam in self.cameras}

    def measurements(self) -> Measurements:
        return self._read_state(self.sim.data, self.sim.engine.phys)

    def views(self, cameras: tuple[str, ...], size: tuple[int, int]) -> dict[str, np.ndarray]:
        if self._views is None:
            self._views = OffscreenRenderer(self.sim.model, *size, live=True)
        return {cam: self._views.render(self.sim.model, self.sim.data, cam) for cam in cameras}

    def close(self) -> None:
        for renderer in (self._renderer, self._views):
            if renderer is not None:
                renderer.close()
        self._renderer = self._views = None
        self.sim.close()


__all__ = ["PROPRIO_BLOCKS", "ArmHilEnv", "HilEnv", "Obs", "SafetyReport"]
