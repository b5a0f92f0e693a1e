"""The single-environment Gymnasium API over the engine (``B == 1``)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from sim2real.sim.core.engine import Engine
from sim2real.sim.core.randomization import DomainRandomization
from sim2real.sim.core.rendering import OffscreenRenderer
from sim2real.sim.core.task import Task


def resolve_dr(task_cls: type[Task], dr: str | DomainRandomization | dict | None) -> DomainRandomization:
    """A DR object from a preset name (``train``/``heldout``/``none``), a dict of
    field values, an instance, or ``None`` (no randomization)."""
    if dr is None:
        return task_cls.dr_class.none()
    if isinstance(dr, str):
        return task_cls.dr_class.preset(dr)
    if isinstance(dr, dict):
        return task_cls.dr_class.from_dict(dr)
    dr.validate()
    return dr


class SimEnv(gym.Env):
    """One robot, one task, Gymnasium API.

    ``info`` on every step holds ``success`` (bool), the task ``metrics`` and
    (unless ``privileged_info=False``) the ``privileged`` state vector for
    asymmetric critics; on reset and at the end
    of an episode it also holds ``dr`` (the sampled randomization) and ``task``
    (the sampled targets/commands). ``is_success`` is set at episode end.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}
    observation_space: gym.spaces.Box
    action_space: gym.spaces.Box

    def __init__(
        self,
        task_cls: type[Task],
        action_mode: str | None = None,
        dr: str | DomainRandomization | dict | None = None,
        render_mode: str | None = None,
        camera: str | None = None,
        width: int = 480,
        height: int = 360,
        seed: int | None = None,
        privileged_info: bool = True,
        **task_options: Any,
    ) -> None:
        self.task = task_cls(num_envs=1, action_mode=action_mode, **task_options)
        self.engine = Engine(self.task, resolve_dr(task_cls, dr), seed=seed, backend="step")
        self.engine.want_privileged = privileged_info
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (self.engine.obs_size,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (self.engine.act_size,), np.float32)
        if render_mode not in (None, "rgb_array"):
            from sim2real.sim.core.errors import ConfigError

            raise ConfigError("render_mode", f"only 'rgb_array' is supported, got {render_mode!r}")
        self.render_mode = render_mode
        self.camera = camera or task_cls.render_camera
        self._size = (width, height)
        self._renderer: OffscreenRenderer | None = None
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / task_cls.control_dt))}
        self._needs_reset = True

    @property
    def model(self):
        return self.engine.models[0]

    @property
    def data(self):
        return self.engine.data

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:
            self.engine.seed(seed)
        self.engine.reset()
        if self._renderer is not None:
            for h in range(self.model.nhfield):
                self._renderer.upload_heightfield(self.model, h)
        self._needs_reset = False
        obs = self.engine.observe()[0].astype(np.float32)
        return obs, {
            "dr": self.engine.dr_sampled[0],
            "task": self.task.task_state(0),
            "privileged": self.task.privileged(self.engine.phys)[0],
        }

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._needs_reset:
            from sim2real.sim.core.errors import Sim2RealError

            raise Sim2RealError("step() called before reset() or after the episode ended; call reset() first")
        out = self.engine.step(action)
        r = out.result
        terminated, truncated = bool(r.terminated[0]), bool(out.truncated[0])
        info: dict[str, Any] = {
            "success": bool(r.success[0]),
            "metrics": {k: float(v[0]) for k, v in r.metrics.items()},
        }
        if out.privileged is not None:
            info["privileged"] = out.privileged[0]
        if out.diverged[0]:
            info["physics_diverged"] = True
        if terminated or truncated:
            info["is_success"] = bool(r.success[0])
            info["dr"] = self.engine.dr_sampled[0]
            info["task"] = self.task.task_state(0)
            self._needs_reset = True
        return out.obs[0].astype(np.float32), float(r.reward[0]), terminated, truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self.frame()

    def frame(self) -> np.ndarray:
        """The task camera's image (``render`` without Gymnasium's ``None`` for other
        render modes: the renderer is made on first use whatever the mode)."""
        if self._renderer is None:
            self._renderer = OffscreenRenderer(self.model, *self._size)
            for h in range(self.model.nhfield):
                self._renderer.upload_heightfield(self.model, h)
        return self._renderer.render(self.model, self.data, self.camera)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
