"""The engine: steps ``B`` environments of one task, control step by control step.

A physics backend (:mod:`sim2real.sim.core.physics`) advances the batch: with one
environment ``mj_step(model, data, nstep)`` directly; with several a persistent
``mujoco.rollout.Rollout`` thread pool, so physics runs in C on every core and
Python only runs once per control step (or once per inner-controller period,
vectorised over the batch); on request MuJoCo Warp (``backend="warp"``).
Each environment has its own copy of the model so domain randomization can
differ per environment; every backend accepts one model per batch row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.core.errors import ActionError, ConfigError
from sim2real.sim.core.noise import ObservationNoise
from sim2real.sim.core.physics import BACKENDS, FULL, PhysicsBackend, PhysicsSetup, RolloutPhysics, StepPhysics
from sim2real.sim.core.randomization import DomainRandomization
from sim2real.sim.core.solver import SolverVariant
from sim2real.sim.core.task import BatchRng, PhysicsBatch, StepResult, Task, draw_rows


@dataclass
class StepOutput:
    """Everything one control step produced for the batch."""

    obs: np.ndarray
    result: StepResult
    truncated: np.ndarray
    privileged: np.ndarray | None
    diverged: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))


class Engine:
    """Batch stepping, resets, randomization, latency, noise and pushes for a task.

    Args:
        task: The task instance (its ``num_envs`` sets the batch size).
        dr: Domain randomization to apply at every reset.
        seed: Seed of every random draw the engine and task make.
        nthread: Rollout worker threads (default: all cores); ignored for one env.
        backend: ``"auto"`` (``mj_step`` for one env, ``rollout`` for more),
            ``"step"``, ``"rollout"`` or ``"warp"`` (MuJoCo Warp, float32).
        solver: Another simulator configuration (integrator, finer timestep, softer
            contacts) for sim-to-sim checks; default: the task's own.
        physics_options: Backend-specific options (the Warp backend's ``nconmax``,
            ``njmax``, ``device``); default: sized automatically.
    """

    def __init__(
        self,
        task: Task,
        dr: DomainRandomization | None = None,
        seed: int | None = None,
        nthread: int | None = None,
        backend: str = "auto",
        solver: SolverVariant | None = None,
        physics_options: dict[str, Any] | None = None,
    ) -> None:
        self.task = task
        self.dr = dr if dr is not None else task.dr_class.none()
        self.dr.validate()
        self.num_envs = task.num_envs
        if self.num_envs < 1:
            raise ConfigError("num_envs", f"must be >= 1, got {self.num_envs}")
        if backend != "auto" and backend not in BACKENDS:
            raise ConfigError("backend", f"must be auto, {', '.join(BACKENDS)}, got {backend!r}")
        self.backend = ("step" if self.num_envs == 1 else "rollout") if backend == "auto" else backend
        if self.backend == "step" and self.num_envs != 1:
            raise ConfigError("backend", "the 'step' backend runs exactly one environment")

        self.solver = solver or SolverVariant()
        self.physics_dt = self.solver.physics_dt(task.physics_dt)
        self.nominal = task.build_model()
        self.solver.apply(self.nominal)
        self.nominal.opt.timestep = self.physics_dt
        self.decimation = _whole_ratio(task.control_dt, self.physics_dt, "control_dt")
        self.inner_steps = 1
        if task.inner_dt is not None:
            self.inner_steps = _whole_ratio(task.inner_dt, self.physics_dt, "inner_dt")
            if self.decimation % self.inner_steps:
                raise ConfigError("inner_dt", "control_dt must be a whole multiple of inner_dt")

        m = self.nominal
        # Every env gets its own copy: randomization writes into it, always from the nominal values.
        self.models = [_copy_model(m) for _ in range(self.num_envs)]
        self.nq, self.nv, self.na, self.nu, self.nmocap = m.nq, m.nv, m.na, m.nu, m.nmocap
        self.obs_size = sum(n for _, n in task.observation_layout())
        self.act_size = sum(n for _, n in task.action_layout())
        self.priv_size = sum(n for _, n in task.privileged_layout())
        self.episode_steps = max(1, int(round(task.episode_seconds / task.control_dt)))

        self.nstate = mujoco.mj_stateSize(m, FULL)
        chunk = self.inner_steps if task.inner_dt else self.decimation
        setup = PhysicsSetup(self.models, m, chunk, self.act_size, nthread, self._probe_reset,
                             dict(physics_options or {}))
        self.physics: PhysicsBackend = BACKENDS[self.backend](setup)
        self._phys = self.physics.batch
        self._init_bookkeeping(seed)

    def _probe_reset(self, model: mujoco.MjModel, data: mujoco.MjData, i: int, rng: np.random.Generator) -> None:
        """Randomize ``model`` and reset ``data`` as :meth:`reset` would for env ``i``,
        without touching the engine's own state (backends probe capacities with it)."""
        self.dr.apply(model, self.nominal, rng)
        mujoco.mj_resetData(model, data)
        self.task.reset_env(i, model, data, rng)
        mujoco.mj_forward(model, data)

    @property
    def data(self) -> mujoco.MjData:
        """The ``step`` backend's one ``MjData`` (the single env's physics)."""
        if not isinstance(self.physics, StepPhysics):
            raise AttributeError(f"the {self.backend!r} backend has no single MjData; use load_env_into")
        return self.physics.data

    @property
    def state(self) -> np.ndarray:
        """The ``rollout`` backend's full physics states, ``[B, nstate]``."""
        if not isinstance(self.physics, RolloutPhysics):
            raise AttributeError(f"the {self.backend!r} backend keeps no float64 state array")
        return self.physics.state

    def _init_bookkeeping(self, seed: int | None) -> None:
        """Per-env counters, the action-latency history, observation noise and pushes."""
        B, task = self.num_envs, self.task
        self.rng = np.random.default_rng(seed)
        self.step_count = np.zeros(B, dtype=np.int64)
        self.latency = np.zeros(B, dtype=np.int64)
        max_latency = int(self.dr.latency_steps[1]) if self.dr.enabled else 0
        self._action_hist = np.zeros((max_latency + 1, B, self.act_size))
        self._hist_head = 0
        self._env_index = np.arange(B)
        scale = task.observation_noise() * self.dr.obs_noise_scale if self.dr.enabled else None
        self._noise = ObservationNoise(scale, B) if scale is not None and np.any(scale) else None
        self._push_every = (
            int(round(self.dr.push_interval_s / task.control_dt))
            if self.dr.enabled and self.dr.push_interval_s > 0 and task.push_dofs is not None
            else 0
        )
        self.dr_sampled: list[dict[str, Any]] = [{} for _ in range(B)]
        self._episode_rngs: list[np.random.Generator | None] = [None] * B
        self._in_episode: BatchRng = self.rng
        """Each env's episode generator while every env runs on its own (``reset(rngs=...)``)."""
        self.want_privileged = True
        """Compute the privileged state every step (for ``info``); batched envs
        turn it off and compute it on request."""

    # -- views -----------------------------------------------------------------
    @property
    def phys(self) -> PhysicsBatch:
        self.physics.refresh()
        return self._phys

    # -- reset -----------------------------------------------------------------
    def seed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)
        if self._noise is not None:
            self._noise.restart_stream()
        self._episode_rngs = [None] * self.num_envs
        self._choose_in_episode_rng()

    def in_episode_rng(self) -> BatchRng:
        """Where draws inside episodes (observation noise, pushes, command resampling) come
        from: each env's episode generator once every env was reset with its own
        (``reset(rngs=...)``: an episode's draws then do not depend on which other envs
        share the batch, so a sharded evaluation gives the same numbers), else the
        engine's one stream."""
        return self._in_episode

    def _choose_in_episode_rng(self) -> None:
        """Decided at resets (not per step): every env's own generator, else the one stream."""
        own = [g for g in self._episode_rngs if g is not None]
        self._in_episode = own if len(own) == self.num_envs else self.rng

    def reset(self, env_ids: np.ndarray | list[int] | None = None,
              rngs: list[np.random.Generator] | None = None) -> None:
        """Re-randomize and reset the given environments (default: all).

        ``rngs``: one generator per environment reset, for its randomization draws,
        initial state and latency, and then for the draws inside its episode (paired
        evaluations: an episode's draws then follow from its own seed, not from which
        environments happened to reset before it). Default: the engine's own stream.
        """
        ids = list(range(self.num_envs)) if env_ids is None else [int(i) for i in env_ids]
        if rngs is not None and len(rngs) != len(ids):
            raise ValueError(f"{len(rngs)} generators for {len(ids)} environments")
        for k, i in enumerate(ids):
            self._reset_one(i, self.rng if rngs is None else rngs[k])
            self._episode_rngs[i] = None if rngs is None else rngs[k]
            if self._noise is not None:
                self._noise.new_episode(i)
        self._choose_in_episode_rng()

    def _reset_one(self, i: int, rng: np.random.Generator) -> None:
        model = self.models[i]
        self.dr_sampled[i] = self.dr.apply(model, self.nominal, rng)
        d = self.physics.scratch
        mujoco.mj_resetData(model, d)
        self.task.reset_env(i, model, d, rng)
        mujoco.mj_forward(model, d)
        self.physics.reset_one(i, model, d)
        self.step_count[i] = 0
        self.latency[i] = self.dr.sample_latency(rng)
        self._action_hist[:, i] = 0.0
        self._phys.last_action[i] = 0.0

    # -- stepping --------------------------------------------------------------
    def validate_action(self, action: Any) -> np.ndarray:
        """Check shape and finiteness; return ``[B, A]`` float64 clipped to [-1, 1]."""
        a = np.asarray(action, dtype=np.float64)
        if a.ndim == 1 and self.num_envs == 1:
            a = a[None]
        if a.shape != (self.num_envs, self.act_size):
            expected = (self.num_envs, self.act_size) if self.num_envs > 1 else (self.act_size,)
            raise ActionError(
                f"action has shape {np.shape(action)}, expected {expected} "
                f"for {self.task.robot}/{self.task.name} in action mode {self.task.action_mode!r} "
                f"(layout: {self.task.action_layout()})"
            )
        # One reduction on the fast path; a huge-but-finite sum falls through to the exact check.
        if not np.isfinite(a.sum()) and not np.all(np.isfinite(a)):
            bad = np.argwhere(~np.isfinite(a))[0]
            raise ActionError(
                f"action contains a non-finite value {a[tuple(bad)]} at index {tuple(int(x) for x in bad)}"
            )
        return np.minimum(np.maximum(a, -1.0), 1.0)  # np.clip's dispatch costs more than the work here

    def step(self, action: Any) -> StepOutput:
        a = self.validate_action(action)
        sent = self.task.compose_action(a, self.phys)  # the policy's action, or reference + residual
        # Latency: the actuators see the action from `latency` control steps ago (ring buffer).
        depth = self._action_hist.shape[0]
        if depth > 1:
            self._hist_head = (self._hist_head + 1) % depth
            self._action_hist[self._hist_head] = sent
            applied = self._action_hist[(self._hist_head - self.latency) % depth, self._env_index]
        else:
            applied = sent

        phys = self.phys
        time_before = phys.time.copy()
        setpoint = self.task.action_to_ctrl(applied, phys)
        if self.task.inner_dt is None:
            self._physics(setpoint, self.decimation)
        else:
            for _ in range(self.decimation // self.inner_steps):
                self._physics(self.task.inner_control(setpoint, self.phys), self.inner_steps)
        self.step_count += 1
        if self._noise is not None:
            self._noise.new_step()
        self._phys.last_action[:] = a

        diverged = self._check_divergence(time_before)
        if self._push_every:
            self._push()
        phys = self.phys
        result = self.task.evaluate(phys, a)
        if diverged.any():
            result.terminated = result.terminated | diverged
            result.reward = np.where(diverged, 0.0, result.reward)
        self.task.after_step(phys, self.in_episode_rng())
        return StepOutput(
            obs=self.observe(),
            result=result,
            truncated=(self.step_count >= self.episode_steps) & ~result.terminated,
            privileged=self.task.privileged(phys) if self.want_privileged else None,
            diverged=diverged,
        )

    def observe(self) -> np.ndarray:
        obs = self.task.observe(self.phys)
        if self._noise is not None:
            obs = obs + self._noise.sample(self.in_episode_rng())
        self.task.record_observation(obs, self.phys)
        return obs

    def _physics(self, ctrl: np.ndarray, nstep: int) -> None:
        readings = self.physics.advance(ctrl, nstep, self.task.wants_substeps)
        if readings is not None:
            self.task.on_substeps(readings, self.physics_dt)

    def _check_divergence(self, time_before: np.ndarray) -> np.ndarray:
        """End episodes whose physics diverged rather than feed garbage to a learner.

        MuJoCo checks every step for non-finite or huge positions, velocities and
        accelerations and then resets the simulation to the model's initial state
        (``mj_checkPos/Vel/Acc``), silently inside ``rollout``. The reset rewinds
        the clock, so "time did not advance by a control period" catches every
        such event with one comparison.
        """
        return self.phys.time < time_before + 0.5 * self.task.control_dt

    def _push(self) -> None:
        due = (self.step_count % self._push_every) == 0
        if not due.any():
            return
        if self.task.push_dofs is None:  # _push_every is 0 then: never reached
            return
        lo, hi = self.task.push_dofs
        ids = np.flatnonzero(due)
        rng = self.in_episode_rng()
        mag = draw_rows(rng, ids, self.dr.push_velocity.sample)
        direction = draw_rows(rng, ids, lambda g, n: g.normal(size=(n, hi - lo)))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True) + 1e-9
        self.phys.qvel[ids, lo:hi] += mag[:, None] * direction

    def close(self) -> None:
        """Release the backend's threads or device memory."""
        physics = getattr(self, "physics", None)
        if physics is not None:
            physics.close()

    # -- rendering -------------------------------------------------------------
    def load_env_into(self, i: int, data: mujoco.MjData) -> mujoco.MjModel:
        """Copy env ``i``'s state into ``data`` (forward-computed); returns its model."""
        model = self.models[i]
        self.physics.load_env_into(i, model, data)
        mujoco.mj_forward(model, data)
        return model


def _whole_ratio(a: float, b: float, name: str) -> int:
    n = int(round(a / b))
    if n < 1 or abs(n * b - a) > 1e-9:
        raise ConfigError(name, f"{a} s must be a whole multiple of physics_dt {b} s")
    return n


def _copy_model(m: mujoco.MjModel) -> mujoco.MjModel:
    import copy

    return copy.copy(m)
