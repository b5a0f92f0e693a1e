"""Physics backends: what advances the batch of ``B`` environments for the engine.

The engine owns everything a task sees (randomization, latency, noise, pushes,
resets through a scratch ``MjData``); a backend only owns the physics state and
steps it. Each backend exposes that state as one :class:`PhysicsBatch` of numpy
arrays with a leading batch dimension, so task code is the same on every backend.

Adding a backend is one class that satisfies :class:`PhysicsBackend` (a file of
its own for anything with extra dependencies) and one line in :data:`BACKENDS`.

* ``step``: one ``MjData`` stepped with ``mj_step`` (one environment);
* ``rollout``: the full physics states of the batch in one float64 array that a
  persistent ``mujoco.rollout`` thread pool advances, physics in C on every core;
* ``warp``: MuJoCo Warp (:mod:`sim2real.sim.core.warp_physics`), float32, every
  world in one set of kernels on the CPU or a CUDA GPU.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.task import PhysicsBatch

FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS
CONTROL_SPEC = mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_MOCAP_POS | mujoco.mjtState.mjSTATE_MOCAP_QUAT


def state_slices(model: mujoco.MjModel, spec: int = int(FULL)) -> dict[int, slice]:
    """Offsets of each state component inside an ``mj_getState`` vector of ``spec``."""
    out: dict[int, slice] = {}
    offset = 0
    for bit in range(int(mujoco.mjtState.mjNSTATE)):
        flag = 1 << bit
        if spec & flag:
            size = mujoco.mj_stateSize(model, flag)
            out[flag] = slice(offset, offset + size)
            offset += size
    return out


@dataclass
class PhysicsSetup:
    """What the engine hands a backend when it binds one."""

    models: list[mujoco.MjModel]
    """One model per environment (randomization writes into them before each reset)."""
    nominal: mujoco.MjModel
    """The task's model as built (the solver variant and timestep applied)."""
    chunk: int
    """The most physics steps one :meth:`PhysicsBackend.advance` call asks for."""
    act_size: int
    """Width of ``PhysicsBatch.last_action``."""
    nthread: int | None = None
    """Worker threads of CPU backends (default: all cores)."""
    probe: Callable[[mujoco.MjModel, mujoco.MjData, int, np.random.Generator], None] | None = None
    """Randomizes a model copy and resets a scratch ``MjData`` as environment ``i`` would
    be (backends that must know capacities or per-world model fields in advance)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Backend-specific options (e.g. the Warp backend's ``nconmax``)."""


