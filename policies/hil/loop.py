"""HIL-SERL in one process: act, intervene, store, learn, every env step.

The benchmark uses this loop so success can be measured against env steps exactly; the
two-process system (:mod:`.actor`, :mod:`.learner`) runs the same pieces asynchronously.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sim2real.policies.hil.buffers import MixedSampler, ReplayBuffer, transition_spec
from sim2real.policies.hil.config import HilConfig
from sim2real.policies.hil.devices import InterventionDevice
from sim2real.policies.hil.env import HilEnv, Obs
from sim2real.policies.hil.sac import HilAgent

EVAL_SEED_OFFSET = 1_000_000
"""Evaluation episodes use seeds far from the training ones."""


def make_buffers(env: HilEnv, cfg: HilConfig) -> tuple[ReplayBuffer, ReplayBuffer, MixedSampler]:
    spec = transition_spec(env.observation_shapes(), env.action_dim)
    online = ReplayBuffer(spec, cfg.learner.buffer_capacity)
    demo = ReplayBuffer(spec, cfg.learner.buffer_capacity)
    return online, demo, MixedSampler(online, demo, cfg.learner.demo_fraction)


def single_transition(obs: Obs, action: np.ndarray, reward: float, next_obs: Obs, terminated: bool,
                      intervened: bool) -> dict[str, np.ndarray]:
    out = {f"obs.{k}": v[None] for k, v in obs.items()}
    out.update({f"next_obs.{k}": v[None] for k, v in next_obs.items()})
    out.update(action=np.asarray(action, np.float32)[None], reward=np.array([reward], np.float32),
               terminated=np.array([terminated]), intervened=np.array([intervened]))
    return out


def evaluate(agent: HilAgent, env: HilEnv, episodes: int, seed: int) -> float:
    """Success rate of the deterministic policy alone (no interventions)."""
    successes = 0
    for i in range(episodes):
        obs, done, info = env.reset(seed=EVAL_SEED_OFFSET + seed * 1000 + i), False, {"success": False}
        while not done:
            obs, _, terminated, truncated, info = env.step(agent.act(obs, deterministic=True))
            done = terminated or truncated
        successes += bool(info["success"])
    return successes / episodes


@dataclass
class History:
    env_steps: list[int] = field(default_factory=list)
    wall_seconds: list[float] = field(default_factory=list)
    eval_success: list[float] = field(default_factory=list)
    train_success: list[float] = field(default_factory=list)
    """Success of the last 20 training episodes (interventions included)."""
    intervention_rate: list[float] = field(default_factory=list)
    """Share of intervened steps among the last 1000 env steps."""


def train(cfg: HilConfig, steps: int, demos: dict[str, np.ndarray] | None = None,
          device: InterventionDevice | None = None, eval_every: int = 1000, eval_episodes: int = 10,
          log: Callable[[str], None] = print) -> tuple[HilAgent, History]:
    rng = np.random.default_rng(cfg.seed)
    env, eval_env = HilEnv(cfg.env, seed=cfg.seed), HilEnv(cfg.env, seed=cfg.seed + 1)
    agent = HilAgent(env.observation_shapes(), env.action_dim, cfg.learner, seed=cfg.seed)
    online, demo, sampler = make_buffers(env, cfg)
    if demos is not None:
        demo.add(demos)
    history, start = History(), time.perf_counter()
    recent_success, recent_intervened = deque(maxlen=20), deque(maxlen=1000)
    obs = env.reset(seed=cfg.seed * 100_000)
    episode = 0
    if device is not None:
        device.reset()
    for step in range(1, steps + 1):
        # 1. act: the policy proposes, an active operator overrides
        if step <= cfg.actor.random_steps:
            action = rng.uniform(-1, 1, env.action_dim).astype(np.float32)
        else:
            action = agent.act(obs)
        override = device.poll(obs, env.full_obs) if device is not None else None
        intervened = override is not None
        next_obs, reward, terminated, truncated, info = env.step(override if intervened else action)
        # 2. store: interventions go to both buffers
        transition = single_transition(obs, info["action"], reward, next_obs, terminated, intervened)
        online.add(transition)
        if intervened:
            demo.add(transition)
        recent_intervened.append(intervened)
        obs = next_obs
        if terminated or truncated:
            recent_success.append(bool(info["success"]))
            episode += 1
            obs = env.reset(seed=cfg.seed * 100_000 + episode)
            if device is not None:
                device.reset()
        # 3. learn
        if len(online) >= cfg.learner.warmup_steps:
            if not agent.normalization_fitted:
                agent.fit_normalization(np.concatenate([online.data["obs.state"][: len(online)],
                                                        demo.data["obs.state"][: len(demo)]]))
            agent.update(lambda: sampler.sample(cfg.learner.batch_size, rng))
        # 4. evaluate
        if step % eval_every == 0 or step == steps:
            rate = evaluate(agent, eval_env, eval_episodes, cfg.seed)
            history.env_steps.append(step)
            history.wall_seconds.append(time.perf_counter() - start)
            history.eval_success.append(rate)
            history.train_success.append(float(np.mean(recent_success)) if recent_success else 0.0)
            history.intervention_rate.append(float(np.mean(recent_intervened)))
            log(f"step {step}: eval success {rate:.2f}, train success {history.train_success[-1]:.2f}, "
                f"interventions {history.intervention_rate[-1]:.2f}, {history.wall_seconds[-1]:.0f} s")
    env.close()
    eval_env.close()
    return agent, history
