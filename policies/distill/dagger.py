"""DAgger (Ross et al., 2011) from a privileged teacher: the student acts, the teacher
labels the states the student visits, the student regresses onto the labels.

Training the student on the teacher's own states would leave it lost as soon as it
drifts; DAgger collects on the student's states (with ``ppo.log_std_init`` of
exploration noise) and keeps the last ``distill.dataset_rollouts`` rollouts. It is
RMA's phase 2 (Kumar et al., 2021) with the student's whole action as the target.

The class is SB3's PPO with ``train()`` replaced, so a distillation run is an ordinary
run folder: rollouts, progress bar, TensorBoard, periodic evaluation, checkpoints,
``--resume`` (the dataset starts empty again) and ``sim2real export`` all work as for
PPO. The value function is not trained; nothing reads it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.utils import update_learning_rate
from stable_baselines3.common.vec_env import VecEnv
from torch.nn import functional as F

from sim2real.policies.common.envs import PRIVILEGED_PREFIX
from sim2real.policies.config import TrainConfig
from sim2real.policies.distill.encoder import HistoryEncoder, encoder_kwargs
from sim2real.policies.ppo.ppo import AdaptivePPO, ppo_kwargs
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.layout import SignedPermutation


class StudentPolicy(ActorCriticPolicy):
    """``MlpPolicy`` over the history encoder; exports take the first ``actor_obs_size``
    entries (the student's observation), never the privileged part the teacher reads."""

    def __init__(self, *args: Any, actor_obs_size: int, **kwargs: Any) -> None:
        self.actor_obs_size = int(actor_obs_size)
        super().__init__(*args, **kwargs)


class DAgger(AdaptivePPO):
    """PPO's rollouts, DAgger's update (see the module docstring).

    Args:
        teacher_path: The teacher's export (an ``actor_privileged`` policy).
        student_obs_size: Size of the student's observation; the privileged state follows it.
        present_size: Entries of the observation before its history block (the teacher's observation).
        distill: :class:`~sim2real.policies.config.DistillConfig` as a dict.
        mirror: The task's left-right mirror of (observation, action), to learn each
            state reflected as well (``distill.mirror``); None: as collected.
        *args, **kwargs: Passed to :class:`AdaptivePPO`.
    """

    def __init__(self, *args: Any, teacher_path: str = "", student_obs_size: int = 0, present_size: int = 0,
                 distill: dict[str, Any] | None = None,
                 mirror: tuple[SignedPermutation, SignedPermutation] | None = None, **kwargs: Any) -> None:
        self.teacher_path, self.student_obs_size, self.present_size = teacher_path, student_obs_size, present_size
        self.distill = dict(distill or {})
        self.mirror = mirror
        self.teacher: Any = None
        self.dataset: deque[tuple[np.ndarray, np.ndarray]] = deque(maxlen=int(self.distill.get("dataset_rollouts", 1)))
        super().__init__(*args, **kwargs)

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "teacher", "dataset"]  # an onnxruntime session; rebuilt data

    def teacher_actions(self, observations: np.ndarray) -> np.ndarray:
        """The teacher's action for each row of (student observation, privileged state)."""
        if self.teacher is None:
            from sim2real.policies.deploy import OnnxPolicy

            self.teacher = OnnxPolicy(self.teacher_path)
        inputs = np.concatenate([observations[:, : self.present_size], observations[:, self.student_obs_size :]], 1)
        return np.asarray(self.teacher(inputs.astype(np.float32)), dtype=np.float32)

    def train(self) -> None:
        buffer = self.rollout_buffer.observations
        assert isinstance(buffer, np.ndarray)  # a Box observation space
        rows = buffer.reshape(-1, buffer.shape[-1])
        labels = self.teacher_actions(rows)
        student = rows[:, : self.student_obs_size].astype(np.float32)
        if self.mirror is not None:  # each state also reflected, with the reflected label
            student = np.concatenate([student, self.mirror[0](student)])
            labels = np.concatenate([labels, self.mirror[1](labels)])
        encoder = self.policy.features_extractor
        assert isinstance(encoder, HistoryEncoder)
        encoder.normalizer.update(torch.as_tensor(student))
        self.dataset.append((student, labels))
        x_all = np.concatenate([x for x, _ in self.dataset])
        y_all = np.concatenate([y for _, y in self.dataset])
        self.policy.set_training_mode(True)
        update_learning_rate(self.policy.optimizer, float(self.distill["learning_rate"]))
        batch = int(self.distill["batch_size"])
        losses = []
        for _ in range(int(self.distill["epochs"])):
            order = np.random.permutation(len(x_all))
            for start in range(0, len(order), batch):
                idx = order[start : start + batch]
                loss = F.mse_loss(self.mean_action(torch.as_tensor(x_all[idx])), torch.as_tensor(y_all[idx]))
                self.policy.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                self.policy.optimizer.step()
                losses.append(float(loss.detach()))
        self._n_updates += int(self.distill["epochs"])
        with torch.no_grad():  # how far the acting student was from its labels, before this update's steps
            fresh = F.mse_loss(self.mean_action(torch.as_tensor(student)), torch.as_tensor(labels))
        self.logger.record("distill/loss", float(np.mean(losses)))
        self.logger.record("distill/loss_on_new_states", float(fresh))
        self.logger.record("distill/dataset_size", len(x_all))
        self.logger.record("train/n_updates", self._n_updates)

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        policy = self.policy
        features = policy.extract_features(obs, policy.pi_features_extractor)
        assert isinstance(features, torch.Tensor)  # one shared extractor, not a (pi, vf) pair
        return policy.action_net(policy.mlp_extractor.forward_actor(features))


