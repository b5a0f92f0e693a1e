"""Demo cases: one classical controller per robot task, run in closed loop on the
simulated robot with the training randomization."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sim2real.policies.classical import Controller


def _classical(task: Any) -> Controller:
    """The robot's own classical controller for the task (imported when a case runs)."""
    from sim2real.policies.classical import controller_for

    return controller_for(task)


def _quadruped_trot(task: Any) -> Controller:
    from sim2real.policies.classical.quadruped import TrotGait

    return TrotGait(num_envs=1, speed=0.4)


@dataclass(frozen=True)
class DemoCase:
    robot: str
    task: str
    controller_name: str
    make_controller: Callable[[Any], Controller]
    description: str
    action_mode: str | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    key_metric: str | None = None


DEMO_CASES: list[DemoCase] = [
    DemoCase(
        "arm",
        "ArmReach",
        "operational-space reaching",
        _classical,
        "End effector to a random target through the Cartesian impedance controller (ee_delta actions); "
        "success = within 2 cm.",
        action_mode="ee_delta",
        key_metric="ee_distance",
    ),
    DemoCase(
        "arm",
        "ArmPegInsert",
        "impedance peg insertion",
        _classical,
        "Align the held peg over the hole, then descend under impedance control (a few mm of clearance).",
        action_mode="ee_delta",
    ),
    DemoCase(
        "quadruped",
        "QuadrupedVelocity",
        "PD stand",
        _classical,
        "Hold the default pose under joint PD with a zero velocity command for the whole episode, "
        "through pushes and randomized masses, friction and motor strength.",
        task_options={"lin_vel_x": (0.0, 0.0), "lin_vel_y": (0.0, 0.0), "yaw_rate": (0.0, 0.0)},
        key_metric="vel_tracking_error",
    ),
    DemoCase(
        "quadruped",
        "QuadrupedVelocity",
        "open-loop trot",
        _quadruped_trot,
        "A fixed diagonal trot with a 0.4 m/s forward command: a reference motion without feedback "
        "(the learned policy of the training issue is what tracks commands).",
        task_options={
            "lin_vel_x": (0.4, 0.4),
            "lin_vel_y": (0.0, 0.0),
            "yaw_rate": (0.0, 0.0),
            "zero_command_probability": 0.0,
        },
        key_metric="vel_tracking_error",
    ),
    DemoCase(
        "drone",
        "DroneHover",
        "cascaded PID",
        _classical,
        "Position -> velocity -> attitude -> body-rate cascade commanding collective thrust and body rates "
        "(CTBR), tracked by the inner rate loop; success = within 10 cm for the last 5 s.",
        action_mode="ctbr",
        key_metric="position_error",
    ),
    DemoCase(
        "drone",
        "DroneWaypoints",
        "cascaded PID",
        _classical,
        "The same cascade flying a sequence of random waypoints.",
        action_mode="ctbr",
        key_metric="position_error",
    ),
]


@dataclass
class CaseResult:
    robot: str
    task: str
    controller: str
    action_mode: str
    description: str
    episodes: int
    successes: int
    mean_return: float
    metrics: dict[str, float]
    key_metric: str | None
    frames: list[str]
    video: str | None

    def key_metric_text(self) -> str:
        if self.key_metric and self.key_metric in self.metrics:
            return f"{self.key_metric} {self.metrics[self.key_metric]:.3g}"
        return ", ".join(f"{k} {v:.3g}" for k, v in list(self.metrics.items())[:2])

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "description"}


def run_case(
    case: DemoCase,
    episodes: int,
    seed: int,
    out: Path,
    video: bool = True,
    on_episode: Callable[[], None] = lambda: None,
) -> CaseResult:
    """Run ``episodes`` episodes; record the first one as frames and an MP4."""
    import imageio.v3 as iio

    from sim2real.sim import make

    env = make(
        case.task,
        action_mode=case.action_mode,
        dr="train",
        render_mode="rgb_array",
        width=320,
        height=240,
        seed=seed,
        **case.task_options,
    )
    controller = case.make_controller(env.task)
    slug = f"{case.robot}_{case.task}_{case.controller_name}".lower().replace(" ", "_").replace("-", "_")
    successes, returns, metric_sums = 0, [], {}
    frames_written: list[str] = []
    video_path: str | None = None
    fps = env.metadata["render_fps"]
    stride = max(1, round(fps / 20))  # about 20 frames/s of video whatever the control rate
    key_middle = env.engine.episode_steps // 2
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        controller.reset()
        recording = episode == 0
        frames, total, done, info = [], 0.0, False, {}
        step = 0
        while not done:
            # Software GL makes rendering the slow part: without a video, only the key frames.
            if recording and (step % stride == 0 if video else step in (0, key_middle)):
                frames.append(env.render())
            obs, reward, terminated, truncated, info = env.step(controller.act(obs[None])[0])
            total += reward
            done = terminated or truncated
            step += 1
        successes += int(info.get("is_success", False))
        returns.append(total)
        for k, v in info["metrics"].items():
            metric_sums[k] = metric_sums.get(k, 0.0) + v
        if recording and frames:
            frames.append(env.render())
            for tag, idx in (("start", 0), ("middle", len(frames) // 2), ("end", len(frames) - 1)):
                name = f"{slug}_{tag}.png"
                iio.imwrite(out / name, frames[idx])
                frames_written.append(name)
            if video:
                video_path = f"{slug}.mp4"
                iio.imwrite(out / video_path, np.stack(frames), fps=max(1, round(fps / stride)), codec="libx264")
        on_episode()
    env.close()
    return CaseResult(
        robot=case.robot,
        task=case.task,
        controller=case.controller_name,
        action_mode=env.task.action_mode,
        description=case.description,
        episodes=episodes,
        successes=successes,
        mean_return=float(np.mean(returns)),
        metrics={k: v / episodes for k, v in metric_sums.items()},
        key_metric=case.key_metric,
        frames=frames_written,
        video=video_path,
    )
