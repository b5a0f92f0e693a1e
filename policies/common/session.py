"""Saving and restoring a training session (model, normalization, replay buffer,
RNG) as checkpoint files, and fingerprints that let a resumed run prove it
continued from exactly the saved state."""

from __future__ import annotations

import pickle
import random
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.utils import get_device
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sim2real.policies.algorithms import AlgorithmSpec
from sim2real.policies.errors import CorruptCheckpointError
from sim2real.sim.core.engine import Engine
from sim2real.sim.core.vec_env import BatchedVecEnv


def obs_rms(vecnorm: VecNormalize) -> RunningMeanStd | None:
    """The observation normalization's running statistics; ``None`` when it is off
    (VecNormalize then has no ``obs_rms`` at all). Observations here are flat Boxes:
    VecNormalize keeps one :class:`RunningMeanStd`, never the per-key dict of Dict spaces."""
    if not vecnorm.norm_obs:
        return None
    rms = vecnorm.obs_rms
    if not isinstance(rms, RunningMeanStd):
        raise TypeError(f"expected one RunningMeanStd for a Box observation space, got {type(rms).__name__}")
    return rms


def obs_statistics(vecnorm: VecNormalize) -> tuple[np.ndarray, np.ndarray] | None:
    """``(mean, var)`` of the observation normalization; ``None`` when it is off."""
    rms = obs_rms(vecnorm)
    return None if rms is None else (rms.mean, rms.var)


def engine_of(vecnorm: VecNormalize) -> Engine:
    """The simulation engine under the normalization wrapper."""
    base = vecnorm.venv.unwrapped if vecnorm.venv is not None else None  # through reward wrappers
    if not isinstance(base, BatchedVecEnv):
        raise TypeError(f"expected the simulator's batched envs under VecNormalize, got {type(base).__name__}")
    return base.engine


def writers(
    model: Any, vecnorm: VecNormalize, spec: AlgorithmSpec, with_replay_buffer: bool
) -> dict[str, Callable[[IO[bytes]], None]]:
    """File writers of one checkpoint (see checkpoint.py for the layout)."""
    rng = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
        "env": engine_of(vecnorm).rng.bit_generator.state,
    }
    out: dict[str, Callable[[IO[bytes]], None]] = {
        "model.zip": lambda f: model.save(f),
        # VecNormalize pickles without its wrapped env (SB3's __getstate__).
        "vecnormalize.pkl": lambda f: pickle.dump(vecnorm, f, protocol=pickle.HIGHEST_PROTOCOL),
        "rng.pkl": lambda f: pickle.dump(rng, f, protocol=pickle.HIGHEST_PROTOCOL),
    }
    if spec.off_policy and with_replay_buffer:
        out["replay_buffer.pkl"] = lambda f: pickle.dump(model.replay_buffer, f, protocol=pickle.HIGHEST_PROTOCOL)
    for wrapper in _stateful_wrappers(vecnorm):  # e.g. a reward model refined during the run
        for name, data in wrapper.checkpoint_files().items():
            if name in out:
                raise ValueError(f"{type(wrapper).__name__} writes {name}, which the checkpoint already has")
            out[name] = _bytes_writer(data)
    return out


def _bytes_writer(data: bytes) -> Callable[[IO[bytes]], None]:
    def write(f: IO[bytes]) -> None:
        f.write(data)

    return write


def _stateful_wrappers(vecnorm: VecNormalize) -> list[Any]:
    """The env wrappers under the normalization that keep training state of their own
    (``checkpoint_files`` / ``restore_checkpoint_files``)."""
    found, env = [], vecnorm.venv
    while env is not None:
        if hasattr(env, "checkpoint_files") and hasattr(env, "restore_checkpoint_files"):
            found.append(env)
        env = getattr(env, "venv", None)
    return found