def build_distill(config: TrainConfig, env: VecEnv, tensorboard_log: str | None = None) -> DAgger:
    """A fresh student for ``env``, checked against its teacher (same task, action mode,
    present observation and privileged state)."""
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.sim.core.vec_env import BatchedVecEnv

    base = env.unwrapped
    if not isinstance(base, BatchedVecEnv):
        raise ConfigError("algo", f"distill needs the simulator's batched env, not {type(base).__name__}")
    task = base.task
    layout = [(str(n), int(s)) for n, s in task.observation_layout()]
    steps = int(getattr(task, "history_steps", 0))
    if not steps or layout[-1][0] != "history":
        raise ConfigError("task_options.history_steps", "the student needs an observation history (e.g. 25 steps)")
    present = layout[:-1]
    teacher = OnnxPolicy(config.distill.teacher)
    want = present + [(PRIVILEGED_PREFIX + n, int(s)) for n, s in task.privileged_layout()]
    if not teacher.privileged_inputs or teacher.observation_layout != want:
        raise ConfigError("distill.teacher", f"{teacher.path} reads {teacher.observation_layout}; a teacher for this "
                                             f"student reads {want}")
    if teacher.task != config.task or teacher.action_mode != task.action_mode:
        raise ConfigError("distill.teacher", f"{teacher.path} acts on {teacher.task} ({teacher.action_mode}), "
                                             f"not {config.task} ({task.action_mode})")
    kwargs = ppo_kwargs(config, tensorboard_log)
    kwargs["policy"] = StudentPolicy
    obs_size, present_size = int(base.task_obs_size), sum(s for _, s in present)
    kwargs["policy_kwargs"].update(actor_obs_size=obs_size,
                                   **encoder_kwargs(obs_size, present_size, steps, config.distill.history_latent))
    return DAgger(env=env, teacher_path=str(teacher.path), student_obs_size=obs_size, present_size=present_size,
                  distill={k: getattr(config.distill, k) for k in ("learning_rate", "epochs", "batch_size",
                                                                   "dataset_rollouts")},
                  mirror=task.mirror() if config.distill.mirror else None, **kwargs)
