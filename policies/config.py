"""Training configuration: typed dataclasses with a docstring under every field
(CleanRL style), resolved from layered YAML files.

Resolution (``config_loading.resolve_config``), later layers win:
``policies/configs/default.yaml`` -> ``policies/configs/<robot>_<task>.yaml``
(if present) -> ``--config FILE`` -> command-line flags. The resolved config is written into the run folder as
``config.yaml`` (plus a ``provenance`` block that loading ignores), so
``sim2real train --config runs/NAME/config.yaml`` repeats a run exactly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sim2real.policies.rewards.config import RewardConfig
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Fraction, NonNegative, NonNegativeInt, Positive, PositiveInt, from_dict

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
Algo = Literal["ppo", "sac", "td3", "ppo_lag", "sac_lag", "distill"]
DrPreset = Literal["train", "heldout", "none"]
Physics = Literal["mujoco", "warp"]


@dataclass
class NetConfig:
    """Network shapes shared by the algorithms."""

    pi: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layer sizes of the actor."""
    vf: list[int] = field(default_factory=lambda: [256, 256])
    """Hidden layer sizes of the critic (PPO's value function, SAC/TD3's Q functions)."""
    activation: Literal["elu", "tanh", "relu"] = "elu"
    """Hidden activation: ``elu`` (legged_gym, rsl_rl), ``tanh`` or ``relu``."""
    critic_privileged: bool = False
    """``ppo`` only: asymmetric actor-critic. The critic also reads the simulator's
    privileged state (the task's ``privileged_layout``: e.g. true base velocity, foot
    contacts, friction, payload), the actor only the observation; exports and
    deployment are unchanged (:mod:`sim2real.policies.ppo.asymmetric`)."""
    actor_privileged: bool = False
    """``ppo`` only: a privileged teacher. Actor and critic both read the observation
    and the privileged state; the export takes both (layout blocks ``privileged.*``),
    so it runs in simulation (an oracle, a teacher to distill with ``algo: distill``)
    and is refused by a robot's deployment, which cannot measure that state."""


@dataclass
class NormalizeConfig:
    """Running observation/reward normalization (SB3 ``VecNormalize``); its
    statistics are saved with every checkpoint and baked into exported graphs."""

    obs: bool = True
    """Normalize observations to zero mean, unit variance."""
    reward: bool = False
    """Scale rewards by the running std of the discounted return (off in legged_gym)."""
    clip_obs: Positive = 10.0
    """Normalized observations are clipped to ``[-clip_obs, clip_obs]``."""
    clip_reward: Positive = 10.0
    """Normalized rewards are clipped to ``[-clip_reward, clip_reward]``."""
    epsilon: Positive = 1e-8
    """Added to the variance before the square root."""


@dataclass
class EvalConfig:
    """Periodic evaluation on separate environments during training."""

    every_steps: NonNegativeInt = 50_000
    """Evaluate every this many environment steps (0 disables; the last step is always evaluated)."""
    episodes: PositiveInt = 20
    """Episodes per evaluation."""
    n_envs: PositiveInt = 4
    """Evaluation environments stepped as one batch."""
    dr: DrPreset = "train"
    """Randomization preset of the evaluation environments: ``train``, ``heldout`` or ``none``."""
    seed: int = 10_000
    """Seed of the evaluation environments, reset at every evaluation so that every
    evaluation sees the same episodes and curves compare like with like."""
    deterministic: bool = True
    """Evaluate the deterministic policy (the mean action)."""


@dataclass
class CheckpointConfig:
    """Crash safety: ``kill -9`` loses at most ``every_steps`` of training."""

    every_steps: PositiveInt = 50_000
    """Write the ``last`` checkpoint every this many environment steps."""
    keep: PositiveInt = 2
    """Step checkpoints kept on disk (the newest is ``last``; older ones are deleted)."""


@dataclass
class DistillConfig:
    """Teacher-student distillation (``algo: distill``, :mod:`sim2real.policies.distill`):
    DAgger on the student's own states, labels from a privileged teacher. The rollout
    settings (``n_envs``, ``ppo.n_steps``, ``ppo.log_std_init`` as the student's
    exploration noise) come from the PPO block."""

    teacher: str = ""
    """The teacher's export folder or ``.onnx`` (a ``net.actor_privileged`` run, exported)."""
    history_latent: PositiveInt = 32
    """Size of the history encoder's output (the student's estimate of what the teacher knows)."""
    learning_rate: Positive = 1e-3
    """Adam step size of the imitation loss."""
    epochs: PositiveInt = 5
    """Passes over the aggregated dataset after each rollout."""
    batch_size: PositiveInt = 2048
    """Minibatch size of the imitation loss."""
    dataset_rollouts: PositiveInt = 20
    """Rollouts kept in the aggregated DAgger dataset (the oldest are dropped)."""
    mirror: bool = False
    """Also learn each labelled state reflected left-right, with the reflected label (the
    task's :meth:`~sim2real.sim.core.task.Task.mirror`): the student becomes equivariant,
    and a straight command stays straight (no yaw drift from an unbalanced dataset)."""


