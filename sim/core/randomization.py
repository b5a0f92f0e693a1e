"""Domain randomization: seeded, validated, reported.

Each robot subclasses :class:`DomainRandomization` in its own ``randomize.py``
with robot-specific defaults, extra fields and :meth:`apply` additions, and
provides ``train()`` and ``heldout()`` presets (held-out ranges are wider and
never used in training, to measure robustness).

Randomization happens per episode in ``reset``, on the environment's own copy
of the model, always relative to the *nominal* model so effects never compound.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Bounds, from_dict


@dataclass(frozen=True)
class Range:
    """A closed interval sampled uniformly; ``low == high`` is a constant."""

    low: float
    high: float

    def check(self, name: str, lower_bound: float | None = None, upper_bound: float | None = None) -> None:
        for end, value in (("low", self.low), ("high", self.high)):
            if not np.isfinite(value):
                raise ConfigError(f"{name}.{end}", f"must be finite, got {value}")
        if self.low > self.high:
            raise ConfigError(name, f"low ({self.low}) is greater than high ({self.high})")
        if lower_bound is not None and self.low < lower_bound:
            raise ConfigError(f"{name}.low", f"must be >= {lower_bound}, got {self.low}")
        if upper_bound is not None and self.high > upper_bound:
            raise ConfigError(f"{name}.high", f"must be <= {upper_bound}, got {self.high}")

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...] | None = None) -> Any:
        if self.low == self.high:
            return np.full(size, self.low) if size is not None else float(self.low)
        return rng.uniform(self.low, self.high, size)

    def contains(self, value: Any) -> bool:
        v = np.asarray(value)
        return bool(np.all((v >= self.low - 1e-12) & (v <= self.high + 1e-12)))


@dataclass(frozen=True)
class Sweep:
    """A robustness axis over something a model may get wrong rather than a trained
    range: ``field`` held at each of ``values`` in turn (constant over every episode of a
    point), with the ``fixed`` fields held too (a torsional friction acts only at
    ``condim`` 4 or 6). Robots declare theirs in :meth:`DomainRandomization.model_sweeps`."""

    field: str
    values: tuple[float, ...]
    unit: str = ""
    """What a value means, for the plot ("N m s/rad added")."""
    fixed: tuple[tuple[str, float], ...] = ()
    substeps: int = 1
    """Physics steps per step of the task's own timestep at every point: a setting the
    task's step cannot integrate (impratio 100 at 5 ms) is swept at one that can, rather
    than measured as a numerical failure."""


def is_dr_file(name: str) -> bool:
    """A randomization named by a file (``fitted.yaml``) rather than a preset name."""
    return str(name).endswith((".yaml", ".yml"))


def read_dr_file(path: str) -> dict[str, Any]:
    """The field values of a randomization file: a YAML mapping of the robot's
    randomization fields (ranges as ``[low, high]``), such as ``sim2real sysid``'s
    ``fitted.yaml``; they replace the training preset's values.

    Raises:
        ConfigError: a missing file, invalid YAML or not a mapping (one line, naming the file).
    """
    import yaml

    try:
        values = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError("dr", f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError("dr", f"{path} is not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(values, dict):
        raise ConfigError("dr", f"{path} must hold a mapping of randomization fields")
    return values


def uniform(low: float, high: float, *, at_least: float | None = None, at_most: float | None = None) -> Any:
    """A :class:`Range` field of a randomization dataclass: its default ``[low, high]``
    and the bounds any value of it must keep (:meth:`DomainRandomization.validate`
    checks every range field against its own). One declaration per field, in every
    robot's ``randomize.py``."""
    return field(default_factory=lambda: Range(low, high), metadata={"bounds": Bounds(ge=at_least, le=at_most)})


