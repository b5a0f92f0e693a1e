"""The commanded-velocity tracking table of a quadruped velocity policy: for each command
of a grid (standing still, forward, backward, sideways, turning), a batch of episodes
with that command held, and over their second half the achieved body velocity against
the command, falls, mechanical power and foot slip.

It is the sim-to-sim check people run on a policy trained elsewhere (unitree_rl_gym's
``deploy_mujoco``, rl_sar's Gazebo/MuJoCo runs), as a table: ``sim2real sim2sim``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sim2real.sim.core.engine import Engine
from sim2real.sim.core.env import resolve_dr

GRID: tuple[tuple[str, tuple[float, float, float]], ...] = (
    ("stand still", (0.0, 0.0, 0.0)),
    ("forward 0.5 m/s", (0.5, 0.0, 0.0)),
    ("forward 1.0 m/s", (1.0, 0.0, 0.0)),
    ("backward 0.5 m/s", (-0.5, 0.0, 0.0)),
    ("left 0.3 m/s", (0.0, 0.3, 0.0)),
    ("right 0.3 m/s", (0.0, -0.3, 0.0)),
    ("turn left 0.5 rad/s", (0.0, 0.0, 0.5)),
    ("forward 0.5 m/s, turning 0.5 rad/s", (0.5, 0.0, 0.5)),
)
"""(name, (vx m/s, vy m/s, yaw rate rad/s)) commands."""

Grid = tuple[tuple[str, tuple[float, float, float]], ...]


def parse_command(text: str) -> tuple[str, tuple[float, float, float]]:
    """A grid entry from ``"VX,VY,WZ"`` (m/s, m/s, rad/s): the command a user asks the
    table for instead of :data:`GRID` (``sim2sim --command 0,0,1``)."""
    from sim2real.sim.core.errors import ConfigError

    try:
        vx, vy, wz = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError("--command", f"{text!r} is not VX,VY,WZ (m/s, m/s, rad/s)") from None
    if not all(np.isfinite([vx, vy, wz])):
        raise ConfigError("--command", f"{text!r} is not finite")
    return f"vx {vx:g} m/s, vy {vy:g} m/s, yaw rate {wz:g} rad/s", (vx, vy, wz)


@dataclass
class TrackingRow:
    command: str
    commanded: list[float]
    """vx, vy, yaw rate."""
    achieved: list[float]
    """Mean over the standing envs' second halves: vx, vy (body frame), yaw rate."""
    error: list[float]
    """|achieved - commanded| per component."""
    relative_error: float | None
    """|achieved - commanded| / |commanded| of the largest commanded component (None standing still)."""
    falls: int
    episodes: int
    power_w: float
    """Mean mechanical power, sum over joints of |torque * joint velocity| (W)."""
    foot_slip_m_s: float
    """Mean horizontal speed of the feet in contact (m/s)."""


def held_command(command: tuple[float, float, float], seconds: float) -> dict[str, Any]:
    """Task options that hold ``command`` (vx, vy, yaw rate) for longer than ``seconds``."""
    vx, vy, wz = command
    return {"lin_vel_x": [vx, vx], "lin_vel_y": [vy, vy], "yaw_rate": [wz, wz], "zero_command_probability": 0.0,
            "resample_seconds": 10 * seconds}


def track(policy: Any, task_cls: type, options: dict[str, Any], command: tuple[float, float, float],
          episodes: int, seconds: float, dr: Any, seed: int) -> dict[str, Any]:
    """One command held for ``seconds`` in ``episodes`` environments; the row's figures."""
    fixed = held_command(command, seconds)
    task = task_cls(num_envs=episodes, action_mode=policy.action_mode, **{**options, **fixed})
    eng = Engine(task, resolve_dr(task_cls, dr), seed=seed)
    eng.reset()
    obs = eng.observe()
    steps = int(round(seconds / task.control_dt))
    fell = np.zeros(episodes, dtype=bool)
    vel, power, slip, counted = np.zeros((episodes, 3)), np.zeros(episodes), np.zeros(episodes), 0
    for k in range(steps):
        out = eng.step(np.asarray(policy(obs.astype(np.float32)), dtype=np.float64))
        obs = out.obs
        fell |= out.result.terminated
        if k >= steps // 2:
            phys = eng.phys
            st = task.base_state(phys)
            vel += np.column_stack([st.lin_vel[:, :2], st.ang_vel[:, 2]])
            torque = phys.sensordata[:, task.torque_idx]
            power += np.abs(torque * st.joint_vel).sum(axis=1)
            contact = task.foot_contact(phys)
            foot = np.linalg.norm(phys.sensordata[:, task.foot_vel_idx].reshape(-1, 4, 3)[:, :, :2], axis=2)
            slip += (foot * contact).sum(axis=1) / np.maximum(contact.sum(axis=1), 1)
            counted += 1
    ok = ~fell
    achieved = (vel[ok].mean(axis=0) / counted) if ok.any() else np.full(3, np.nan)
    error = np.abs(achieved - np.asarray(command))
    big = int(np.argmax(np.abs(command)))
    return {"achieved": achieved, "error": error,
            "relative_error": None if not any(command) else float(error[big] / abs(command[big])),
            "falls": int(fell.sum()), "power_w": float(power[ok].mean() / counted) if ok.any() else float("nan"),
            "foot_slip_m_s": float(slip[ok].mean() / counted) if ok.any() else float("nan")}


def tracking_table(policy: Any, episodes: int = 8, seconds: float = 10.0, dr: Any = "train", seed: int = 30_000,
                   on_row: Any = lambda _: None, task_options: dict[str, Any] | None = None,
                   grid: Grid = GRID) -> list[TrackingRow]:
    """The table for an exported quadruped velocity ``policy`` (an :class:`OnnxPolicy`),
    a row per command of ``grid``; ``task_options`` on top of its own
    (``{"base_velocity": "estimated"}``: the policy observes the robot's own estimate,
    :mod:`sim2real.sim.quadruped.onboard`)."""
    from sim2real.sim.core.registry import REGISTRY

    task_cls = REGISTRY.get(policy.task)
    options = {**(policy.metadata.get("task_options") or {}), **(task_options or {})}
    rows = []
    for name, command in grid:
        on_row(name)
        r = track(policy, task_cls, options, command, episodes, seconds, dr, seed)
        rows.append(TrackingRow(name, list(command), [round(float(x), 4) for x in r["achieved"]],
                                [round(float(x), 4) for x in r["error"]], r["relative_error"], r["falls"], episodes,
                                round(r["power_w"], 2), round(r["foot_slip_m_s"], 4)))
    return rows


def tracking_video(policy: Any, path: Any, seconds: float = 4.0, dr: Any = "none", seed: int = 30_000,
                   grid: Grid = GRID) -> int:
    """An mp4 of one episode per command of ``grid``, in the table's order, ``seconds``
    each, from the tracking camera; returns the frame count."""
    from sim2real.policies.common.video import render_episodes, write_mp4
    from sim2real.sim.core.registry import REGISTRY

    task_cls = REGISTRY.get(policy.task)
    options = dict(policy.metadata.get("task_options") or {})
    frames: list[Any] = []
    fps = 50.0
    for _, command in grid:
        clip, fps = render_episodes(policy, task_cls, 1, policy.action_mode, dr, seed,
                                    {**options, **held_command(command, seconds)},
                                    max_steps=int(round(seconds / task_cls.control_dt)))
        frames += clip
    write_mp4(path, frames, fps)
    return len(frames)


def as_dicts(rows: list[TrackingRow]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]
