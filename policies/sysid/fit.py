"""Fit the simulator's physical parameters to a recorded run.

The recording is cut into short windows (0.5 s by default) where the robot ran
undisturbed (no reset, no gap in the states). Every window starts the simulator from the
recorded state and replays the recorded commands through the robot's own driver path
(command -> action -> the task's actuators), in one batched engine for every candidate
and window at once. The error is the predicted states' distance to the recorded ones,
each quantity in its own unit scale. CMA-ES (the ``cma`` package) searches the
continuous parameters for each latency (whole control steps: a command takes effect
``latency`` periods after it arrived) and the best pair wins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.policies.sysid.recording import Recording, RecordingError
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import DomainRandomization, Range

PARAMS: dict[str, tuple[str, float, float]] = {
    "mass": ("mass_scale", 0.5, 2.0),
    "friction": ("friction", 0.1, 2.5),
    "motor_strength": ("motor_strength", 0.5, 1.5),
    "kp_scale": ("pd_gain_scale", 0.5, 1.5),
    "thrust": ("thrust_coefficient", 0.5, 1.5),
}
"""Parameter name -> (the randomization field it sets, search bounds). ``latency`` is
searched over whole control steps."""
DEFAULT_PARAMS = {"quadruped": "mass,kp_scale,friction,latency", "drone": "mass,thrust,latency"}
"""What ``sim2real sysid`` fits unless told: what each robot's recordings identify."""
SCALES = {"base_pos": 0.02, "base_rot": 0.05, "base_vel": 0.1, "joint_pos": 0.05, "joint_vel": 1.0}
"""Each predicted quantity's error is divided by this (m, rad, m/s, rad, rad/s)."""


