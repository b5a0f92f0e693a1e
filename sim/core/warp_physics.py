"""The MuJoCo Warp physics backend: every world of the batch in one set of Warp kernels.

Tasks keep their batch-first numpy code: :class:`PhysicsBatch` holds numpy arrays of
the Warp arrays (float32: MuJoCo Warp's precision). On the CPU device they *are* the
Warp arrays' memory (``wp.array.numpy()`` shares it), so nothing is copied; on a CUDA
device they are host mirrors copied to the device before and back after each
:meth:`WarpPhysics.advance`, i.e. at the control-step (or inner-controller) boundary,
and the physics steps of one advance replay as one captured CUDA graph. The CUDA path
has not run yet (no GPU here); ``options={"zero_copy": False}`` runs its copy logic on
the CPU, which the tests do.

Capacities come from :mod:`sim2real.sim.core.warp_model`; an overflow (more contacts or
constraint rows than allocated, which MuJoCo Warp would silently drop) is an error.
Divergence: MuJoCo resets a simulation whose state is non-finite or beyond 1e10
(``mj_checkPos/Vel/Acc``); MuJoCo Warp does not, so this backend does it after each
advance, and the engine sees the rewound clock as it does for MuJoCo.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.core import warp_model
from sim2real.sim.core.errors import ConfigError, Sim2RealError
from sim2real.sim.core.physics import PhysicsSetup
from sim2real.sim.core.task import PhysicsBatch

MAXVAL = 1e10
"""MuJoCo's ``mjMAXVAL``: a state beyond it counts as diverged, as in ``mj_checkPos``."""


class WarpCapacityError(Sim2RealError):
    """More contacts or constraint rows than the backend allocated: results would be wrong."""


def _import_warp() -> tuple[Any, Any]:
    import warp as wp

    wp.config.log_level = 30  # warnings only: no banner or module loads on stdout (--json shares it)
    import mujoco_warp as mjw

    return wp, mjw


