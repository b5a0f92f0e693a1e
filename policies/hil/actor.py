"""The actor process: acts in the environment, lets the operator intervene, streams
transitions to the learner and takes new weights whenever the learner publishes them.

It never waits for the learner: with no learner (yet, or any more) it keeps acting with
the last weights it received, and its outbox holds the transitions until acknowledged.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from sim2real.errors import Sim2RealError
from sim2real.policies.common.pacing import pace
from sim2real.policies.hil.config import HilConfig
from sim2real.policies.hil.devices import InterventionDevice
from sim2real.policies.hil.env import HilEnv
from sim2real.policies.hil.learner import policy_fingerprint
from sim2real.policies.hil.loop import single_transition
from sim2real.policies.hil.sac import HilAgent, tensors_from_bytes, tensors_to_bytes
from sim2real.policies.hil.transport import ActorClient
from sim2real.policies.hil.wire import load_secret
from sim2real.stopping import stop_on_signals


def check_policy_state(state: Any, reference: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state`` if it has exactly ``reference``'s keys, shapes and floating dtypes and only
    finite values; raises otherwise. Checked before loading: ``load_state_dict`` copies the
    tensors it can before it complains, and a NaN weight makes every action NaN."""
    if not isinstance(state, dict) or set(state) != set(reference):
        keys = sorted(set(state) ^ set(reference)) if isinstance(state, dict) else []
        raise Sim2RealError(f"weights have the wrong keys (differing: {keys[:5]})")
    for key, ref in reference.items():
        value = state[key]
        if not isinstance(value, torch.Tensor) or value.shape != ref.shape or value.dtype != ref.dtype:
            raise Sim2RealError(f"weights {key!r}: expected {ref.dtype} {tuple(ref.shape)}")
        if value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise Sim2RealError(f"weights {key!r} hold NaN or inf")
    return state


class ActorMonitor(Protocol):
    """What the correction console sees of the actor loop and may ask of it."""

    def control_period(self) -> float:
        """Seconds per step when a person watches (0: as fast as possible)."""
        ...

    def paused(self) -> bool:
        """True while the loop must not step (e-stop latched, the operator's hold)."""
        ...

    def take_reset_request(self) -> bool:
        """True once after the operator asked to reset the episode."""
        ...

    def observe_policy(self, action: np.ndarray) -> None:
        """The policy's action for this step, before any intervention (the takeover blend)."""
        ...

    def stepped(self, next_obs: dict[str, np.ndarray], info: dict[str, Any], reward: float, intervened: bool) -> None:
        """After each step: what it led to and whether the operator chose its action."""
        ...

    def episode_started(self, obs: dict[str, np.ndarray]) -> None:
        ...

    def episode_ended(self, row: dict[str, Any]) -> None:
        ...


@dataclass
class _RunState:
    """The actor loop's counters and the transitions not yet sent."""

    step: int = 0
    episode: int = 0
    episode_return: float = 0.0
    episode_interventions: int = 0
    episode_steps: int = 0
    interventions: int = 0
    successes: list[bool] = field(default_factory=list)
    chunk: list[dict[str, np.ndarray]] = field(default_factory=list)
    episodes: list[dict[str, Any]] = field(default_factory=list)


