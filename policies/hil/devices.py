"""Intervention devices: while one is active its action replaces the policy's.

Contract: ``reset()`` at each episode start, then per step ``poll(obs, full_obs)`` returns
an action in [-1, 1] while the operator intervenes and ``None`` otherwise. ``full_obs`` is
the simulator's full observation vector: only the scripted operator reads it (it stands
in for a person who sees the scene).

- :class:`ScriptedOperator`: the arm's Cartesian expert controller plus noise; takes over
  when the policy drifts (too far from the goal, or too long without success) and hands
  back after a fixed number of steps. Lets every part run without a person.
- :class:`KeyboardDevice`, :class:`GamepadDevice`: pygame (``SDL_VIDEODRIVER=dummy`` works
  headless); moving keys / holding RB intervenes.
- :class:`SpaceMouseDevice`: pyspacemouse; moving the puck intervenes, releasing hands back.
"""

from __future__ import annotations

import importlib
import os
from typing import Protocol

import numpy as np

from sim2real.errors import ConfigError, Sim2RealError
from sim2real.policies.classical.arm import ArmCartesianController
from sim2real.sim.core.layout import layout_slices


class InterventionDevice(Protocol):
    def reset(self) -> None: ...

    def poll(self, obs: dict[str, np.ndarray], full_obs: np.ndarray) -> np.ndarray | None: ...


class ScriptedOperator:
    """Expert-with-noise operator for simulated arm tasks.

    Args:
        observation_layout, action_layout: The task's layouts.
        noise: Std of Gaussian noise added to the expert's action.
        drift_distance: Peg tip (or fingertip) this far (m) horizontally from the goal:
            the policy drifted, take over.
        patience_steps: No success after this many steps of an episode: take over.
        takeover_steps: Steps of each intervention before handing back.
        always: Act every step (recording demonstrations).
        seed: Noise seed.
    """

    def __init__(self, observation_layout, action_layout, noise: float = 0.02, drift_distance: float = 0.05,
                 patience_steps: int = 60, takeover_steps: int = 25, always: bool = False, seed: int = 0) -> None:
        self.expert = ArmCartesianController(observation_layout, action_layout)
        slices = layout_slices(observation_layout)
        self.goal = slices.get("hole_rel_peg_tip", slices.get("target_rel_ee"))
        if noise < 0 or takeover_steps < 1 or patience_steps < 1:
            raise ConfigError("operator", "noise >= 0, takeover_steps >= 1 and patience_steps >= 1 required")
        self.noise, self.drift_distance = noise, drift_distance
        self.patience_steps, self.takeover_steps, self.always = patience_steps, takeover_steps, always
        self.rng = np.random.default_rng(seed)
        self.reset()

    def reset(self) -> None:
        self.expert.reset()
        self.step_count = 0
        self.remaining = 0
        self.used_patience = False

    def poll(self, obs: dict[str, np.ndarray], full_obs: np.ndarray) -> np.ndarray | None:
        self.step_count += 1
        # The expert tracks its phase (align, descend) every step, active or not.
        action = self.expert.act(full_obs[None])[0]
        if self.remaining == 0 and not self.always:
            drifted = np.linalg.norm(full_obs[self.goal][:2]) > self.drift_distance
            stalled = self.step_count > self.patience_steps and not self.used_patience
            if drifted or stalled:
                self.remaining = self.takeover_steps
                self.used_patience |= stalled
        if self.remaining == 0 and not self.always:
            return None
        self.remaining = max(self.remaining - 1, 0)
        noisy = action + self.rng.normal(0.0, self.noise, action.shape)
        return np.clip(noisy, -1.0, 1.0).astype(np.float32)


def _init_pygame():
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        import pygame
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise Sim2RealError("the keyboard and gamepad devices need pygame (pip install pygame)") from exc
    pygame.init()
    return pygame