def load_vecnormalize(folder: Path, venv: VecEnv | None) -> VecNormalize:
    """The checkpoint's VecNormalize, wrapping ``venv`` when given."""
    try:
        with open(folder / "vecnormalize.pkl", "rb") as f:
            vecnorm = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError) as exc:
        raise CorruptCheckpointError(f"{folder / 'vecnormalize.pkl'} is unreadable ({exc})") from None
    if not isinstance(vecnorm, VecNormalize):
        raise CorruptCheckpointError(f"{folder / 'vecnormalize.pkl'} does not hold a VecNormalize")
    if venv is not None:
        vecnorm.set_venv(venv)
    return vecnorm


def load_model(folder: Path, spec: AlgorithmSpec, env: VecEnv | None, device: str = "cpu") -> Any:
    """The SB3 model of a checkpoint (weights, optimizer state, counters)."""
    try:
        return spec.cls.load(folder / "model.zip", env=env, device=get_device(device))
    except (OSError, ValueError, KeyError, RuntimeError, EOFError, pickle.UnpicklingError) as exc:
        raise CorruptCheckpointError(
            f"{folder / 'model.zip'} could not be loaded ({type(exc).__name__}: {exc})"
        ) from None


def restore_training_state(folder: Path, model: Any, vecnorm: VecNormalize, spec: AlgorithmSpec) -> None:
    """Replay buffer and RNG states of a ``last`` checkpoint into a loaded model."""
    if spec.off_policy:
        path = folder / "replay_buffer.pkl"
        if not path.is_file():
            raise CorruptCheckpointError(f"{path} is missing; an off-policy run cannot resume without its buffer")
        try:
            with open(path, "rb") as f:
                model.load_replay_buffer(f)
        except (pickle.UnpicklingError, EOFError, AssertionError) as exc:
            raise CorruptCheckpointError(f"{path} is unreadable ({exc})") from None
    try:
        with open(folder / "rng.pkl", "rb") as f:
            rng = pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError) as exc:
        raise CorruptCheckpointError(f"{folder / 'rng.pkl'} is unreadable ({exc})") from None
    def read(name: str) -> bytes | None:
        return (folder / name).read_bytes() if (folder / name).is_file() else None

    for wrapper in _stateful_wrappers(vecnorm):
        wrapper.restore_checkpoint_files(read)
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    torch.set_rng_state(rng["torch"])
    engine_of(vecnorm).rng.bit_generator.state = rng["env"]


def optimizers(model: Any) -> dict[str, torch.optim.Optimizer]:
    """Every optimizer SB3 saves for ``model`` (PPO: one; SAC: actor, critic, temperature)."""
    from stable_baselines3.common.save_util import recursive_getattr

    names, _ = model._get_torch_save_params()
    return {n: recursive_getattr(model, n) for n in names if n.endswith("optimizer")}


def fingerprint(model: Any, vecnorm: VecNormalize) -> dict[str, Any]:
    """Small numbers that identify the training state: counters, normalization
    statistics, optimizer moments, replay buffer fill."""
    opt_info = {}
    for name, opt in optimizers(model).items():
        steps, second = 0.0, 0.0
        for s in opt.state.values():
            steps = max(steps, float(s.get("step", 0)))
            if "exp_avg_sq" in s:
                second += float(s["exp_avg_sq"].double().sum())
        opt_info[name] = {"steps": steps, "exp_avg_sq_sum": second}
    rms = obs_rms(vecnorm)
    out: dict[str, Any] = {
        "num_timesteps": int(model.num_timesteps),
        "n_updates": int(getattr(model, "_n_updates", 0)),
        "obs_rms_count": float(rms.count) if rms is not None else 0.0,
        "obs_rms_mean": [float(x) for x in rms.mean] if rms is not None else [],
        "obs_rms_var": [float(x) for x in rms.var] if rms is not None else [],
        "optimizers": opt_info,
    }
    if getattr(model, "replay_buffer", None) is not None:
        out["replay_buffer_size"] = int(model.replay_buffer.size())
    if hasattr(model, "current_lr"):
        out["learning_rate"] = float(model.current_lr)
    if hasattr(model, "lagrange_multiplier"):
        out["lagrange_multiplier"] = float(model.lagrange_multiplier)
        out["lagrange_integral"] = float(model.pid_integral)
    return out