@dataclass
class DomainRandomization:
    """Randomization shared by every robot. Scales multiply the nominal value."""

    enabled: bool = True
    """Master switch; ``False`` gives the nominal model every episode."""
    friction: Range = uniform(1.0, 1.0, at_least=0.0)
    """Scale on the sliding friction of every geom."""
    mass_scale: Range = uniform(1.0, 1.0, at_least=0.05)
    """Scale on every robot link mass (one draw per link)."""
    com_shift: Range = uniform(0.0, 0.0, at_least=-0.5, at_most=0.5)
    """Shift (m) of the root body's centre of mass, per axis."""
    motor_strength: Range = uniform(1.0, 1.0, at_least=0.0)
    """Scale on each actuator's force/torque output (one draw per actuator)."""
    pd_gain_scale: Range = uniform(1.0, 1.0, at_least=0.0)
    """Scale on position-actuator stiffness and damping (one draw per actuator)."""
    latency_steps: tuple[int, int] = (0, 0)
    """Actuation latency in whole control steps, sampled per episode (inclusive)."""
    obs_noise_scale: float = 0.0
    """Multiplier on the task's per-element observation noise (0 disables)."""
    push_velocity: Range = uniform(0.0, 0.0, at_least=0.0)
    """Magnitude (m/s) of random horizontal velocity kicks to the root body."""
    push_interval_s: float = 0.0
    """Seconds between kicks (0 disables)."""

    # -- validation -------------------------------------------------------
    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first invalid field. Every range field is
        checked against the bounds its :func:`uniform` declaration gives; subclasses add
        only the rules that span fields."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Range):
                bounds = f.metadata.get("bounds", Bounds())
                value.check(f.name, bounds.low, bounds.high)
        lo, hi = self.latency_steps
        if int(lo) != lo or int(hi) != hi or lo < 0 or hi < lo or hi > 20:
            raise ConfigError(
                "latency_steps", f"must be whole control steps with 0 <= low <= high <= 20, got {self.latency_steps}"
            )
        if not np.isfinite(self.obs_noise_scale) or self.obs_noise_scale < 0:
            raise ConfigError("obs_noise_scale", f"must be finite and >= 0, got {self.obs_noise_scale}")
        if not np.isfinite(self.push_interval_s) or self.push_interval_s < 0:
            raise ConfigError("push_interval_s", f"must be finite and >= 0, got {self.push_interval_s}")

    # -- (de)serialisation for YAML configs -------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = [v.low, v.high] if isinstance(v, Range) else (list(v) if isinstance(v, tuple) else v)
        return out

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DomainRandomization:
        """Build from plain values (``[low, high]`` lists for ranges) through the strict
        loader: unknown keys and malformed values raise :class:`ConfigError` naming the field."""
        dr = from_dict(cls, values)
        assert isinstance(dr, DomainRandomization)
        return dr

    # -- presets (robots override) ------------------------------------------
    @classmethod
    def train(cls) -> DomainRandomization:
        """Ranges used during training."""
        return cls()

    @classmethod
    def heldout(cls) -> DomainRandomization:
        """Wider ranges never seen in training, for robustness evaluation."""
        return cls()

    @classmethod
    def model_sweeps(cls) -> dict[str, Sweep]:
        """Robustness axes over what the robot's model may get wrong (axis name ->
        :class:`Sweep`); none by default."""
        return {}

    @classmethod
    def none(cls) -> DomainRandomization:
        """The nominal robot: no randomization, no noise, no pushes."""
        return cls(enabled=False)

    @classmethod
    def preset(cls, name: str) -> DomainRandomization:
        """A preset by name (``train``, ``heldout``, ``none``) or a YAML file of field
        values replacing the training preset's (:func:`read_dr_file`)."""
        if is_dr_file(name):
            return cls.from_dict({**cls.train().to_dict(), **read_dr_file(name)})
        presets = {"train": cls.train, "heldout": cls.heldout, "none": cls.none}
        if name not in presets:
            raise ConfigError("dr", f"unknown preset {name!r}; choose one of {list(presets)} or a .yaml file")
        return presets[name]()

    # -- application ---------------------------------------------------------
    def robot_body_ids(self, model: mujoco.MjModel) -> np.ndarray:
        """Bodies whose mass is randomized: everything but the world and static
        or mocap bodies. Robots override to narrow it."""
        ids = np.arange(1, model.nbody)
        return ids[(model.body_mass[ids] > 0) & (model.body_mocapid[ids] < 0)]

    def root_body_id(self, model: mujoco.MjModel) -> int:
        """Body whose centre of mass is shifted (default: body 1)."""
        return 1

    def apply(self, model: mujoco.MjModel, nominal: mujoco.MjModel, rng: np.random.Generator) -> dict[str, Any]:
        """Write one draw into ``model`` (a copy of ``nominal``) and return the
        sampled values for ``info``. Robots extend this for their own fields."""
        restore_nominal(model, nominal)
        if not self.enabled:
            return {}
        sampled: dict[str, Any] = {}
        f = self.friction.sample(rng)
        model.geom_friction[:, 0] = nominal.geom_friction[:, 0] * f
        sampled["friction"] = float(f)

        bodies = self.robot_body_ids(model)
        scale = self.mass_scale.sample(rng, len(bodies))
        model.body_mass[bodies] = nominal.body_mass[bodies] * scale
        model.body_inertia[bodies] = nominal.body_inertia[bodies] * scale[:, None]
        sampled["mass_scale"] = scale.round(4).tolist()

        root = self.root_body_id(model)
        shift = self.com_shift.sample(rng, 3)
        model.body_ipos[root] = nominal.body_ipos[root] + shift
        sampled["com_shift"] = shift.round(4).tolist()

        # nactuator, not nu: in MuJoCo 4 a multi-input actuator makes them differ.
        strength = self.motor_strength.sample(rng, model.nactuator)
        gains = self.pd_gain_scale.sample(rng, model.nactuator)
        is_position = (nominal.actuator_biastype == mujoco.mjtBias.mjBIAS_AFFINE) & (
            nominal.actuator_biasprm[:, 1] != 0
        )
        # A servo's force kp*(ctrl - q) - kv*qdot scales with both its gains and the motor's
        # strength; its force limit scales with strength only. A plain motor's gain is its strength.
        pd = np.where(is_position, gains, 1.0)
        model.actuator_gainprm[:, 0] = nominal.actuator_gainprm[:, 0] * pd * strength
        model.actuator_biasprm[:, 1] = nominal.actuator_biasprm[:, 1] * pd * strength
        model.actuator_biasprm[:, 2] = nominal.actuator_biasprm[:, 2] * pd * strength
        model.actuator_forcerange[:] = nominal.actuator_forcerange * strength[:, None]
        sampled["motor_strength"] = strength.round(4).tolist()
        sampled["pd_gain_scale"] = np.where(is_position, gains, 1.0).round(4).tolist()
        return sampled

    def sample_latency(self, rng: np.random.Generator) -> int:
        if not self.enabled:
            return 0
        lo, hi = self.latency_steps
        return int(rng.integers(lo, hi + 1))


_RANDOMIZED_FIELDS = (
    "geom_friction",
    "geom_condim",
    "geom_size",
    "geom_rbound",
    "geom_aabb",
    "body_mass",
    "body_inertia",
    "body_ipos",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_forcerange",
    "actuator_gear",
    "body_gravcomp",
    "qpos_spring",
    "actuator_dynprm",
    "dof_damping",
    "dof_frictionloss",
    "dof_armature",
    "geom_solref",
    "hfield_data",
    "opt",
)


def restore_nominal(model: mujoco.MjModel, nominal: mujoco.MjModel) -> None:
    """Copy every field any randomizer may touch back from the nominal model."""
    for name in _RANDOMIZED_FIELDS:
        if name == "opt":
            model.opt.wind[:] = nominal.opt.wind
            model.opt.density = nominal.opt.density
            model.opt.viscosity = nominal.opt.viscosity
            model.opt.gravity[:] = nominal.opt.gravity
            model.opt.cone = nominal.opt.cone
            model.opt.impratio = nominal.opt.impratio
            continue
        getattr(model, name)[...] = getattr(nominal, name)