class PhysicsBackend(Protocol):
    """The physics state of the batch and the one operation that advances it."""

    batch: PhysicsBatch
    """numpy views of the state (float64 on the CPU backends, float32 on Warp)."""
    scratch: mujoco.MjData
    """The ``MjData`` the engine resets an environment in before :meth:`reset_one`."""

    def reset_one(self, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """Make environment ``i`` start from ``data`` (forward-computed) with ``model``."""
        ...

    def advance(self, ctrl: np.ndarray, nstep: int, substeps: bool) -> np.ndarray | None:
        """Hold ``ctrl [B, nu]`` for ``nstep`` physics steps; with ``substeps`` return the
        sensor readings after every step, ``[B, nstep, nsensordata]``."""
        ...

    def refresh(self) -> None:
        """Bring ``batch`` fields the backend does not share by memory up to date."""
        ...

    def load_env_into(self, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """Write environment ``i``'s state into ``data`` (not forward-computed)."""
        ...

    def close(self) -> None:
        """Release threads or device memory; the backend is unusable afterwards."""
        ...


class StepPhysics:
    """One ``MjData`` stepped with ``mj_step``, viewed as a batch of one."""

    def __init__(self, setup: PhysicsSetup) -> None:
        if len(setup.models) != 1:
            raise ValueError("the 'step' backend runs exactly one environment")
        self.model = setup.models[0]
        self.data = mujoco.MjData(self.model)
        self.scratch = self.data  # resets happen in place
        d = self.data
        self.batch = PhysicsBatch(
            qpos=d.qpos[None], qvel=d.qvel[None], act=d.act[None], sensordata=d.sensordata[None],
            mocap_pos=d.mocap_pos[None], mocap_quat=d.mocap_quat[None],
            time=np.zeros(1), last_action=np.zeros((1, setup.act_size)),
        )

    def reset_one(self, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        pass  # the engine reset self.data itself

    def advance(self, ctrl: np.ndarray, nstep: int, substeps: bool) -> np.ndarray | None:
        self.data.ctrl[:] = ctrl[0]
        if not substeps:
            mujoco.mj_step(self.model, self.data, nstep)
            return None
        readings = np.empty((1, nstep, self.data.sensordata.shape[0]))
        for k in range(nstep):
            mujoco.mj_step(self.model, self.data)
            readings[0, k] = self.data.sensordata
        return readings

    def refresh(self) -> None:
        self.batch.time[0] = self.data.time

    def load_env_into(self, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        if data is not self.data:
            mujoco.mj_copyData(data, model, self.data)

    def close(self) -> None:
        pass


class RolloutPhysics:
    """Full physics states of the batch in one array that ``mujoco.rollout`` advances
    with a pool of threads."""

    def __init__(self, setup: PhysicsSetup) -> None:
        m, B = setup.nominal, len(setup.models)
        self.models, self.nu, self.nmocap = setup.models, m.nu, m.nmocap
        self.scratch = mujoco.MjData(m)
        self.nstate = mujoco.mj_stateSize(m, FULL)
        self.state = np.zeros((B, self.nstate))
        self.sensordata = np.zeros((B, m.nsensordata))
        self.mocap_pos = np.zeros((B, m.nmocap, 3))
        self.mocap_quat = np.zeros((B, m.nmocap, 4))
        n = setup.nthread or os.cpu_count() or 1
        self._pool: mj_rollout.Rollout | None = mj_rollout.Rollout(nthread=n)
        self._datas = [mujoco.MjData(m) for _ in range(n)]
        # skip_checks=True means no tiling inside rollout: controls are laid out per step.
        self._controls = np.zeros((B, setup.chunk, self.nu + 7 * self.nmocap))
        self._out_state = np.zeros((B, setup.chunk, self.nstate))
        self._out_sens = np.zeros((B, setup.chunk, m.nsensordata))
        s, slices = self.state, state_slices(m)
        self.batch = PhysicsBatch(
            qpos=s[:, slices[2]], qvel=s[:, slices[4]], act=s[:, slices[8]], sensordata=self.sensordata,
            mocap_pos=self.mocap_pos, mocap_quat=self.mocap_quat, time=s[:, 0],
            last_action=np.zeros((B, setup.act_size)),
        )

    def reset_one(self, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        mujoco.mj_getState(model, data, self.state[i], FULL)
        self.sensordata[i] = data.sensordata
        self.mocap_pos[i] = data.mocap_pos
        self.mocap_quat[i] = data.mocap_quat

    def advance(self, ctrl: np.ndarray, nstep: int, substeps: bool) -> np.ndarray | None:
        B = len(self.models)
        c = self._controls[:, :nstep]
        c[:, :, : self.nu] = ctrl[:, None]
        if self.nmocap:
            c[:, :, self.nu : self.nu + 3 * self.nmocap] = self.mocap_pos.reshape(B, 1, -1)
            c[:, :, self.nu + 3 * self.nmocap :] = self.mocap_quat.reshape(B, 1, -1)
        out_s = self._out_state[:, :nstep]
        out_d = self._out_sens[:, :nstep]
        if self._pool is None:
            raise RuntimeError("the engine was closed; make a new one")
        self._pool.rollout(
            self.models, self._datas, self.state, c, control_spec=int(CONTROL_SPEC), nstep=nstep,
            skip_checks=True, state=out_s, sensordata=out_d,
        )
        self.state[:] = out_s[:, -1]
        self.sensordata[:] = out_d[:, -1]
        return out_d if substeps else None

    def refresh(self) -> None:
        pass  # every field is a view of self.state or written by advance

    def load_env_into(self, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        mujoco.mj_setState(model, data, self.state[i], FULL)
        data.mocap_pos[:] = self.mocap_pos[i]
        data.mocap_quat[:] = self.mocap_quat[i]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def _warp(setup: PhysicsSetup) -> PhysicsBackend:
    from sim2real.sim.core.warp_physics import WarpPhysics  # needs the 'warp' extra

    physics: Any = WarpPhysics(cast(Any, setup))  # cast: the checker sees this module under two names
    return physics


BACKENDS: dict[str, Callable[[PhysicsSetup], PhysicsBackend]] = {
    "step": StepPhysics,
    "rollout": RolloutPhysics,
    "warp": _warp,
}
"""Backend name -> constructor. ``auto`` (the engine's default) picks ``step`` for one
environment and ``rollout`` for more."""


PHYSICS = ("mujoco", "warp")
"""What users choose between (``--backend``): CPU MuJoCo or MuJoCo Warp."""


def engine_backend(physics: str, num_envs: int) -> str:
    """The engine backend for a user's ``--backend`` choice and batch size."""
    if physics == "mujoco":
        return "rollout" if num_envs > 1 else "step"
    if physics == "warp":
        return "warp"
    raise ConfigError("backend", f"must be one of {', '.join(PHYSICS)}, got {physics!r}")
