"""The HIL-SERL learner: RLPD-style SAC over a shared pixel/state encoder.

One :meth:`HilAgent.update` is ``critic_actor_ratio`` critic steps on fresh mixed
batches, then one actor and temperature step, then a soft target update. With a gripper
critic the continuous actor drives every action dimension but the last, and the gripper
(close / stay / open) is the critic's argmax; each open/close costs ``grasp_penalty``.
"""

from __future__ import annotations

import copy
import io
import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.buffers import Batch
from sim2real.policies.hil.config import LearnerConfig
from sim2real.policies.hil.networks import (
    EnsembleCritic,
    GripperCritic,
    ObservationEncoder,
    TanhGaussianActor,
    discrete_to_gripper,
    gripper_to_discrete,
)


def obs_to_torch(obs: dict[str, np.ndarray], prefix: str = "") -> dict[str, torch.Tensor]:
    """``{key: tensor}`` from a batch's ``prefix + key`` fields (or a plain obs dict)."""
    out = {}
    for name, arr in obs.items():
        if name.startswith(prefix):
            out[name[len(prefix):]] = torch.as_tensor(np.asarray(arr))
    return out


class HilAgent:
    """Actor, critics, encoder and optimisers.

    Args:
        obs_shapes: ``{"state": (S,), camera: (3, H, W), ...}``.
        action_dim: Size of the environment's action (gripper last when ``gripper_critic``).
        config: Learner settings.
        seed: Seed of initialisation and sampling.
    """

    def __init__(self, obs_shapes: dict[str, tuple[int, ...]], action_dim: int, config: LearnerConfig,
                 seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.config = config
        self.obs_shapes = dict(obs_shapes)
        self.action_dim = action_dim
        self.continuous_dim = action_dim - 1 if config.gripper_critic else action_dim
        if self.continuous_dim < 1:
            raise Sim2RealError("the gripper critic needs at least one continuous action besides the gripper")
        cameras = tuple(k for k in obs_shapes if k != "state")
        image_size = obs_shapes[cameras[0]][-1] if cameras else 0
        self.encoder = ObservationEncoder(obs_shapes["state"][0], cameras, image_size, config.latent_dim,
                                          config.backbone_weights)
        feat = self.encoder.out_dim
        self.actor = TanhGaussianActor(feat, self.continuous_dim, config.hidden)
        self.critic = EnsembleCritic(feat, self.continuous_dim, config.hidden, config.num_critics)
        self.gripper = GripperCritic(feat, config.hidden) if config.gripper_critic else None
        # Target networks include the encoder (as DrQ's): the bootstrap sees a slowly moving embedding.
        self.target_encoder = copy.deepcopy(self.encoder).requires_grad_(False)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.target_gripper = copy.deepcopy(self.gripper).requires_grad_(False) if self.gripper else None
        self.log_alpha = torch.tensor(math.log(config.init_temperature), requires_grad=True)
        self.target_entropy = -config.target_entropy_scale * self.continuous_dim
        critic_params = [p for p in self.encoder.parameters() if p.requires_grad] + list(self.critic.parameters())
        if self.gripper is not None:
            critic_params += list(self.gripper.parameters())
        self.critic_opt = torch.optim.Adam(critic_params, lr=config.lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=config.lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=config.lr)
        self.updates = 0

    # -- acting ------------------------------------------------------------------
    @torch.no_grad()
    def act(self, obs: dict[str, np.ndarray], deterministic: bool = False) -> np.ndarray:
        """One action in [-1, 1] for one observation (no batch dimension)."""
        batch = {k: torch.as_tensor(np.asarray(v))[None] for k, v in obs.items()}
        features = self.encoder(batch)
        action, _ = self.actor(features, deterministic)
        if self.gripper is not None:
            index = self.gripper(features).mean(0).argmax(-1)
            action = torch.cat([action, discrete_to_gripper(index)[:, None]], dim=-1)
        return action[0].numpy().astype(np.float32)

    # -- learning ----------------------------------------------------------------
    @property
    def normalization_fitted(self) -> bool:
        return bool(self.encoder.state_fitted)

    def fit_normalization(self, states: np.ndarray) -> None:
        """Fix the state standardisation from the data at hand (call once, before training)."""
        tensor = torch.as_tensor(np.asarray(states, dtype=np.float32))
        for encoder in (self.encoder, self.target_encoder):
            encoder.fit_state_normalization(tensor)

    def update(self, sample_batch: Any) -> dict[str, float]:
        """One learner step; ``sample_batch()`` returns a fresh mixed batch each call."""
        cfg = self.config
        for _ in range(cfg.critic_actor_ratio):
            batch = sample_batch()
            obs, next_obs = obs_to_torch(batch, "obs."), obs_to_torch(batch, "next_obs.")
            features = self.encoder(obs, cfg.drq_pad)
            critic_loss, info = self._critic_loss(batch, features, next_obs)
            self.critic_opt.zero_grad(set_to_none=True)
            critic_loss.backward()
            self.critic_opt.step()
            self._soft_update()
        features = features.detach()  # the actor never trains the encoder (DrQ)
        action, log_prob = self.actor(features)
        q = self.critic(features, action).mean(0)
        alpha = self.log_alpha.exp().detach()
        actor_loss = (alpha * log_prob - q).mean()
        self.actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_opt.step()
        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_opt.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.alpha_opt.step()
        self.updates += 1
        info.update(actor_loss=float(actor_loss.detach()), temperature=float(alpha),
                    entropy=float(-log_prob.detach().mean()))
        return info

    def _critic_loss(self, batch: Batch, features: torch.Tensor, next_obs: dict[str, torch.Tensor]):
        cfg = self.config
        reward = torch.as_tensor(batch["reward"])
        not_done = 1.0 - torch.as_tensor(batch["terminated"]).float()
        action = torch.as_tensor(batch["action"])
        with torch.no_grad():
            next_features = self.target_encoder(next_obs, cfg.drq_pad)
            next_action, next_log_prob = self.actor(next_features)
            next_q_all = self.target_critic(next_features, next_action)
            # RLPD: the minimum over a random pair of the ensemble.
            pair = torch.randperm(next_q_all.shape[0])[:2]
            next_q = next_q_all[pair].min(0).values
            if cfg.backup_entropy:
                next_q = next_q - self.log_alpha.exp() * next_log_prob
            target = reward + cfg.discount * not_done * next_q
        q = self.critic(features, action[:, : self.continuous_dim])
        loss = F.mse_loss(q, target.expand_as(q), reduction="none").mean(1).sum()
        info = {"critic_loss": float(loss.detach()), "q_mean": float(q.detach().mean())}
        if self.gripper is not None:
            loss = loss + self._gripper_loss(batch, features, next_obs, reward, not_done, action[:, -1])
        return loss, info

    def _gripper_loss(self, batch, features, next_obs, reward, not_done, gripper_action):
        # Called only with a gripper critic; __init__ makes it and its target together.
        assert self.gripper is not None and self.target_gripper is not None
        cfg = self.config
        index = gripper_to_discrete(gripper_action)
        penalty = cfg.grasp_penalty * (index != 1).float()
        with torch.no_grad():
            next_features = self.target_encoder(next_obs, cfg.drq_pad)
            best = self.gripper(next_features).mean(0).argmax(-1, keepdim=True)
            next_q = self.target_gripper(next_features).min(0).values.gather(1, best).squeeze(1)
            target = reward - penalty + cfg.discount * not_done * next_q
        q = self.gripper(features).gather(2, index.view(1, -1, 1).expand(2, -1, 1)).squeeze(-1)
        return F.mse_loss(q, target.expand_as(q))

    @torch.no_grad()
    def _soft_update(self) -> None:
        tau = self.config.tau
        pairs = [(self.encoder, self.target_encoder), (self.critic, self.target_critic)]
        if self.gripper is not None:
            pairs.append((self.gripper, self.target_gripper))
        for online, target in pairs:
            for p, tp in zip(online.parameters(), target.parameters(), strict=True):
                tp.lerp_(p, tau)

    # -- weights on the wire and on disk -----------------------------------------
    def policy_state(self) -> dict[str, torch.Tensor]:
        """What the actor needs: encoder, actor (and gripper critic) weights."""
        state = {f"encoder.{k}": v for k, v in self.encoder.state_dict().items()}
        state.update({f"actor.{k}": v for k, v in self.actor.state_dict().items()})
        if self.gripper is not None:
            state.update({f"gripper.{k}": v for k, v in self.gripper.state_dict().items()})
        return state

    def load_policy_state(self, state: dict[str, torch.Tensor]) -> None:
        for name, module in (("encoder", self.encoder), ("actor", self.actor), ("gripper", self.gripper)):
            if module is None:
                continue
            part = {k[len(name) + 1:]: v for k, v in state.items() if k.startswith(name + ".")}
            module.load_state_dict(part)

    def full_state(self) -> dict[str, Any]:
        modules = {"encoder": self.encoder, "actor": self.actor, "critic": self.critic,
                   "target_encoder": self.target_encoder, "target_critic": self.target_critic,
                   "critic_opt": self.critic_opt, "actor_opt": self.actor_opt, "alpha_opt": self.alpha_opt}
        if self.gripper is not None:
            modules.update(gripper=self.gripper, target_gripper=self.target_gripper)
        state = {k: m.state_dict() for k, m in modules.items()}
        state["log_alpha"] = self.log_alpha.detach().clone()
        state["updates"] = self.updates
        return state

    def load_full_state(self, state: dict[str, Any]) -> None:
        for name in ("encoder", "actor", "critic", "target_encoder", "target_critic", "critic_opt", "actor_opt",
                     "alpha_opt", "gripper", "target_gripper"):
            module = getattr(self, name)
            if module is not None and name in state:
                module.load_state_dict(state[name])
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        self.updates = int(state["updates"])


def tensors_to_bytes(state: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def tensors_from_bytes(data: bytes) -> dict[str, Any]:
    """Loads with ``weights_only=True``: bytes from the network never run code."""
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt input
        raise Sim2RealError(f"malformed weights payload: {exc}") from exc
