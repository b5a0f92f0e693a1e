"""Refining the reward model on the states of the policy being trained (issue 24).

RL takes a learned reward where its training frames never went, and the reward is
wrong there (docs/vlm_rewards.md: gripper lined up along a camera ray, wrist tilted,
hovering above the target). Fine-tuning the model once on a finished run's states
(``finetune-clip --policy``) comes too late for that run. Here the training env keeps a
reservoir of the frames the policy visits, labelled by the simulator's captioner (in
simulation, the simulator's success and distance are what a person's labels would be),
and every ``every`` env steps fine-tunes the reward model on them, next to scripted
anchor frames so it does not forget the states it was good at.

Rewards already in an off-policy replay buffer are recomputed by the refined model after
each round (``relabel.py``, ``reward.refine.relabel``); the schedule and the time each
round and each relabelling take are recorded (``RefineRound``, ``relabels``). Captions the
reward model's folder declares held out of its fine-tuning (``held_out_captions`` in its
metadata) stay held out here: frames with them are never trained on, so a run from a
held-out sentence still never shows the model that sentence. The refined
weights and the schedule go into every checkpoint of the run (:meth:`state_files`), so
the run's reward model is kept with its policy and a resumed run continues with it; the
reservoir of frames is not saved (hundreds of MB) and refills after a resume.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from sim2real.errors import ConfigError
from sim2real.policies.rewards.captions import Captions
from sim2real.policies.rewards.clip_reward import ClipRewardModel
from sim2real.policies.rewards.dataset import FrameSet
from sim2real.policies.rewards.finetune import FinetuneConfig, train_clip


@dataclass
class RefineRound:
    """What one refinement round did and cost."""

    env_steps: int
    policy_frames: int
    anchor_frames: int
    optimizer_steps: int
    seconds: float
    final_loss: float | None


class OnlineRefiner:
    """Reservoir of the policy's labelled frames, and the refinement schedule.

    Args:
        reward_model: The model to refine in place (its prompts are re-embedded after each round).
        anchor: Scripted frames trained on next to the policy's (None: none).
        every: Env steps (summed over envs) between rounds.
        capacity: Policy frames kept (uniform reservoir over everything seen).
        cfg: Optimizer settings of one round (``steps`` optimizer steps).
        seed: Seed of the reservoir's sampling.
        held_out: Captions never trained on: frames labelled with them are dropped from
            the reservoir and the anchor.
    """

    def __init__(
        self,
        reward_model: ClipRewardModel,
        anchor: FrameSet | None,
        every: int,
        capacity: int,
        cfg: FinetuneConfig,
        seed: int = 0,
        held_out: frozenset[str] = frozenset(),
    ) -> None:
        if every < 1 or capacity < 2 or cfg.steps < 1:
            raise ConfigError("reward.refine", f"every, frames and steps must be positive, got {every}, {capacity}, "
                                               f"{cfg.steps}")
        self.reward_model, self.anchor, self.every, self.capacity, self.cfg = reward_model, anchor, every, capacity, cfg
        self.held_out = frozenset(held_out)
        if anchor is not None and self.held_out:
            anchor = anchor.subset(np.array([c not in self.held_out for c in anchor.captions]))
        self.anchor = anchor
        self.rng = np.random.default_rng(seed)
        self.frames: np.ndarray | None = None
        self.captions: list[str] = []
        self.success = np.zeros(capacity, dtype=bool)
        self.progress = np.zeros(capacity)
        self.seen = 0
        self.next_round = every
        self.rounds: list[RefineRound] = []
        self.relabels: list[dict[str, Any]] = []
        """One entry per replay-buffer relabelling (``relabel.RelabelRound`` and its env steps)."""

    def observe(self, frames: np.ndarray, labels: Captions) -> None:
        """Offer one step's frames ``[B, H, W, 3]`` with their labels to the reservoir."""
        if self.frames is None:
            self.frames = np.zeros((self.capacity, *frames.shape[1:]), dtype=np.uint8)
            self.captions = [""] * self.capacity
        for i in range(len(frames)):
            if labels.text[i] in self.held_out:
                continue
            slot = self.seen if self.seen < self.capacity else int(self.rng.integers(self.seen + 1))
            self.seen += 1
            if slot < self.capacity:
                self.frames[slot] = frames[i]
                self.captions[slot] = labels.text[i]
                self.success[slot] = bool(labels.success[i])
                self.progress[slot] = float(labels.progress[i])

    def policy_set(self) -> FrameSet:
        """The reservoir's frames (each its own episode: the ranking loss does not use episodes)."""
        if self.frames is None:
            raise ValueError("no frames observed yet")
        n = min(self.seen, self.capacity)
        return FrameSet(self.frames[:n], self.captions[:n], self.success[:n], self.progress[:n], np.arange(n),
                        np.zeros(n, int))

    def maybe_refine(self, env_steps: int) -> RefineRound | None:
        """Run a round when ``env_steps`` has reached the schedule; the round, else None."""
        if env_steps < self.next_round or self.seen < 2:
            return None
        self.next_round = (env_steps // self.every + 1) * self.every
        policy = self.policy_set()
        data = FrameSet.concat([policy, self.anchor]) if self.anchor is not None else policy
        t0 = time.perf_counter()
        model = self.reward_model
        cfg = replace(self.cfg, seed=self.cfg.seed + len(self.rounds))
        _, _, stats = train_clip(data, cfg, start=(model.model, model.tokenizer))
        model.model.eval()
        model.refresh()
        anchor = 0 if self.anchor is None else len(self.anchor)
        done = RefineRound(env_steps, len(policy), anchor, cfg.steps, round(time.perf_counter() - t0, 2),
                           stats["final_loss"])
        self.rounds.append(done)
        return done

    WEIGHTS = "reward_model.safetensors"
    SCHEDULE = "reward_refine.json"

    def state_files(self) -> dict[str, bytes]:
        """The refined model's weights (safetensors) and the schedule, as checkpoint files."""
        from safetensors.torch import save

        model = self.reward_model.model
        weights = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        schedule = {"schema": "sim2real.refine/1", "model": self.reward_model.name, "next_round": self.next_round,
                    "seen": self.seen, **self.describe()}
        return {self.WEIGHTS: save(weights), self.SCHEDULE: json.dumps(schedule, indent=2).encode()}

    def load_state_files(self, files: dict[str, bytes]) -> None:
        """Continue from :meth:`state_files`: the refined weights (prompts re-embedded) and the schedule."""
        from safetensors.torch import load

        schedule = json.loads(files[self.SCHEDULE])
        if schedule.get("schema") != "sim2real.refine/1" or schedule.get("every") != self.every:
            raise ConfigError("reward.refine", f"the checkpoint's refinement schedule {schedule.get('every')} "
                                               f"does not match this run's every={self.every}")
        model = self.reward_model.model
        model.load_state_dict(load(files[self.WEIGHTS]))
        model.eval()
        self.reward_model.refresh()
        self.next_round = int(schedule["next_round"])
        self.rounds = [RefineRound(**r) for r in schedule["rounds"]]
        self.relabels = list(schedule.get("relabels", []))

    def describe(self) -> dict[str, Any]:
        return {"every": self.every, "capacity": self.capacity, "held_out": sorted(self.held_out),
                "rounds": [asdict(r) for r in self.rounds], "relabels": self.relabels}