class KeyboardDevice:
    """Keys move the end effector: W/S x, A/D y, R/F z, Q/E yaw; any held key intervenes.

    A window (or ``SDL_VIDEODRIVER=dummy``) must exist for pygame to deliver key events.
    """

    KEYS = {"w": (0, 1.0), "s": (0, -1.0), "a": (1, 1.0), "d": (1, -1.0), "r": (2, 1.0), "f": (2, -1.0),
            "q": (5, 1.0), "e": (5, -1.0)}

    def __init__(self, action_dim: int, speed: float = 0.5) -> None:
        self.pygame = _init_pygame()
        if not self.pygame.display.get_init() or self.pygame.display.get_surface() is None:
            self.pygame.display.set_mode((64, 64))
        self.action_dim, self.speed = action_dim, speed
        self.held: set[str] = set()

    def reset(self) -> None:
        self.held.clear()

    def poll(self, obs, full_obs) -> np.ndarray | None:
        pg = self.pygame
        for event in pg.event.get((pg.KEYDOWN, pg.KEYUP)):
            name = pg.key.name(event.key)
            if name in self.KEYS:
                (self.held.add if event.type == pg.KEYDOWN else self.held.discard)(name)
        if not self.held:
            return None
        action = np.zeros(self.action_dim, dtype=np.float32)
        for name in self.held:
            axis, sign = self.KEYS[name]
            if axis < self.action_dim:
                action[axis] += sign * self.speed
        return np.clip(action, -1.0, 1.0)


class GamepadDevice:
    """Left stick x/y, right stick z/yaw; holding RB (button 5) intervenes."""

    def __init__(self, action_dim: int, index: int = 0, deadzone: float = 0.1, intervene_button: int = 5) -> None:
        pg = _init_pygame()
        pg.joystick.init()
        if pg.joystick.get_count() <= index:
            raise Sim2RealError(f"no gamepad #{index} found ({pg.joystick.get_count()} connected)")
        self.pygame, self.stick = pg, pg.joystick.Joystick(index)
        self.action_dim, self.deadzone, self.button = action_dim, deadzone, intervene_button

    def reset(self) -> None:
        pass

    def poll(self, obs, full_obs) -> np.ndarray | None:
        self.pygame.event.pump()
        if not self.stick.get_button(self.button):
            return None
        axes = [-self.stick.get_axis(1), -self.stick.get_axis(0), -self.stick.get_axis(4), -self.stick.get_axis(3)]
        axes = [0.0 if abs(a) < self.deadzone else a for a in axes]
        action = np.zeros(self.action_dim, dtype=np.float32)
        for axis, value in zip((0, 1, 2, 5), axes, strict=True):
            if axis < self.action_dim:
                action[axis] = value
        return np.clip(action, -1.0, 1.0)


class SpaceMouseDevice:
    """3Dconnexion SpaceMouse via pyspacemouse (optional dependency ``sim2real[hil]``)."""

    def __init__(self, action_dim: int, deadzone: float = 0.05) -> None:
        try:
            # By name: the package is optional and outside ``sim2real[all]`` (it needs the hidapi
            # system library), so the environments that type-check this file do not have it.
            pyspacemouse = importlib.import_module("pyspacemouse")
        except ImportError as exc:
            raise Sim2RealError("the SpaceMouse device needs pyspacemouse (pip install 'sim2real[hil]')") from exc
        if not pyspacemouse.open():
            raise Sim2RealError("no SpaceMouse found (check the USB connection and hidraw permissions)")
        self.read, self.action_dim, self.deadzone = pyspacemouse.read, action_dim, deadzone

    def reset(self) -> None:
        pass

    def poll(self, obs, full_obs) -> np.ndarray | None:
        s = self.read()
        values = np.array([s.y, -s.x, s.z, -s.roll, -s.pitch, -s.yaw], dtype=np.float32)
        if np.all(np.abs(values) < self.deadzone):
            return None
        action = np.zeros(self.action_dim, dtype=np.float32)
        n = min(6, self.action_dim)
        action[:n] = values[:n]
        return np.clip(action, -1.0, 1.0)


DEVICES = ("scripted", "keyboard", "gamepad", "spacemouse", "none")


def make_device(name: str, env, seed: int = 0, always: bool = False, **scripted_options) -> InterventionDevice | None:
    """A device by name for ``env`` (a :class:`~sim2real.policies.hil.env.HilEnv`); ``none`` gives ``None``."""
    if name == "scripted":
        if not getattr(env, "knows_scene", False):
            raise ConfigError("device", "the scripted operator reads the simulator's scene; on a real arm use "
                                        "spacemouse, gamepad or keyboard (or the console)")
        return ScriptedOperator(env.obs_layout, env.action_layout, always=always, seed=seed, **scripted_options)
    if name == "keyboard":
        return KeyboardDevice(env.action_dim)
    if name == "gamepad":
        return GamepadDevice(env.action_dim)
    if name == "spacemouse":
        return SpaceMouseDevice(env.action_dim)
    if name == "none":
        return None
    raise ConfigError("device", f"unknown device {name!r}; choose from {list(DEVICES)}")