@dataclass
class PPOConfig:
    """PPO (SB3) with rsl_rl's KL-adaptive learning rate."""

    learning_rate: Positive = 3e-4
    """Initial Adam step size."""
    desired_kl: Positive | None = 0.01
    """Target KL of an update: the step size is divided by 1.5 when the KL exceeds
    twice this and multiplied by 1.5 below half of it (rsl_rl). ``null``: constant."""
    lr_min: Positive = 1e-5
    """Lower bound of the adaptive learning rate."""
    lr_max: Positive = 1e-2
    """Upper bound of the adaptive learning rate."""
    n_steps: PositiveInt = 64
    """Rollout length per environment; one update sees ``n_steps * n_envs`` steps."""
    batch_size: PositiveInt = 512
    """Minibatch size (``n_steps * n_envs / batch_size`` minibatches per epoch)."""
    n_epochs: PositiveInt = 5
    """Passes over each rollout."""
    gamma: Fraction = 0.99
    """Discount factor."""
    gae_lambda: Fraction = 0.95
    """GAE lambda."""
    clip_range: Positive = 0.2
    """Policy ratio clipping."""
    ent_coef: NonNegative = 0.01
    """Entropy bonus coefficient."""
    vf_coef: NonNegative = 1.0
    """Value loss coefficient (rsl_rl uses 1.0)."""
    max_grad_norm: Positive = 1.0
    """Gradient norm clipping."""
    target_kl: Positive | None = None
    """Stop an update's epochs early above ``1.5 * target_kl`` (SB3); ``null``: never."""
    log_std_init: float = 0.0
    """Initial log standard deviation of the Gaussian policy."""


@dataclass
class OffPolicyConfig:
    """What SAC and TD3 (SB3) share: replay, minibatches, target networks, update cadence."""

    learning_rate: Positive = 3e-4
    """Adam step size of actor and critics (and SAC's temperature)."""
    buffer_size: PositiveInt = 200_000
    """Replay buffer capacity in transitions."""
    learning_starts: NonNegativeInt = 1_000
    """Environment steps of random actions before the first update."""
    batch_size: PositiveInt = 256
    """Minibatch size."""
    tau: Fraction = 0.005
    """Soft target update coefficient."""
    gamma: Fraction = 0.99
    """Discount factor."""
    train_freq: PositiveInt = 1
    """Update every this many vectorized steps."""
    gradient_steps: int = 1
    """Gradient steps per update (-1: as many as environment steps collected)."""


@dataclass
class SACConfig(OffPolicyConfig):
    """SAC (SB3); defaults follow HIL-SERL's learner where it applies."""

    ent_coef: str = "auto_0.01"
    """Entropy temperature: a number (fixed), ``auto`` or ``auto_<initial>`` (learned)."""
    target_entropy: str = "auto"
    """Target entropy of the learned temperature: ``auto`` (``-action_size``) or a number."""


@dataclass
class TD3Config(OffPolicyConfig):
    """TD3 (SB3)."""

    learning_rate: Positive = 1e-3
    """Adam step size of actor and critics."""
    policy_delay: PositiveInt = 2
    """Critic updates per actor update."""
    target_policy_noise: NonNegative = 0.2
    """Std of the target policy smoothing noise."""
    target_noise_clip: NonNegative = 0.5
    """Clip of the target policy smoothing noise."""
    action_noise_std: NonNegative = 0.1
    """Std of the Gaussian exploration noise added to actions in [-1, 1]."""


@dataclass
class LagrangianConfig:
    """Constrained RL (``algo: ppo_lag | sac_lag``): keep the expected episode cost under a limit."""

    cost_metric: str = "energy_violation"
    """Task metric used as the per-step cost (arm ``ee_impedance``: energy drawn beyond the tank, J)."""
    cost_limit: NonNegative = 0.0
    """Allowed expected cost per episode (``--cost-limit``)."""
    lambda_init: NonNegative = 0.0
    """Initial Lagrange multiplier."""
    lambda_lr: NonNegative = 0.05
    """Integral gain ``Ki`` of the multiplier's PID update (its learning rate)."""
    lambda_kp: NonNegative = 0.0
    """Proportional gain (PID-Lagrangian damping; 0: plain Lagrangian)."""
    lambda_kd: NonNegative = 0.0
    """Derivative gain on rising cost (0: off)."""
    lambda_max: Positive = 100.0
    """Upper bound of the multiplier."""
    cost_gamma: Fraction = 0.99
    """Discount of the cost return."""
    cost_gae_lambda: Fraction = 0.95
    """GAE parameter of the cost advantage (``ppo_lag``)."""
    update_every_steps: PositiveInt = 2048
    """Environment steps between multiplier updates (``sac_lag``; ``ppo_lag`` updates once per rollout)."""


