"""Demonstrations on disk: one HDF5 file per episode, each written atomically.

Schema (``schema_version`` 1), file ``episode_NNNNNN.h5``::

    attrs   schema_version=1, task, obs_mode, success (bool), steps (T), seed, device, created (UTC ISO)
    obs/<key>      [T+1, ...]  observations: ``state`` float32 [T+1, S]; each camera uint8 [T+1, 3, H, W]
    action         [T, A] float32   the device's command clipped to [-1, 1] (the safety layer's
                                    motion limit and workspace box act after it)
    reward         [T]    float32
    terminated     [T]    bool      no bootstrap past this step
    truncated      [T]    bool
    intervened     [T]    bool      the operator's device chose this action
    success        [T]    bool      success label of the step's resulting frame (the classifier's labels)

A file is written under a temporary name, fsynced and renamed: a crash (even ``kill -9``)
mid-recording leaves every earlier episode intact and at most a ``.tmp-*`` file, which
readers ignore and :func:`load_demo_dir` removes.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from sim2real.errors import Sim2RealError
from sim2real.policies.common.atomic import TMP_PREFIX, fsync_dir, remove_stale_temporaries
from sim2real.policies.hil.buffers import Batch, episode_to_transitions

SCHEMA_VERSION = 1
EPISODE_NAME = re.compile(r"episode_(\d+)\.h5")
STEP_FIELDS = ("action", "reward", "terminated", "truncated", "intervened", "success")


def write_episode(path: str | os.PathLike[str], obs: list[dict[str, np.ndarray]],
                  steps: Mapping[str, np.ndarray | Sequence[Any]], attrs: dict[str, Any]) -> Path:
    """Write one episode atomically (see the module docstring for the layout); ``steps``
    holds one array or list of per-step values by field."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    T = len(steps["action"])
    if len(obs) != T + 1 or any(len(steps[f]) != T for f in STEP_FIELDS):
        raise Sim2RealError(f"episode arrays disagree: {len(obs)} observations for {T} steps")
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX + target.name + ".", dir=target.parent)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs.update({"schema_version": SCHEMA_VERSION, "steps": T,
                            "created": dt.datetime.now(dt.UTC).isoformat(), **attrs})
            for key in obs[0]:
                data = np.stack([o[key] for o in obs])
                f.create_dataset(f"obs/{key}", data=data, compression="gzip" if data.dtype == np.uint8 else None)
            dtypes = {"action": np.float32, "reward": np.float32}
            for name in STEP_FIELDS:
                f.create_dataset(name, data=np.asarray(steps[name], dtype=dtypes.get(name, bool)))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
    return target


def read_episode(path: str | os.PathLike[str]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, Any]]:
    """``(obs arrays [T+1, ...] by key, step arrays [T] by field, attrs)``; raises on a malformed file."""
    try:
        with h5py.File(path, "r") as f:
            attrs: dict[str, Any] = dict(f.attrs)
            if int(attrs.get("schema_version", -1)) != SCHEMA_VERSION:
                raise Sim2RealError(f"{path}: unsupported schema_version {attrs.get('schema_version')}")
            group = f["obs"]
            if not isinstance(group, h5py.Group):
                raise KeyError("'obs' is not a group")
            obs = {key: _read_dataset(group, key) for key in _names(group)}
            steps = {name: _read_dataset(f, name) for name in STEP_FIELDS}
    except (OSError, KeyError) as exc:
        raise Sim2RealError(f"{path}: not a readable demo episode ({exc})") from exc
    T = int(attrs["steps"])
    if any(len(v) != T + 1 for v in obs.values()) or any(len(v) != T for v in steps.values()):
        raise Sim2RealError(f"{path}: arrays do not match steps={T}")
    floats = [v for v in (*obs.values(), steps["action"], steps["reward"]) if v.dtype.kind == "f"]
    if not all(np.all(np.isfinite(v)) for v in floats):
        raise Sim2RealError(f"{path}: holds NaN or inf")
    return obs, steps, attrs


def _names(group: h5py.Group) -> list[str]:
    """The member names of ``group`` (KeyError: a name that is not UTF-8, which h5py gives as bytes)."""
    names: list[str] = []
    for name in group:
        if not isinstance(name, str):
            raise KeyError(f"member name {name!r} is not UTF-8")
        names.append(name)
    return names


