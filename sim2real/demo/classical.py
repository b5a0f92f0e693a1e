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
    from sim2real.sim.core.env import SimEnv


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


def _make_env(case: DemoCase, seed: int) -> SimEnv:
    """The case's task with the training randomization, rendering 320x240 frames."""
    from sim2real.sim import make

    return make(
        case.task,
        action_mode=case.action_mode,
        dr="train",
        render_mode="rgb_array",
        width=320,
        height=240,
        seed=seed,
        **case.task_options,
    )


def _frame_schedule(env: SimEnv, video: bool) -> tuple[Callable[[int], bool], int]:
    """Which steps of the recorded episode to render, and the video's frame rate."""
    fps = env.metadata["render_fps"]
    stride = max(1, round(fps / 20))  # about 20 frames/s of video whatever the control rate
    key_middle = env.engine.episode_steps // 2

    def render_at(step: int) -> bool:
        # Software GL makes rendering the slow part: without a video, only the key frames.
        return step % stride == 0 if video else step in (0, key_middle)

    return render_at, max(1, round(fps / stride))


def _case_slug(case: DemoCase) -> str:
    """The file-name stem of a case's frames and video."""
    return f"{case.robot}_{case.task}_{case.controller_name}".lower().replace(" ", "_").replace("-", "_")


def _never(step: int) -> bool:
    """Render no step."""
    return False


def _run_episode(
    env: SimEnv, controller: Controller, seed: int, render_at: Callable[[int], bool]
) -> tuple[float, dict[str, Any], list[np.ndarray]]:
    """One episode from ``env.reset(seed=seed)``; returns its return, its last ``info`` and
    the frames rendered before the steps ``render_at`` picks (and at the end, if any)."""
    obs, _ = env.reset(seed=seed)
    controller.reset()
    frames, total, done, info = [], 0.0, False, {}
    step = 0
    while not done:
        if render_at(step):
            frames.append(env.render())
        obs, reward, terminated, truncated, info = env.step(controller.act(obs[None])[0])
        total += reward
        done = terminated or truncated
        step += 1
    if frames:
        frames.append(env.render())  # the final state
    return total, info, frames


def _write_recording(
    out: Path, slug: str, frames: list[np.ndarray], video_fps: int | None
) -> tuple[list[str], str | None]:
    """Write the start, middle and end frames as PNGs and (``video_fps`` given) all as an MP4;
    returns the PNG names and the video's name."""
    import imageio.v3 as iio

    written = []
    for tag, idx in (("start", 0), ("middle", len(frames) // 2), ("end", len(frames) - 1)):
        name = f"{slug}_{tag}.png"
        iio.imwrite(out / name, frames[idx])
        written.append(name)
    if video_fps is None:
        return written, None
    video_path = f"{slug}.mp4"
    iio.imwrite(out / video_path, np.stack(frames), fps=video_fps, codec="libx264")
    return written, video_path


def run_case(
    case: DemoCase,
    episodes: int,
    seed: int,
    out: Path,
    video: bool = True,
    on_episode: Callable[[], None] = lambda: None,
) -> CaseResult:
    """Run ``episodes`` episodes; record the first one as frames and an MP4."""
    env = _make_env(case, seed)
    controller = case.make_controller(env.task)
    successes, returns, metric_sums = 0, [], {}
    frames_written: list[str] = []
    video_path: str | None = None
    render_at, video_fps = _frame_schedule(env, video)
    for episode in range(episodes):
        recording = episode == 0
        total, info, frames = _run_episode(env, controller, seed + episode, render_at if recording else _never)
        successes += int(info.get("is_success", False))
        returns.append(total)
        for k, v in info["metrics"].items():
            metric_sums[k] = metric_sums.get(k, 0.0) + v
        if recording and frames:
            frames_written, video_path = _write_recording(out, _case_slug(case), frames, video_fps if video else None)
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
