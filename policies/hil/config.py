"""Configuration of HIL-SERL runs: environment, learner and actor (defaults from the
paper's code, see ../shared/RESEARCH.md and docs/hil_serl.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from sim2real.errors import ConfigError


@dataclass
class EnvConfig:
    task: str = "ArmPegInsert"
    """Registered task name (an arm task in a Cartesian action mode)."""
    obs_mode: str = "pixels"
    """``pixels``: camera images + proprioception (the paper's setting); ``state``: the
    full simulator observation vector (privileged; a cheap variant for CPU benchmarks)."""
    cameras: tuple[str, ...] = ("wrist",)
    """Cameras rendered in ``pixels`` mode."""
    image_size: int = 64
    """Square image side (pixels)."""
    sparse_reward: bool = True
    """Reward 1 on success and 0 otherwise (what a success classifier gives a real arm)."""
    end_on_success: bool = True
    """End the episode at the first success (False: the operator can hold the success
    state, e.g. to record a success classifier's positive frames)."""
    max_episode_steps: int = 160
    """Steps before truncation (the task's own limit applies too)."""
    discrete_gripper: bool = False
    """Read the last action element as close (< -0.5) / stay (in between) / open (> 0.5):
    "stay" repeats the previous gripper command. Use with ``learner.gripper_critic``."""
    max_step_m: float = 0.02
    """Safety: largest end-effector translation one action may ask for (m)."""
    workspace_margin: float = 0.0
    """Safety: shrink the task's workspace box by this much (m) for the policy's actions."""


@dataclass
class LearnerConfig:
    batch_size: int = 256
    """Transitions per gradient step, drawn from both buffers."""
    demo_fraction: float = 0.5
    """Share of each batch drawn from the demo buffer (RLPD: 0.5); all online while it is empty."""
    discount: float = 0.97
    """Discount factor."""
    init_temperature: float = 1e-2
    """Initial SAC entropy temperature (auto-tuned afterwards)."""
    target_entropy_scale: float = 0.5
    """Target entropy is ``-scale * action_dim``."""
    lr: float = 3e-4
    """Adam learning rate of actor, critics and temperature."""
    tau: float = 0.005
    """Soft target-network update rate."""
    num_critics: int = 2
    """Critics in the ensemble (min over a random pair gives the target)."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden sizes of actor and critic MLPs (critics use LayerNorm)."""
    critic_actor_ratio: int = 2
    """Critic updates per actor/temperature update."""
    backup_entropy: bool = False
    """Subtract the entropy term in the critic's target (hil-serl leaves it out)."""
    latent_dim: int = 64
    """Encoder output per camera."""
    drq_pad: int = 4
    """DrQ random-shift padding (pixels); 0 disables the augmentation."""
    backbone_weights: str | None = None
    """Local file with torchvision ResNet-18 weights: a frozen pretrained encoder per camera
    instead of the small CNN (nothing is downloaded)."""
    gripper_critic: bool = False
    """Discrete gripper critic (close/stay/open) for tasks with a gripper action."""
    grasp_penalty: float = 0.02
    """Reward penalty per gripper open/close with the gripper critic."""
    buffer_capacity: int = 200_000
    """Transitions kept per buffer."""
    warmup_steps: int = 500
    """Online transitions needed before training starts."""
    publish_seconds: float = 2.0
    """Learner: seconds between weight broadcasts."""
    checkpoint_seconds: float = 30.0
    """Learner: seconds between checkpoints."""


@dataclass
class ActorConfig:
    random_steps: int = 0
    """Uniform-random actions for the first steps (exploration before the first weights)."""
    chunk_size: int = 32
    """Transitions per message to the learner (episodes' ends flush early)."""
    resend_seconds: float = 2.0
    """Unacknowledged messages are sent again after this long."""
    max_outbox: int = 2000
    """Messages kept while the learner is away (the oldest are dropped beyond this, logged)."""


@dataclass
class TransportConfig:
    secret_env: str = "SIM2REAL_HIL_SECRET"
    """Environment variable holding the actor/learner shared secret (HMAC-SHA256 on every
    frame). Required, on both sides, whenever an address is not loopback."""
    secret_file: str | None = None
    """File holding the shared secret instead of the environment variable."""
    max_message_mb: float = 64.0
    """Largest inbound frame (MiB); a larger one drops the sender's connection."""
    max_chunk_mb: float = 256.0
    """Largest uncompressed transitions payload (MiB), checked before decompressing."""


@dataclass
class HilConfig:
    env: EnvConfig = field(default_factory=EnvConfig)
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    actor: ActorConfig = field(default_factory=ActorConfig)
    transport: TransportConfig = field(default_factory=TransportConfig)
    seed: int = 0
    """Seed of networks, sampling and environment resets."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HilConfig:
        sections = {"env": EnvConfig, "learner": LearnerConfig, "actor": ActorConfig,
                    "transport": TransportConfig}
        unknown = set(data) - set(sections) - {"seed"}
        if unknown:
            raise ConfigError(sorted(unknown)[0], "unknown section of the HIL-SERL config")
        parts = {}
        for name, section in sections.items():
            values = dict(data.get(name, {}))
            known = {f.name for f in fields(section)}
            for key in values:
                if key not in known:
                    raise ConfigError(f"{name}.{key}", "unknown field")
            for key in ("cameras", "hidden"):
                if key in values:
                    values[key] = tuple(values[key])
            parts[name] = section(**values)
        cfg = cls(**parts, seed=int(data.get("seed", 0)))
        cfg.validate()
        return cfg

    def validate(self) -> None:
        e, lr = self.env, self.learner
        if e.obs_mode not in ("pixels", "state"):
            raise ConfigError("env.obs_mode", f"must be 'pixels' or 'state', got {e.obs_mode!r}")
        if e.obs_mode == "pixels" and not e.cameras:
            raise ConfigError("env.cameras", "pixels mode needs at least one camera")
        if not 16 <= e.image_size <= 256:
            raise ConfigError("env.image_size", f"must be in [16, 256], got {e.image_size}")
        if not 0.0 <= lr.demo_fraction < 1.0:
            raise ConfigError("learner.demo_fraction", f"must be in [0, 1), got {lr.demo_fraction}")
        if not 0.0 < lr.discount < 1.0:
            raise ConfigError("learner.discount", f"must be in (0, 1), got {lr.discount}")
        if lr.num_critics < 2:
            raise ConfigError("learner.num_critics", "needs at least 2 critics")
        if lr.critic_actor_ratio < 1 or lr.batch_size < 2:
            raise ConfigError("learner.critic_actor_ratio", "ratio >= 1 and batch_size >= 2 required")
        if e.max_step_m <= 0:
            raise ConfigError("env.max_step_m", "must be positive")
        t = self.transport
        if not 0 < t.max_message_mb <= 4096 or not 0 < t.max_chunk_mb <= 16384:
            raise ConfigError("transport.max_message_mb", "message and chunk caps must be positive (MiB)")