def _read_dataset(group: h5py.Group, name: str) -> np.ndarray:
    """The whole array of dataset ``name`` in ``group`` (KeyError: missing, or not a dataset)."""
    node = group[name]
    if not isinstance(node, h5py.Dataset):
        raise KeyError(f"{name!r} is not a dataset")
    return node[()]


def episode_files(folder: str | os.PathLike[str]) -> list[Path]:
    return sorted(p for p in Path(folder).glob("episode_*.h5") if not p.name.startswith(TMP_PREFIX))


def next_episode_index(folder: str | os.PathLike[str]) -> int:
    """One past the highest ``episode_NNNNNN.h5`` index in ``folder`` (0 when none): a
    count would reuse, and overwrite, an index after any earlier episode was deleted."""
    indices = [int(m.group(1)) for p in episode_files(folder) if (m := EPISODE_NAME.fullmatch(p.name))]
    return max(indices, default=-1) + 1


def load_demo_dir(folder: str | os.PathLike[str], only_success: bool = True) -> tuple[Batch | None, int]:
    """All episodes of ``folder`` as flat transitions (every step flagged as the operator's),
    and the number of episodes used. Leftover temporary files of a crash are removed."""
    folder = Path(folder)
    if not folder.is_dir():
        raise Sim2RealError(f"demo folder {folder} does not exist")
    remove_stale_temporaries(folder)
    parts, used = [], 0
    for path in episode_files(folder):
        obs, steps, attrs = read_episode(path)
        if only_success and not bool(attrs.get("success", False)):
            continue
        T = len(steps["action"])
        terminated = steps["terminated"].copy()
        if steps["success"].any():
            # Steps after the first success (an operator holding the success state for the
            # classifier) are not part of the task: the demo ends, terminated, at the success.
            T = int(np.argmax(steps["success"])) + 1
            terminated[T - 1] = True
        obs_list = [{k: v[t] for k, v in obs.items()} for t in range(T + 1)]
        parts.append(episode_to_transitions(obs_list, steps["action"][:T], steps["reward"][:T], terminated[:T],
                                            np.ones(T, bool)))
        used += 1
    if not parts:
        return None, 0
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}, used


def record_demos(env, device, folder: str | os.PathLike[str], n: int, seed: int = 0, device_name: str = "",
                 only_success: bool = True, max_attempts: int | None = None, hold_steps: int = 0,
                 log=print) -> int:
    """Record until ``folder`` holds ``n`` episodes (continues an interrupted recording).

    Each step the device's action is applied (a zero action, holding still, while it is
    idle). With ``hold_steps`` the episode goes on that many steps after the first success
    (needs ``end_on_success=False``): positive frames for the success classifier. Returns
    the number of episodes in ``folder``.
    """
    if n < 1:
        raise Sim2RealError(f"the number of demo episodes must be >= 1, got {n}")
    if hold_steps and env.config.end_on_success:
        raise Sim2RealError("hold_steps needs an environment with end_on_success=False")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(folder)
    have = len(episode_files(folder))
    index = next_episode_index(folder)
    attempts = 0
    limit = max_attempts if max_attempts is not None else 5 * n
    while have < n and attempts < limit:
        episode_seed = seed + index + 1000 * attempts
        attempts += 1
        obs = env.reset(seed=episode_seed)
        device.reset()
        obs_list, steps = [obs], {name: [] for name in STEP_FIELDS}
        done, first_success = False, None
        while not done:
            action = device.poll(obs, env.full_obs)
            intervened = action is not None
            obs, reward, terminated, truncated, info = env.step(np.zeros(env.action_dim) if action is None else action)
            if info["success"] and first_success is None:
                first_success = len(steps["action"])
            held_long_enough = first_success is not None and len(steps["action"]) >= first_success + hold_steps
            done = terminated or truncated or held_long_enough
            truncated = truncated or (held_long_enough and not terminated)
            for name, value in zip(STEP_FIELDS, (info["action"], reward, terminated, truncated, intervened,
                                                 info["success"]), strict=True):
                steps[name].append(value)
            obs_list.append(obs)
        success = first_success is not None
        if success or not only_success:
            write_episode(folder / f"episode_{index:06d}.h5", obs_list, steps,
                          {"task": env.config.task, "obs_mode": env.config.obs_mode, "success": success,
                           "seed": episode_seed, "device": device_name})
            have, index = have + 1, index + 1
        log(f"episode {attempts}: {len(obs_list) - 1} steps, success={success}, saved {have}/{n}")
    return have