class WarpPhysics:
    """MuJoCo Warp worlds behind the engine's backend protocol.

    Options (``Engine(physics_options=...)``): ``nconmax`` and ``njmax`` (per world;
    default: from a probe), ``device`` (a Warp device name; default: Warp's default,
    a CUDA GPU when there is one), ``zero_copy`` (CPU only; False copies like CUDA).
    """

    def __init__(self, setup: PhysicsSetup) -> None:
        wp, mjw = _import_warp()
        from mujoco_warp._src import io as mjw_io
        from mujoco_warp._src import types as mjw_types
        from mujoco_warp._src import warp_util

        opts = dict(setup.options)
        unknown = set(opts) - {"nconmax", "njmax", "device", "zero_copy"}
        if unknown:
            raise ConfigError("physics_options", f"unknown for the warp backend: {', '.join(sorted(unknown))}")
        self.wp, self.mjw = wp, mjw
        self.mw: Any = None
        m, B = setup.nominal, len(setup.models)
        self.models, self.B, self.nsens = setup.models, B, m.nsensordata
        reason = warp_model.unsupported_solver(m)
        if reason:
            raise ConfigError("backend", f"the warp backend does not run {reason}; use --backend mujoco")
        self.device = wp.get_device(opts.get("device"))
        found = warp_model.probe(m, setup.probe, B)
        batchable = warp_model.OPT_BATCHABLE | {
            f.name for f in dataclasses.fields(mjw_types.Model)
            if warp_util.is_array_spec(f.type) and getattr(f.type, "shape", ())[:1] == ("*",)
        }
        where = "domain randomization or the task's reset"
        self._fields = warp_model.batched_fields(found.varied_fields, batchable, where)
        self._watch = [f for f in warp_model.model_array_fields(m) if f not in self._fields]
        self.nominal = m
        nconmax, njmax = warp_model.capacities(mjw_io, m, found)
        self.nconmax, self.njmax = int(opts.get("nconmax", nconmax)), int(opts.get("njmax", njmax))
        with wp.ScopedDevice(self.device):
            self.mw = warp_model.put_model_checked(mjw, m, {n: B for n in self._fields if "." not in n})
            self.mw.opt.warn_overflow = 0  # overflows raise WarpCapacityError instead of printing
            for n in self._fields:
                if n.startswith("opt."):  # one row per world (kernels index worldid % rows)
                    one = getattr(self.mw.opt, n[4:])
                    setattr(self.mw.opt, n[4:], wp.array(np.repeat(one.numpy(), B, axis=0), dtype=one.dtype))
            self.scratch = mujoco.MjData(m)  # not forward-computed: put_data checks its nefc against njmax
            self.dw = mjw.put_data(m, self.scratch, nworld=B, nconmax=self.nconmax, njmax=self.njmax)
        self.zero_copy = not self.device.is_cuda and bool(opts.get("zero_copy", True))
        d = self.dw
        names = ["qpos", "qvel", "act", "ctrl", "sensordata", "mocap_pos", "mocap_quat", "time", "qacc_warmstart"]
        self._data = {n: getattr(d, n) for n in names}
        self._model = {n: getattr(self.mw.opt, n[4:]) if n.startswith("opt.") else getattr(self.mw, n)
                       for n in self._fields}
        self.host = {n: self._host(a) for n, a in {**self._data, **self._model}.items()}
        self._check_batched_fields(m)
        h = self.host
        self.batch = PhysicsBatch(
            qpos=h["qpos"], qvel=h["qvel"], act=h["act"], sensordata=h["sensordata"],
            mocap_pos=h["mocap_pos"], mocap_quat=h["mocap_quat"], time=h["time"],
            last_action=np.zeros((B, setup.act_size)),
        )
        self._model_dirty = False
        self._graphs: dict[tuple[int, bool], Any] = {}
        self._warm: set[tuple[int, bool]] = set()
        self._readings = wp.zeros(setup.chunk * B * self.nsens, dtype=float, device=self.device)

    def _host(self, arr: Any) -> np.ndarray:
        """The numpy array tasks see for a Warp array: its memory on the CPU, a mirror otherwise."""
        return arr.numpy() if self.zero_copy else arr.numpy().copy()

    def _check_batched_fields(self, m: mujoco.MjModel) -> None:
        """A batched field must hold the host model's values as they are (no conversion
        in ``put_model``), or writing a randomized row into it would be wrong."""
        for name in self._fields:
            want = np.asarray(warp_model.field_value(m, name), np.float64).ravel()
            got = self.host[name][0].astype(np.float64).ravel()
            if want.shape != got.shape or not np.allclose(want, got, rtol=1e-6, atol=1e-6):
                raise ConfigError("dr", f"the warp backend cannot randomize {name} (MuJoCo Warp converts it); "
                                        "use --dr none or --backend mujoco")

    # -- the backend protocol ----------------------------------------------------
    def reset_one(self, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        h = self.host
        for n in ("qpos", "qvel", "act", "sensordata", "mocap_pos", "mocap_quat", "qacc_warmstart"):
            h[n][i] = getattr(data, n)
        h["time"][i] = data.time
        for n in self._fields:
            h[n][i] = np.asarray(warp_model.field_value(model, n)).reshape(h[n].shape[1:])
        self._model_dirty = bool(self._fields)
        fixed = warp_model.varied_fields(model, self.nominal, self._watch)
        if fixed:  # changed by a draw the construction-time probe never made
            warp_model.batched_fields(fixed, set(), "this reset")

    def advance(self, ctrl: np.ndarray, nstep: int, substeps: bool) -> np.ndarray | None:
        h, wp = self.host, self.wp
        h["ctrl"][:] = ctrl
        if not self.zero_copy:
            for n, arr in self._data.items():
                arr.assign(h[n])
            if self._model_dirty:
                for n, arr in self._model.items():
                    arr.assign(h[n])
        self._model_dirty = False
        with wp.ScopedDevice(self.device):
            if self.device.is_cuda:
                self._replay(nstep, substeps)
            else:
                self._steps(nstep, substeps)
            if not self.zero_copy:
                for n, arr in self._data.items():
                    h[n][:] = arr.numpy()
        self._check_overflow()
        self._reset_diverged()
        if not substeps:
            return None
        flat = self._readings.numpy()[: nstep * self.B * self.nsens]
        return flat.reshape(nstep, self.B, self.nsens).transpose(1, 0, 2)

    def _steps(self, nstep: int, substeps: bool) -> None:
        """``nstep`` physics steps, keeping the sensor readings after each with ``substeps``."""
        per = self.B * self.nsens
        flat = self.dw.sensordata.flatten()
        for k in range(nstep):
            self.mjw.step(self.mw, self.dw)
            if substeps and per:
                self.wp.copy(self._readings, flat, dest_offset=k * per, count=per)

    def _replay(self, nstep: int, substeps: bool) -> None:
        """CUDA: run the steps of one advance plainly the first time (which loads every
        kernel), capture them as a graph the second time, replay the graph from then on."""
        key = (nstep, substeps)
        if key not in self._graphs:
            if key not in self._warm:
                self._warm.add(key)
                self._steps(nstep, substeps)
                return
            with self.wp.ScopedCapture() as capture:  # records only: nothing runs yet
                self._steps(nstep, substeps)
            self._graphs[key] = capture.graph
        self.wp.capture_launch(self._graphs[key])

    def _check_overflow(self) -> None:
        """Raise if any world ran out of room. MuJoCo Warp flags most overflows in
        ``d.overflow`` (sticky), but some constraint rows (equality constraints) are
        truncated at ``njmax`` without a flag, so a world *at* capacity after the last
        step counts as overflowed too (the probe's margin keeps real runs well below)."""
        from mujoco_warp._src.types import OverflowType

        solver_only = int(OverflowType.ITERATIONS | OverflowType.LS_ITERATIONS)  # convergence, not capacity
        flags = self.dw.overflow.numpy() & ~solver_only
        flags = flags | np.where(self.dw.nefc.numpy() >= self.dw.njmax, int(OverflowType.NEFC), 0)
        if int(self.dw.nacon.numpy()[0]) >= self.dw.naconmax:
            flags = flags | int(OverflowType.NARROWPHASE)
        if not flags.any():
            return
        worlds = np.flatnonzero(flags)
        kinds = sorted({k.name or "" for k in OverflowType
                        if k and k != OverflowType.ALL and np.any(flags & int(k))})
        raise WarpCapacityError(
            f"MuJoCo Warp ran out of capacity ({', '.join(kinds)}) in worlds {worlds[:8].tolist()}: "
            f"nconmax={self.nconmax}, njmax={self.njmax} per world. Contacts or constraints were "
            "dropped, so the results are wrong; pass larger values, e.g. "
            f"Engine(physics_options={{'nconmax': {2 * self.nconmax}, 'njmax': {2 * self.njmax}}})"
        )

    def _reset_diverged(self) -> None:
        """Reset worlds with a non-finite or huge state to their model's initial state, as
        MuJoCo's ``mj_checkPos``/``mj_checkVel`` do (the clock rewinds to 0)."""
        h = self.host
        bad = ~(np.isfinite(h["qpos"]).all(1) & np.isfinite(h["qvel"]).all(1)
                & (np.abs(h["qpos"]) < MAXVAL).all(1) & (np.abs(h["qvel"]) < MAXVAL).all(1))
        for i in np.flatnonzero(bad):
            model = self.models[int(i)]
            mujoco.mj_resetData(model, self.scratch)
            mujoco.mj_forward(model, self.scratch)
            self.reset_one(int(i), model, self.scratch)

    def refresh(self) -> None:
        pass  # the host arrays are current after every advance

    def load_env_into(self, i: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        h = self.host
        for n in ("qpos", "qvel", "act", "mocap_pos", "mocap_quat"):
            getattr(data, n)[:] = h[n][i]
        data.time = float(h["time"][i])

    def close(self) -> None:
        self._graphs.clear()
