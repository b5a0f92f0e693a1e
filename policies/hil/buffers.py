"""Replay buffers and RLPD's batch mixing.

A transition is a flat dict of arrays: ``obs.<key>`` and ``next_obs.<key>`` for every
observation key, ``action``, ``reward``, ``terminated`` (no bootstrap past it) and
``intervened`` (the operator's action, not the policy's). The same flat dict is what the
actor sends and what the demo files hold, so nothing is converted on the way.
"""

from __future__ import annotations

import numpy as np

from sim2real.errors import Sim2RealError

Batch = dict[str, np.ndarray]


def transition_spec(obs_shapes: dict[str, tuple[int, ...]], action_dim: int) -> dict[str, tuple[tuple[int, ...], type]]:
    """Field name -> (shape of one transition, dtype)."""
    spec: dict[str, tuple[tuple[int, ...], type]] = {}
    for prefix in ("obs", "next_obs"):
        for key, shape in obs_shapes.items():
            spec[f"{prefix}.{key}"] = (tuple(shape), np.float32 if key == "state" else np.uint8)
    spec["action"] = ((action_dim,), np.float32)
    spec["reward"] = ((), np.float32)
    spec["terminated"] = ((), np.bool_)
    spec["intervened"] = ((), np.bool_)
    return spec


ACTION_BOUND = 1.0 + 1e-6
"""Actions are the policy's normalized ones, in [-1, 1] (SAC's squashed range; the
operator's corrections are clipped to it): anything beyond is no action any actor sends
(1e30 passed every check before)."""


def coerce_transitions(batch: Batch, spec: dict[str, tuple[tuple[int, ...], type]]) -> Batch:
    """``batch``'s spec fields as the spec's dtypes, checked *after* the conversion (what
    enters a buffer or a file is what was checked): raises on missing fields, wrong shapes,
    non-numeric arrays, values that do not survive the cast (a float64 1e39 becomes inf in
    float32, 300 wraps in uint8), NaN or inf anywhere and actions outside [-1, 1]."""
    missing = set(spec) - set(batch)
    if missing:
        raise Sim2RealError(f"transitions lack fields {sorted(missing)}")
    out: Batch = {}
    n = None
    for name, (shape, dtype) in spec.items():
        arr = np.asarray(batch[name])
        if arr.ndim != len(shape) + 1 or tuple(arr.shape[1:]) != shape:
            raise Sim2RealError(f"transitions field {name!r}: shape {arr.shape}, expected [N, {shape}]")
        if n is None:
            n = arr.shape[0]
        elif arr.shape[0] != n:
            raise Sim2RealError(f"transitions field {name!r} has {arr.shape[0]} rows, others {n}")
        if arr.dtype.kind not in "biuf":
            raise Sim2RealError(f"transitions field {name!r} has dtype {arr.dtype}, not a real number")
        with np.errstate(all="ignore"):
            cast = arr.astype(dtype)
        if cast.dtype.kind == "f":
            if not np.all(np.isfinite(cast)):
                raise Sim2RealError(f"transitions field {name!r} holds NaN or inf (after the cast to {cast.dtype})")
            if name == "action" and cast.size and float(np.max(np.abs(cast))) > ACTION_BOUND:
                raise Sim2RealError(f"transitions field 'action' holds {float(np.max(np.abs(cast))):.3g}: "
                                    "normalized actions lie in [-1, 1]")
        elif arr.dtype != cast.dtype and not np.array_equal(cast, arr):
            raise Sim2RealError(f"transitions field {name!r} holds values outside {np.dtype(dtype).name}")
        out[name] = cast
    return out


def validate_transitions(batch: Batch, spec: dict[str, tuple[tuple[int, ...], type]]) -> int:
    """Number of transitions in ``batch``; raises as :func:`coerce_transitions` does (bad
    data never enters a buffer)."""
    converted = coerce_transitions(batch, spec)
    return int(len(next(iter(converted.values())))) if converted else 0


class ReplayBuffer:
    """Fixed-capacity ring buffer of transitions.

    Args:
        spec: From :func:`transition_spec`.
        capacity: Transitions kept; the oldest are overwritten.
    """

    def __init__(self, spec: dict[str, tuple[tuple[int, ...], type]], capacity: int) -> None:
        if capacity < 1:
            raise Sim2RealError("buffer capacity must be positive")
        self.spec = spec
        self.capacity = int(capacity)
        self.data = {name: np.zeros((self.capacity, *shape), dtype=dtype) for name, (shape, dtype) in spec.items()}
        self.size = 0
        self.cursor = 0
        self.total_added = 0

    def __len__(self) -> int:
        return self.size

    def add(self, batch: Batch) -> int:
        """Append ``N`` transitions (validated first); returns ``N``."""
        batch = coerce_transitions(batch, self.spec)
        n = len(next(iter(batch.values())))
        keep = min(n, self.capacity)  # more than fits: only the newest survive anyway
        idx = (self.cursor + np.arange(keep)) % self.capacity
        for name in self.spec:
            self.data[name][idx] = np.asarray(batch[name])[n - keep:]
        self.cursor = int((self.cursor + keep) % self.capacity)
        self.size = min(self.size + keep, self.capacity)
        self.total_added += n
        return n

    def sample(self, n: int, rng: np.random.Generator) -> Batch:
        if self.size == 0:
            raise Sim2RealError("cannot sample from an empty buffer")
        idx = rng.integers(0, self.size, size=n)
        return {name: arr[idx] for name, arr in self.data.items()}


class MixedSampler:
    """RLPD batches: ``demo_fraction`` of each batch from the demo buffer, the rest online.

    While the demo buffer is empty (SAC from scratch) the whole batch is online.
    Each batch carries ``from_demo`` (bool per row) so the mix can be checked.
    """

    def __init__(self, online: ReplayBuffer, demo: ReplayBuffer, demo_fraction: float = 0.5) -> None:
        if not 0.0 <= demo_fraction < 1.0:
            raise Sim2RealError(f"demo_fraction must be in [0, 1), got {demo_fraction}")
        self.online, self.demo, self.demo_fraction = online, demo, demo_fraction

    def sample(self, batch_size: int, rng: np.random.Generator) -> Batch:
        n_demo = int(round(batch_size * self.demo_fraction)) if len(self.demo) else 0
        parts = [self.online.sample(batch_size - n_demo, rng)]
        if n_demo:
            parts.append(self.demo.sample(n_demo, rng))
        batch = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
        batch["from_demo"] = np.r_[np.zeros(batch_size - n_demo, bool), np.ones(n_demo, bool)]
        return batch


def episode_to_transitions(obs: list[dict[str, np.ndarray]], actions: np.ndarray, rewards: np.ndarray,
                           terminated: np.ndarray, intervened: np.ndarray) -> Batch:
    """Flat transitions from one episode's ``T + 1`` observations and ``T`` steps."""
    T = len(actions)
    if len(obs) != T + 1:
        raise Sim2RealError(f"an episode of {T} steps needs {T + 1} observations, got {len(obs)}")
    out: Batch = {}
    for key in obs[0]:
        stacked = np.stack([o[key] for o in obs])
        out[f"obs.{key}"] = stacked[:-1]
        out[f"next_obs.{key}"] = stacked[1:]
    out["action"] = np.asarray(actions, dtype=np.float32).reshape(T, -1)
    out["reward"] = np.asarray(rewards, dtype=np.float32)
    out["terminated"] = np.asarray(terminated, dtype=bool)
    out["intervened"] = np.asarray(intervened, dtype=bool)
    return out
