"""Configuration of HIL-SERL runs: environment, learner and actor (defaults from the
paper's code, see ../shared/RESEARCH.md and docs/hil_serl.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from sim2real.errors import ConfigError
from sim2real.sim.core.schema import Bounds, Fraction, NonNegative, NonNegativeInt, Positive, PositiveInt, from_dict

OpenUnit = Annotated[float, Bounds(gt=0.0, lt=1.0)]


@dataclass
class GraphArmConfig:
    """A real arm's environment (``sim2real hil actor --env ros``): the deployment graph
    it drives, and how it puts the arm back between episodes (docs/hil_serl.md)."""

    namespace: str = ""
    """ROS namespace of the robot's graph (its safety filter's ``raw_command`` and the
    state topics)."""
    camera_topics: tuple[str, ...] = ()
    """Image topic per camera of ``env.cameras``, in order (sensor_msgs/Image or, ending in
    ``/compressed``, CompressedImage); empty: ``<camera>/image_raw``."""
    state_timeout: Annotated[float, Bounds(gt=0.0, le=5.0)] = 0.15
    """Joint states or an end-effector pose older than this (s) end the run with an error
    (the safety filter's watchdog then holds the arm)."""
    image_timeout: Annotated[float, Bounds(gt=0.0, le=10.0)] = 0.5
    """A camera frame older than this (s) ends the run with an error."""
    start_timeout: Annotated[float, Bounds(gt=0.0, le=120.0)] = 15.0
    """Seconds to find the safety filter and receive every stream at start."""
    reset_position: tuple[float, ...] = ()
    """Tool position (m, the robot's base frame) each episode starts from; empty: where the
    tool was when the actor started."""
    reset_noise: Annotated[float, Bounds(ge=0.0, le=0.1)] = 0.01
    """Uniform offset (m, per axis) added to ``reset_position`` each episode."""
    reset_speed: Annotated[float, Bounds(gt=0.0, le=0.25)] = 0.08
    """Largest tool speed (m/s) while returning to the start pose."""
    reset_tolerance: Annotated[float, Bounds(gt=0.0, le=0.05)] = 0.004
    """Distance (m) from the start pose at which the return ends."""
    reset_timeout: Annotated[float, Bounds(gt=0.0, le=120.0)] = 10.0
    """Seconds the return may take; the episode then starts where the arm is (logged)."""
    reset_scene_service: str = ""
    """std_srvs/Trigger service called once the arm is back (a mechanism that resets the
    objects, or the emulator's ``reset_scene``); empty: none (a person resets the scene)."""
    reset_scene_timeout: Annotated[float, Bounds(gt=0.0, le=600.0)] = 60.0
    """Seconds the scene reset may take; the arm is held where it is meanwhile."""


@dataclass
class EnvConfig:
    """The actor's environment: task, observations, episode and the actions' safety bounds."""

    task: str = "ArmPegInsert"
    """Registered task name (an arm task in a Cartesian action mode)."""
    obs_mode: Literal["pixels", "state"] = "pixels"
    """``pixels``: camera images + proprioception (the paper's setting); ``state``: the
    full simulator observation vector (privileged; a cheap variant for CPU benchmarks)."""
    cameras: tuple[str, ...] = ("wrist",)
    """Cameras rendered in ``pixels`` mode."""
    image_size: Annotated[int, Bounds(ge=16, le=256)] = 64
    """Square image side (pixels)."""
    sparse_reward: bool = True
    """Reward 1 on success and 0 otherwise (what a success classifier gives a real arm)."""
    end_on_success: bool = True
    """End the episode at the first success (False: the operator can hold the success
    state, e.g. to record a success classifier's positive frames)."""
    max_episode_steps: PositiveInt = 160
    """Steps before truncation (the task's own limit applies too)."""
    discrete_gripper: bool = False
    """Read the last action element as close (< -0.5) / stay (in between) / open (> 0.5):
    "stay" repeats the previous gripper command. Use with ``learner.gripper_critic``."""
    max_step_m: Positive = 0.02
    """Safety: largest end-effector translation one action may ask for (m)."""
    workspace_margin: NonNegative = 0.0
    """Safety: shrink the task's workspace box by this much (m) for the policy's actions."""
    graph: GraphArmConfig = field(default_factory=GraphArmConfig)
    """A real arm's deployment graph (``--env ros``); unused with the simulated arm."""


@dataclass
class LearnerConfig:
    """The learner: SAC with RLPD's symmetric sampling from the demo and online buffers."""

    batch_size: Annotated[int, Bounds(ge=2)] = 256
    """Transitions per gradient step, drawn from both buffers."""
    demo_fraction: Annotated[float, Bounds(ge=0.0, lt=1.0)] = 0.5
    """Share of each batch drawn from the demo buffer (RLPD: 0.5); all online while it is empty."""
    discount: OpenUnit = 0.97
    """Discount factor."""
    init_temperature: Positive = 1e-2
    """Initial SAC entropy temperature (auto-tuned afterwards)."""
    target_entropy_scale: NonNegative = 0.5
    """Target entropy is ``-scale * action_dim``."""
    lr: Positive = 3e-4
    """Adam learning rate of actor, critics and temperature."""
    tau: Fraction = 0.005
    """Soft target-network update rate."""
    num_critics: Annotated[int, Bounds(ge=2)] = 2
    """Critics in the ensemble (min over a random pair gives the target)."""
    hidden: tuple[PositiveInt, ...] = (256, 256)
    """Hidden sizes of actor and critic MLPs (critics use LayerNorm)."""
    critic_actor_ratio: PositiveInt = 2
    """Critic updates per actor/temperature update."""
    backup_entropy: bool = False
    """Subtract the entropy term in the critic's target (hil-serl leaves it out)."""
    latent_dim: PositiveInt = 64
    """Encoder output per camera."""
    drq_pad: NonNegativeInt = 4
    """DrQ random-shift padding (pixels); 0 disables the augmentation."""
    backbone_weights: str | None = None
    """Local file with torchvision ResNet-18 weights: a frozen pretrained encoder per camera
    instead of the small CNN (nothing is downloaded)."""
    gripper_critic: bool = False
    """Discrete gripper critic (close/stay/open) for tasks with a gripper action."""
    grasp_penalty: NonNegative = 0.02
    """Reward penalty per gripper open/close with the gripper critic."""
    buffer_capacity: PositiveInt = 200_000
    """Transitions kept per buffer."""
    warmup_steps: NonNegativeInt = 500
    """Online transitions needed before training starts."""
    publish_seconds: Positive = 2.0
    """Learner: seconds between weight broadcasts."""
    checkpoint_seconds: Positive = 30.0
    """Learner: seconds between checkpoints."""


@dataclass
class ActorConfig:
    """The actor: exploration and the link to the learner."""

    random_steps: NonNegativeInt = 0
    """Uniform-random actions for the first steps (exploration before the first weights)."""
    chunk_size: PositiveInt = 32
    """Transitions per message to the learner (episodes' ends flush early)."""
    resend_seconds: Positive = 2.0
    """Unacknowledged messages are sent again after this long."""
    max_outbox: PositiveInt = 2000
    """Messages kept while the learner is away (the oldest are dropped beyond this, logged)."""


@dataclass
class TransportConfig:
    """The actor-learner link: authentication and size caps."""

    secret_env: str = "SIM2REAL_HIL_SECRET"
    """Environment variable holding the actor/learner shared secret (HMAC-SHA256 on every
    frame). Required, on both sides, whenever an address is not loopback."""
    secret_file: str | None = None
    """File holding the shared secret instead of the environment variable."""
    max_message_mb: Annotated[float, Bounds(gt=0.0, le=4096.0)] = 64.0
    """Largest inbound frame (MiB); a larger one drops the sender's connection."""
    max_chunk_mb: Annotated[float, Bounds(gt=0.0, le=16384.0)] = 256.0
    """Largest uncompressed transitions payload (MiB), checked before decompressing."""


@dataclass
class HilConfig:
    """Everything that determines a HIL-SERL run."""

    env: EnvConfig = field(default_factory=EnvConfig)
    """Environment."""
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    """Learner."""
    actor: ActorConfig = field(default_factory=ActorConfig)
    """Actor."""
    transport: TransportConfig = field(default_factory=TransportConfig)
    """Transport."""
    seed: int = 0
    """Seed of networks, sampling and environment resets."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HilConfig:
        """Through the strict loader: types, ranges, then :meth:`validate`."""
        cfg = from_dict(cls, data)
        assert isinstance(cfg, HilConfig)
        return cfg

    def validate(self) -> None:
        """The rules that span fields (each field's own type and range: the loader)."""
        if self.env.obs_mode == "pixels" and not self.env.cameras:
            raise ConfigError("env.cameras", "pixels mode needs at least one camera")
        graph = self.env.graph
        if graph.camera_topics and len(graph.camera_topics) != len(self.env.cameras):
            raise ConfigError("env.graph.camera_topics", f"{len(graph.camera_topics)} topics for "
                                                         f"{len(self.env.cameras)} cameras {list(self.env.cameras)}")
        if graph.reset_position and len(graph.reset_position) != 3:
            raise ConfigError("env.graph.reset_position", f"x, y, z in m, got {list(graph.reset_position)}")