class Actor:
    """Args:
        config: The run's configuration (the learner's must match).
        env: The environment (simulated, or a real arm's wrapper with the same interface).
        device: Intervention device, or ``None``.
        host, port: The learner's address.
        monitor: Watches and steers the loop (the correction console), or ``None``.
    """

    def __init__(self, config: HilConfig, env: HilEnv, device: InterventionDevice | None, host: str = "127.0.0.1",
                 port: int = 5555, log: Callable[[str], None] = print, monitor: ActorMonitor | None = None) -> None:
        self.config, self.env, self.device, self.log = config, env, device, log
        self.monitor = monitor
        shapes = env.observation_shapes()
        self.agent = HilAgent(shapes, env.action_dim, config.learner, seed=config.seed)
        self.fingerprint = policy_fingerprint(shapes, env.action_dim)
        secret = load_secret(config.transport.secret_env, config.transport.secret_file)
        # Weights frames are capped by what this network's weights take (with room for the
        # format), not by the transitions' cap: a frozen backbone per camera is ~45 MB each.
        weights_bytes = 2 * len(tensors_to_bytes(self.agent.policy_state())) + (1 << 20)
        self.client = ActorClient(host, port, f"actor{uuid.uuid4().hex[:12]}", config.actor.resend_seconds,
                                  config.actor.max_outbox, secret, int(config.transport.max_message_mb * (1 << 20)),
                                  log, max_weights_bytes=weights_bytes)
        self.weights_rejected: Counter[str] = Counter()
        """Published weights refused (the last good ones stay loaded), by reason."""
        self.weights_version = -1
        self.weight_updates = 0
        self.rng = np.random.default_rng(config.seed)
        self.stop = False

    def take_weights(self) -> bool:
        """Load the newest published weights, if any; True when loaded."""
        latest = self.client.latest_weights()
        if latest is None:
            return False
        header, payload = latest
        version = header.get("version")
        if header.get("fingerprint") != self.fingerprint:
            return self._refuse("fingerprint", "weights for a different observation/action layout (check both configs)")
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            return self._refuse("version", f"bad weights version {version!r}")
        try:
            state = check_policy_state(tensors_from_bytes(payload), self.agent.policy_state())
            self.agent.load_policy_state(state)
        except (Sim2RealError, RuntimeError) as exc:
            return self._refuse("tensors", str(exc))
        self.weights_version = version
        self.weight_updates += 1
        return True

    def _refuse(self, reason: str, detail: str) -> bool:
        self.weights_rejected[reason] += 1
        self.log(f"ignored weights ({reason}), keeping version {self.weights_version}: {detail}")
        return False

    def run(self, steps: int, flush_seconds: float = 10.0) -> dict[str, float]:
        """Act for ``steps`` env steps (or until SIGINT/SIGTERM); returns a summary.

        With a :class:`ActorMonitor` (the correction console) the loop runs in real time,
        waits while the monitor pauses it (e-stop, the operator's hold) and resets the
        episode when asked."""
        torch.set_num_threads(1)
        cfg, env, monitor = self.config, self.env, self.monitor
        run = _RunState()
        obs = self._reset(run)
        period = monitor.control_period() if monitor is not None else 0.0
        next_tick = time.monotonic()
        with stop_on_signals(self.request_stop):
            while run.step < steps and not self.stop:
                if monitor is not None:
                    if monitor.paused():
                        time.sleep(0.01)
                        self.client.pump()
                        next_tick = time.monotonic()
                        continue
                    if monitor.take_reset_request():
                        obs = self._end_episode(run, success=False, reset=True)
                next_tick = pace(next_tick, period)
                run.step += 1
                self.take_weights()
                if self.weights_version < 0 and run.step <= cfg.actor.random_steps:
                    action = self.rng.uniform(-1, 1, env.action_dim).astype(np.float32)
                else:
                    action = self.agent.act(obs)
                if monitor is not None:
                    monitor.observe_policy(action)
                override = self.device.poll(obs, env.full_obs) if self.device is not None else None
                intervened = override is not None
                next_obs, reward, terminated, truncated, info = env.step(override if intervened else action)
                run.chunk.append(single_transition(obs, info["action"], reward, next_obs, terminated, intervened))
                run.episode_return += reward
                run.episode_interventions += intervened
                run.interventions += intervened
                run.episode_steps += 1
                if monitor is not None:
                    monitor.stepped(next_obs, info, float(reward), intervened)
                obs = next_obs
                if terminated or truncated:
                    obs = self._end_episode(run, success=bool(info["success"]))
                if len(run.chunk) >= cfg.actor.chunk_size or (run.chunk and (terminated or truncated)):
                    self._send(run.chunk, run.episodes)
                    run.chunk, run.episodes = [], []
                self.client.pump()
            if run.chunk:
                self._send(run.chunk, run.episodes)
            flushed = self.client.flush(flush_seconds)
        return {"steps": run.step, "episodes": run.episode,
                "success_rate": float(np.mean(run.successes)) if run.successes else 0.0,
                "intervention_rate": run.interventions / max(run.step, 1), "weight_updates": self.weight_updates,
                "weights_version": self.weights_version, "unacknowledged": len(self.client.outbox),
                "flushed": flushed, "rejected": self.client.rejected_total,
                "inbound_rejected": sum(self.client.errors.values()) + sum(self.weights_rejected.values())}

    def _reset(self, run: _RunState) -> dict[str, np.ndarray]:
        obs = self.env.reset(seed=self.config.seed * 100_000 + run.episode)
        if self.device is not None:
            self.device.reset()
        if self.monitor is not None:
            self.monitor.episode_started(obs)
        return obs

    def _end_episode(self, run: _RunState, success: bool, reset: bool = False) -> dict[str, np.ndarray]:
        """Book the episode (unless an operator's reset cut it before any step) and start
        the next one."""
        if run.episode_steps or not reset:
            run.successes.append(success)
            row = {"episode": run.episode, "return": run.episode_return, "success": success,
                   "steps": run.episode_steps, "intervened_steps": run.episode_interventions,
                   "weights_version": self.weights_version, "time": time.time(), "operator_reset": reset}
            run.episodes.append(row)
            if self.monitor is not None:
                self.monitor.episode_ended(row)
            run.episode += 1
        run.episode_return, run.episode_interventions, run.episode_steps = 0.0, 0, 0
        return self._reset(run)

    def request_stop(self) -> None:
        """End the loop after the current step, then flush (SIGINT/SIGTERM call this)."""
        self.stop = True

    def _send(self, chunk: list[dict[str, np.ndarray]], episodes: list[dict]) -> None:
        self.client.send({k: np.concatenate([t[k] for t in chunk]) for k in chunk[0]}, episodes)

    def close(self) -> None:
        self.client.close()
