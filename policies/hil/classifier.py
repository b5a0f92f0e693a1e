"""Binary success classifier on camera frames: the sparse reward of a real arm.

Trained on operator-labelled frames (the ``success`` labels of recorded episodes) with
balanced batches (half positives, half negatives) and DrQ shifts; the probability,
thresholded, gives the reward and ends the episode. Precision and recall are measured on
frames of held-out *episodes* (frames of one episode are near duplicates).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sim2real.errors import Sim2RealError
from sim2real.policies.common import atomic
from sim2real.policies.hil.demos import episode_files, read_episode
from sim2real.policies.hil.networks import SmallCNN, random_shift
from sim2real.policies.hil.sac import tensors_from_bytes, tensors_to_bytes


class RewardClassifier(nn.Module):
    def __init__(self, cameras: tuple[str, ...], image_size: int, latent_dim: int = 64) -> None:
        super().__init__()
        self.cameras, self.image_size = cameras, image_size
        self.encoders = nn.ModuleDict({cam: SmallCNN(image_size, latent_dim) for cam in cameras})
        self.head = nn.Sequential(nn.Linear(latent_dim * len(cameras), 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, frames: dict[str, torch.Tensor], pad: int = 0) -> torch.Tensor:
        """Success logits ``[B]`` for uint8 frames ``[B, 3, H, W]`` per camera."""
        parts = [self.encoders[c](random_shift(frames[c].float() / 255.0, pad)) for c in self.cameras]
        return self.head(torch.cat(parts, -1)).squeeze(-1)


@dataclass
class LabelledFrames:
    frames: dict[str, np.ndarray]
    labels: np.ndarray
    episode: np.ndarray
    """Index of the episode each frame comes from (for the held-out split)."""


def load_labelled_frames(folder: str | Path, cameras: tuple[str, ...] | None = None) -> LabelledFrames:
    """Every frame after a step, labelled with that step's ``success``, from a demo folder."""
    frames: dict[str, list[np.ndarray]] = {}
    labels, episodes = [], []
    for i, path in enumerate(episode_files(folder)):
        obs, steps, _ = read_episode(path)
        cams = cameras or tuple(k for k in obs if k != "state")
        if not cams or any(c not in obs for c in cams):
            raise Sim2RealError(f"{path}: no camera frames {list(cams)} (record demos with --obs-mode pixels)")
        for c in cams:
            frames.setdefault(c, []).append(obs[c][1:])
        labels.append(steps["success"].astype(bool))
        episodes.append(np.full(len(steps["success"]), i))
    if not labels:
        raise Sim2RealError(f"no episodes in {folder}")
    return LabelledFrames({c: np.concatenate(v) for c, v in frames.items()}, np.concatenate(labels),
                          np.concatenate(episodes))


def precision_recall(predicted: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    tp = int(np.sum(predicted & labels))
    fp = int(np.sum(predicted & ~labels))
    fn = int(np.sum(~predicted & labels))
    return {"precision": tp / max(tp + fp, 1), "recall": tp / max(tp + fn, 1),
            "accuracy": float(np.mean(predicted == labels)), "positives": int(labels.sum()), "frames": len(labels)}


def train_classifier(data: LabelledFrames, steps: int = 150, batch_size: int = 64, holdout: float = 0.2,
                     threshold: float = 0.85, lr: float = 3e-4, seed: int = 0) -> tuple[RewardClassifier, dict]:
    """Train on all but a ``holdout`` share of episodes; report precision/recall on the rest."""
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    episode_ids = np.unique(data.episode)
    n_held = max(1, int(round(holdout * len(episode_ids)))) if len(episode_ids) > 1 else 0
    held = rng.choice(episode_ids, n_held, replace=False) if n_held else np.array([], int)
    test = np.isin(data.episode, held)
    train_idx = np.flatnonzero(~test)
    pos, neg = train_idx[data.labels[train_idx]], train_idx[~data.labels[train_idx]]
    if len(pos) == 0 or len(neg) == 0:
        raise Sim2RealError(f"training frames need both labels: {len(pos)} positive, {len(neg)} negative")
    cameras = tuple(data.frames)
    model = RewardClassifier(cameras, data.frames[cameras[0]].shape[-1])
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    half = batch_size // 2
    for _ in range(steps):
        idx = np.concatenate([rng.choice(pos, half), rng.choice(neg, batch_size - half)])
        target = torch.as_tensor(data.labels[idx], dtype=torch.float32)
        logits = model({c: torch.as_tensor(data.frames[c][idx]) for c in cameras}, pad=4)
        loss = F.binary_cross_entropy_with_logits(logits, target)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    report = {"train_frames": len(train_idx), "train_positives": len(pos), "final_loss": float(loss.detach()),
              "threshold": threshold, "held_out_episodes": int(n_held)}
    test_idx = np.flatnonzero(test)
    if len(test_idx):
        probs = predict(model, {c: data.frames[c][test_idx] for c in cameras})
        report["held_out"] = precision_recall(probs > threshold, data.labels[test_idx])
    return model, report


@torch.no_grad()
def predict(model: RewardClassifier, frames: dict[str, np.ndarray], batch: int = 256) -> np.ndarray:
    model.eval()
    n = len(next(iter(frames.values())))
    out = [torch.sigmoid(model({c: torch.as_tensor(v[i:i + batch]) for c, v in frames.items()})).numpy()
           for i in range(0, n, batch)]
    model.train()
    return np.concatenate(out) if out else np.zeros(0)


def save_classifier(model: RewardClassifier, path: str | Path, threshold: float) -> None:
    state = {"weights": model.state_dict(), "cameras": list(model.cameras), "image_size": model.image_size,
             "threshold": threshold}
    atomic.write_bytes(path, tensors_to_bytes(state))


class SuccessDetector:
    """``obs -> bool``: the classifier's probability above the threshold (the env's ``success_fn``)."""

    def __init__(self, path: str | Path) -> None:
        try:
            state = tensors_from_bytes(Path(path).read_bytes())
            self.model = RewardClassifier(tuple(state["cameras"]), int(state["image_size"]))
            self.model.load_state_dict(state["weights"])
        except (OSError, KeyError, RuntimeError) as exc:
            raise Sim2RealError(f"cannot load the reward classifier {path}: {exc}") from exc
        self.threshold = float(state["threshold"])
        self.model.eval()
        self.last_probability: float | None = None
        """The success probability of the latest call (the correction console shows it)."""

    def __call__(self, obs: dict[str, np.ndarray]) -> bool:
        missing = [c for c in self.model.cameras if c not in obs]
        if missing:
            raise Sim2RealError(f"the reward classifier needs cameras {missing}")
        frames = {c: obs[c][None] for c in self.model.cameras}
        self.last_probability = float(predict(self.model, frames)[0])
        return self.last_probability > self.threshold