@dataclass
class TrainConfig:
    """Everything that determines a training run."""

    task: str = ""
    """Registered task (``ArmReach``, ``arm/reach`` or ``sim2real/ArmReach-v0``); stored as the Gymnasium id."""
    algo: Algo = "ppo"
    """Algorithm: ``ppo``, ``sac``, ``td3``, ``ppo_lag`` or ``sac_lag`` (PPO-/SAC-Lagrangian)."""
    seed: int = 0
    """Seed of the environments, the network initialisation and the algorithm."""
    total_steps: PositiveInt = 1_000_000
    """Environment steps to train for (summed over the batch)."""
    n_envs: PositiveInt = 32
    """Training environments stepped as one batch."""
    action_mode: str | None = None
    """The task's action mode (``null``: the task's default)."""
    dr: DrPreset = "train"
    """Randomization preset of the training environments: ``train``, ``heldout`` or ``none``."""
    dr_overrides: dict[str, Any] = field(default_factory=dict)
    """Randomization fields that replace the ``dr`` preset's values, e.g.
    ``{wind_speed: [0.0, 2.25], push_interval_s: 1.75}`` (ranges as ``[low, high]``;
    the task's randomization class names the fields). They apply to the training
    environments, and to the evaluation environments when ``eval.dr`` names the same
    preset: a custom training distribution that config.yaml reproduces."""
    task_options: dict[str, Any] = field(default_factory=dict)
    """Keyword options passed to the task constructor."""
    nthread: PositiveInt | None = None
    """Physics worker threads of the batched env (``null``: all cores)."""
    physics_substeps: PositiveInt = 1
    """Physics steps per step of the task's own timestep, in training and its evaluations
    (2: half the step). For contact settings the task's step cannot integrate, such as
    the quadruped's ``impratio`` above about 5 (docs/transfer.md); each doubles the physics
    time per sample."""
    backend: Physics = "mujoco"
    """Physics of the training envs: ``mujoco`` (CPU MuJoCo on every core) or ``warp``
    (MuJoCo Warp, float32, all envs in one set of kernels on a CUDA GPU when there is
    one; see docs/warp_backend.md for what it does not support)."""
    torch_threads: PositiveInt = 1
    """PyTorch intra-op threads; small MLPs on CPU are fastest on one."""
    device: str = "cpu"
    """PyTorch device."""
    net: NetConfig = field(default_factory=NetConfig)
    """Network shapes."""
    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)
    """Observation and reward normalization."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Periodic evaluation."""
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    """Checkpointing."""
    ppo: PPOConfig = field(default_factory=PPOConfig)
    """PPO hyperparameters (used when ``algo: ppo``)."""
    sac: SACConfig = field(default_factory=SACConfig)
    """SAC hyperparameters (used when ``algo: sac``)."""
    td3: TD3Config = field(default_factory=TD3Config)
    """TD3 hyperparameters (used when ``algo: td3``)."""
    distill: DistillConfig = field(default_factory=DistillConfig)
    """Teacher and imitation settings (used when ``algo: distill``)."""
    lagrangian: LagrangianConfig = field(default_factory=LagrangianConfig)
    """Cost limit and multiplier (``algo: ppo_lag`` with the ``ppo`` block, ``sac_lag`` with ``sac``)."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """Training reward: the task's own (default) or a CLIP reward of rendered frames."""

    def validate(self) -> None:
        """Raise :class:`ConfigError` naming the first invalid field."""
        if not self.task:
            raise ConfigError("task", "no task given (pass TASK or set `task:` in a config file)")
        for flag in ("critic_privileged", "actor_privileged"):
            if getattr(self.net, flag) and self.algo != "ppo":
                raise ConfigError(f"net.{flag}", f"is supported with algo ppo only, not {self.algo!r}")
        self.reward.validate()
        if self.algo == "distill":
            if not self.distill.teacher:
                raise ConfigError("distill.teacher", "algo distill needs a teacher (an actor_privileged export)")
            if self.normalize.obs:
                raise ConfigError("normalize.obs", "must be false with algo distill: the student normalizes "
                                                   "inside its network, the teacher in its own graph")
        if self.algo in ("ppo", "ppo_lag", "distill") and self.ppo.batch_size > self.ppo.n_steps * self.n_envs:
            raise ConfigError(
                "ppo.batch_size",
                f"{self.ppo.batch_size} exceeds one rollout (n_steps * n_envs = {self.ppo.n_steps * self.n_envs})",
            )

    @property
    def privileged_obs(self) -> bool:
        """The training env appends the simulator's privileged state to each observation."""
        return self.net.critic_privileged or self.net.actor_privileged or self.algo == "distill"

    def algo_config(self) -> PPOConfig | SACConfig | TD3Config:
        """The hyperparameter block the algorithm reads (``ppo_lag`` and ``distill``: ``ppo``; ``sac_lag``: ``sac``)."""
        return getattr(self, {"ppo_lag": "ppo", "sac_lag": "sac", "distill": "ppo"}.get(self.algo, self.algo))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """Build from plain values; unknown keys and wrong types raise ConfigError."""
        cfg = from_dict(cls, values)
        assert isinstance(cfg, TrainConfig)
        return cfg

    def hash(self) -> str:
        """SHA-256 of the canonical JSON of every value: equal hashes, equal runs."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()