@dataclass
class FitResult:
    params: dict[str, float]
    """Fitted value per parameter (``latency`` in control steps)."""
    loss_nominal: float
    loss_fitted: float
    rms_nominal: dict[str, float]
    """Per quantity, the root-mean-square prediction error at the nominal parameters."""
    rms_fitted: dict[str, float]
    windows: int
    window_steps: int
    evaluations: int
    converged: bool
    """CMA-ES stopped on its own tolerance, not on the iteration budget."""
    losses_by_latency: dict[int, float]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Replay:
    """Windows of a recording replayed in one batched engine, ``batch`` candidates at a time."""

    def __init__(self, robot: str, task_name: str, action_mode: str, rec: Recording, window_steps: int,
                 max_windows: int, batch: int, max_latency: int, settle_steps: int = 5) -> None:
        from sim2real.policies.safety.spaces import command_space
        from sim2real.sim import robot_deployment
        from sim2real.sim.core.engine import Engine
        from sim2real.sim.core.registry import REGISTRY

        info = robot_deployment(robot)
        mode, options = info.driver_mode(action_mode or info.action_mode, {})
        self.task_cls = REGISTRY.get(task_name or info.task)
        self.space = command_space(robot, mode, options.get("action_scale"))
        probe = self.task_cls(num_envs=1, action_mode=mode, **options)
        self.control_dt = float(probe.control_dt)
        if rec.commands.shape[1] != self.space.size:
            raise RecordingError(f"the recorded commands have {rec.commands.shape[1]} elements; the {robot}'s "
                                 f"{mode} command has {self.space.size} ({', '.join(self.space.names)})")
        self.rec, self.L, self.settle = rec, int(window_steps), int(settle_steps)
        self.starts = _windows(rec, self.control_dt, self.settle + self.L, max_latency, max_windows)
        if len(self.starts) < 2:
            raise RecordingError(f"only {len(self.starts)} undisturbed {self.L * self.control_dt:.2f} s windows in "
                                 f"{rec.duration:.1f} s of recording; record longer (at least "
                                 f"{4 * self.L * self.control_dt:.0f} s of motion)")
        self.batch, W = batch, len(self.starts)
        self.engine = Engine(self.task_cls(num_envs=batch * W, action_mode=mode, **options), seed=0)
        self.dr_class = self.task_cls.dr_class
        self.floating, self.nj = info.floating_base, len(info.joints)
        model = self.engine.nominal
        self.qadr = np.array([model.jnt_qposadr[model.joint(n).id] for n in info.joints], dtype=int)
        self.vadr = np.array([model.jnt_dofadr[model.joint(n).id] for n in info.joints], dtype=int)
        # The command in force during each transition k -> k+1: the last one before state k+1.
        self.cmd_index = np.searchsorted(rec.command_times, rec.times[1:], side="left") - 1
        self.actions = np.array([self.space.command_to_action(c) for c in rec.commands])
        self.hold = self.space.command_to_action(self.space.hold)

    def losses(self, drs: list[DomainRandomization], latency: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Each candidate's mean scaled error over every window, and per quantity the
        squared errors ``[candidates]`` (unscaled).

        Each window first runs ``settle`` steps with the body held on the recording (its
        state written back after every step) while the commands drive the state nobody
        records (rotor thrusts, an inner controller's memory) to where the real robot's
        was; then it runs free and is scored.
        """
        eng, W, L, S = self.engine, len(self.starts), self.L, self.settle
        eng.reset()
        rng = np.random.default_rng(0)
        for c, dr in enumerate(drs):
            for w in range(W):
                dr.apply(eng.models[c * W + w], eng.nominal, rng)
        n = len(drs) * W
        starts = np.tile(self.starts, len(drs))
        envs = np.arange(n)
        self._set_state(envs, starts)
        eng.phys.act[envs] = 0.0
        sq: dict[str, np.ndarray] = {k: np.zeros(n) for k in SCALES}
        for k in range(S + L):
            idx = self.cmd_index[starts + k - latency]
            acts = np.where((idx >= 0)[:, None], self.actions[np.maximum(idx, 0)], self.hold)
            full = np.tile(self.hold, (eng.num_envs, 1))
            full[:n] = acts
            eng.step(full)
            if k < S:
                self._set_state(envs, starts + k + 1)
                continue
            for key, err in self._errors(n, starts + k + 1).items():
                sq[key] += err / L
        # A candidate whose simulation diverged is as bad as can be, not NaN.
        total = np.nan_to_num(np.sum([sq[k] / SCALES[k] ** 2 for k in SCALES], axis=0), nan=1e6, posinf=1e6)
        per_candidate = total.reshape(len(drs), W).mean(axis=1)
        return per_candidate, {k: v.reshape(len(drs), W).mean(axis=1) for k, v in sq.items()}

    def _set_state(self, envs: np.ndarray, rows: np.ndarray) -> None:
        p = self.engine.phys
        q, v = self.rec.qpos[rows], self.rec.qvel[rows]
        if self.floating:
            p.qpos[envs, 0:7], p.qvel[envs, 0:6] = q[:, :7], v[:, :6]
        if self.nj:
            p.qpos[envs[:, None], self.qadr[None]] = q[:, -self.nj:]
            p.qvel[envs[:, None], self.vadr[None]] = v[:, -self.nj:]

    def _errors(self, n: int, rows: np.ndarray) -> dict[str, np.ndarray]:
        p, q, v = self.engine.phys, self.rec.qpos[rows], self.rec.qvel[rows]
        out = {k: np.zeros(n) for k in SCALES}
        if self.floating:
            out["base_pos"] = np.sum((p.qpos[:n, 0:3] - q[:, 0:3]) ** 2, axis=1)
            dot = np.abs(np.sum(p.qpos[:n, 3:7] * q[:, 3:7], axis=1))
            out["base_rot"] = (2 * np.arccos(np.clip(dot, 0.0, 1.0))) ** 2
            out["base_vel"] = np.sum((p.qvel[:n, 0:3] - v[:, 0:3]) ** 2, axis=1)
        if self.nj:
            out["joint_pos"] = np.mean((p.qpos[:n][:, self.qadr] - q[:, -self.nj:]) ** 2, axis=1)
            out["joint_vel"] = np.mean((p.qvel[:n][:, self.vadr] - v[:, -self.nj:]) ** 2, axis=1)
        return out

    def close(self) -> None:
        self.engine.close()


def candidate_dr(dr_class: type[DomainRandomization], names: list[str], values: np.ndarray) -> DomainRandomization:
    """The nominal robot with each named parameter held at its value."""
    base = dr_class()
    fields = {PARAMS[n][0]: Range(float(v), float(v)) for n, v in zip(names, values, strict=True)}
    return dataclasses.replace(base, enabled=True, obs_noise_scale=0.0, **fields)


def fit(replay: Replay, names: list[str], max_latency: int, iterations: int, seed: int,
        on_generation: Callable[[int, float], None] = lambda *_: None) -> FitResult:
    """Fit ``names`` (continuous) and the latency (0..``max_latency``) to the recording."""
    import cma

    unknown = [n for n in names if n not in PARAMS or not hasattr(replay.dr_class(), PARAMS[n][0])]
    if unknown:
        known = [n for n in PARAMS if hasattr(replay.dr_class(), PARAMS[n][0])]
        raise ConfigError("--params", f"unknown for this robot: {', '.join(unknown)}; "
                                      f"choose from {', '.join(known)}, latency")
    low = np.array([PARAMS[n][1] for n in names])
    high = np.array([PARAMS[n][2] for n in names])
    nominal = np.array([getattr(replay.dr_class(), PARAMS[n][0]).low for n in names], dtype=float)

    def evaluate(xs: list[np.ndarray], latency: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        drs = [candidate_dr(replay.dr_class, names, low + np.clip(x, 0, 1) * (high - low)) for x in xs]
        pad = [drs[0]] * (replay.batch - len(drs))
        loss, sq = replay.losses(drs + pad, latency)
        return loss[: len(drs)], {k: v[: len(drs)] for k, v in sq.items()}

    x_nominal = (nominal - low) / (high - low)
    loss_nom, sq_nom = evaluate([x_nominal], 0)
    best: tuple[float, np.ndarray, int, dict[str, np.ndarray]] = (float(loss_nom[0]), x_nominal, 0, sq_nom)
    by_latency, stopped_on_budget, evaluations = {}, {}, 1
    for latency in range(max_latency + 1):
        es = cma.CMAEvolutionStrategy(list(x_nominal), 0.25, {"bounds": [0.0, 1.0], "popsize": replay.batch,
                                                              "seed": seed + latency, "maxiter": iterations,
                                                              "verbose": -9, "tolx": 2e-3})
        lat_best: tuple[float, np.ndarray, dict[str, np.ndarray]] = (np.inf, x_nominal, {})
        while not es.stop():
            xs = [np.asarray(x) for x in es.ask()]
            loss, sq = evaluate(xs, latency)
            evaluations += len(xs)
            es.tell(xs, list(loss))
            k = int(np.argmin(loss))
            if loss[k] < lat_best[0]:
                lat_best = (float(loss[k]), xs[k], {q: v[k : k + 1] for q, v in sq.items()})
            on_generation(latency, lat_best[0])
        by_latency[latency], stopped_on_budget[latency] = lat_best[0], "maxiter" in dict(es.stop() or {})
        if lat_best[0] < best[0]:
            best = (lat_best[0], lat_best[1], latency, lat_best[2])
    converged = not stopped_on_budget.get(best[2], True)
    values = low + np.clip(best[1], 0, 1) * (high - low)
    params = {n: round(float(v), 4) for n, v in zip(names, values, strict=True)}
    params["latency"] = best[2]
    return FitResult(params=params, loss_nominal=float(loss_nom[0]), loss_fitted=best[0],
                     rms_nominal={k: float(np.sqrt(v[0])) for k, v in sq_nom.items()},
                     rms_fitted={k: float(np.sqrt(v[0])) for k, v in best[3].items()},
                     windows=len(replay.starts), window_steps=replay.L, evaluations=evaluations, converged=converged,
                     losses_by_latency=by_latency)


def fitted_preset(dr_class: type[DomainRandomization], result: FitResult) -> dict[str, Any]:
    """Randomization fields centred on the fit (each range keeps the training preset's
    width; latency the fitted one to one step more), over the training preset."""
    train = dr_class.train()
    out: dict[str, Any] = {}
    for name, value in result.params.items():
        if name == "latency":
            out["latency_steps"] = [int(value), int(value) + 1]
            continue
        field = PARAMS[name][0]
        r = getattr(train, field)
        half = (r.high - r.low) / 2
        out[field] = [round(max(value - half, 0.0), 4), round(value + half, 4)]
    return out


def _windows(rec: Recording, control_dt: float, length: int, max_latency: int, max_windows: int) -> np.ndarray:
    """Start indices of windows whose states are evenly spaced (no gap) and continuous
    (no reset: no jump of the base or the joints), with commands before them for the
    largest latency; at most ``max_windows``, spread over the recording."""
    dt = np.diff(rec.times)
    jump = np.linalg.norm(np.diff(rec.qpos, axis=0), axis=1)
    ok = (dt > 0.5 * control_dt) & (dt < 1.5 * control_dt) & (jump < 0.5)
    first_command = np.searchsorted(rec.times, rec.command_times[0], side="right")
    starts = []
    k = int(first_command) + max_latency + 1
    while k + length < len(rec.times):
        if ok[k : k + length].all():
            starts.append(k)
            k += length
        else:
            k += 1
    starts_arr = np.array(starts, dtype=int)
    if len(starts_arr) > max_windows:
        starts_arr = starts_arr[np.linspace(0, len(starts_arr) - 1, max_windows).round().astype(int)]
    return starts_arr
