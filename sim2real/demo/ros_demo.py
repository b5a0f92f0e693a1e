"""The main job: the shipped policies deployed through the ROS 2 graph.

For each robot: sim bridge -> policy -> safety filter -> sim bridge over DDS on
loopback (a private domain, discovery limited to localhost), with the recorder
writing an MCAP rosbag2 of the run; then the same graph with ``backend: real``
against each robot's protocol emulator. Each run is a ``sim2real deploy`` process
(:mod:`.deploy_run`), judged by :mod:`.verdict`. The report's video and plots are
read back from the bag: the plots show the policy's raw command against the filtered
command the robot received, one panel per command element, named as the ``command``
messages name them. The video replays the recorded robot state (``joint_states``,
``odom``, ``goal``) into the robot's MuJoCo model and renders it offline, as a
visualiser replaying a bag would: rendering inside the running bridge (software GL
here) would stall its control loop.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.demo import verdict
from sim2real.demo.deploy_run import DeployResult, DeploySpec, run_deploy
from sim2real.demo.terminal import Terminal

ROBOTS = ("arm", "quadruped", "drone")
CONFINED = ("quadruped", "QuadrupedWaypoints", "quadruped_confined")
"""The hierarchy's run: (robot, shipped policy, run name): the quadruped crossing a
confined course, the planner's path followed by the learned follower."""


@dataclass
class RobotRun:
    result: DeployResult
    backend: str = "sim"
    """``sim`` (the sim bridge) or the real robot's backend run against its emulator."""
    video: str | None = None
    plot: str | None = None
    channels: list[str] = field(default_factory=list)
    """The command elements the plot shows, as the ``command`` messages name them."""

    def __post_init__(self) -> None:
        s = self.result.summary
        if s and self.backend != "sim" and not s.get("task"):  # deploy names a simulated task only
            from sim2real.sim import robot_deployment

            s["task"] = (s.get("emulator") or {}).get("task") or robot_deployment(self.robot).task
        self.verdict = verdict.task(s, self.result.error)
        self.real_time = verdict.real_time(s, self.result.logs)

    @property
    def label(self) -> str:
        return self.result.spec.label

    @property
    def robot(self) -> str:
        return self.result.spec.robot

    @property
    def summary(self) -> dict[str, Any]:
        return self.result.summary

    @property
    def command(self) -> str:
        return " ".join(self.result.spec.command())

    def ran(self) -> str:
        """What the row ran, in a few words."""
        s = self.summary
        policy = str(s.get("policy") or self.result.spec.policy or "default policy")
        policy = Path(policy).parent.name if policy.endswith(".onnx") else Path(policy).name
        robot = "the sim bridge" if self.backend == "sim" else f"the hardware bridge -> {self.backend.split(': ')[-1]}"
        return f"{s.get('task') or '?'}: policy {policy} -> safety filter -> {robot}"

    def row(self) -> dict[str, Any]:
        s = self.summary
        i = s.get("interventions") or {}
        lat = (s.get("latency_ms") or {}).get("state_to_command") or {}
        return {
            "robot": self.label,
            "backend": self.backend,
            "ran": self.ran(),
            "preflight": verdict.preflight_text(s) or "-",
            "result": f"{self.verdict.status}: {self.verdict.reason}",
            "real_time": "kept" if self.real_time.kept else "NOT kept",
            "interventions": f"{i.get('steps_with_intervention', 0)}/{i.get('filter_steps', 0)}",
            "safe_action_steps": i.get("safe_action_steps", 0),
            "p50_ms": lat.get("p50_ms"),
            "p99_ms": lat.get("p99_ms"),
            "deadline_misses": self.real_time.figures.get("deadline_misses", "-"),
        }

    def failure_line(self) -> str:
        """One line for a failed run: what failed and, when the host was the likely cause, that too."""
        line = f"FAILED {self.label} ({self.backend}): {self.verdict.reason}"
        if self.result.summary and not self.real_time.kept:
            line += f"; the host {self.real_time.line()}"
        return line

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "backend": self.backend, "command": self.command, "ran": self.ran(),
                "verdict": {"status": self.verdict.status, "reason": self.verdict.reason},
                "real_time": self.real_time.as_dict(), "preflight": verdict.preflight_text(self.summary) or None,
                "preflight_tables": self.result.logs.preflight_tables, "node_log": self.result.logs.as_list(),
                "channels": self.channels, "error": self.result.error or None}


def domain_for(index: int, base: int | None = None) -> int:
    """The DDS domain of the demo's run ``index``: ``base + index``, or (no base) one
    picked from this process's id (0-232 are valid; stay clear of the default 0)."""
    if base is not None:
        return base + index
    return 100 + (os.getpid() * 7 + index * 31) % 100


def run_robot(robot: str, domain_id: int, duration: float, out: Path, seed: int, video: bool, terminal: Terminal,
              env: dict[str, str], policy: str = "", name: str = "") -> RobotRun:
    """One robot's graph for ``duration`` s with its default policy, or ``policy`` (then
    its run is ``name``: files, report section), recorded and replayed."""
    from sim2real.ros_nodes.graph import config_dir, load_config

    label = name or robot
    bag = out / "bags" / label
    if bag.is_dir():
        # rosbag2 refuses an existing output folder; this one is the previous demo's own
        # recording of this robot (the report is rewritten too), so it is replaced.
        shutil.rmtree(bag)
    bag.parent.mkdir(parents=True, exist_ok=True)
    topics = sorted(set(load_config(config_dir() / f"{robot}.yaml")["recorder"]["topics"]) | set(replay_topics(robot))
                    | ({"course", "plan"} if policy else set()))
    spec = DeploySpec(label, robot, duration, seed, domain_id, policy=policy, record=bag, recorder_topics=topics)
    run = RobotRun(run_deploy(spec, terminal, env))
    if not run.summary or not bag.is_dir():
        return run
    states, commands, labels = read_bag(bag)
    if video and states:
        import imageio.v3 as iio

        frames = replay_frames(robot, str(run.summary["task"]), states)
        if frames:
            run.video = f"{label}.mp4"
            iio.imwrite(out / run.video, np.stack(frames), fps=REPLAY_FPS, codec="libx264", macro_block_size=8)
            iio.imwrite(out / f"{label}.png", frames[len(frames) // 2])
    run.channels = plot_commands(label, commands, labels, out / f"{label}_commands.png")
    run.plot = f"{label}_commands.png" if run.channels else None
    return run


def run_emulated(robot: str, domain_id: int, duration: float, seed: int, terminal: Terminal, env: dict[str, str],
                 faults: tuple[str, ...] = ()) -> RobotRun:
    """The same graph with ``backend: real``: the hardware bridge speaking the robot's own
    protocol to its simulator-backed emulator (started in its own process); the robot is
    enabled only if the pre-flight check passes (the row says what it found)."""
    from sim2real.sim import robot_deployment

    spec = DeploySpec(f"{robot} (emulated)", robot, duration, seed, domain_id, emulate=True, faults=faults)
    return RobotRun(run_deploy(spec, terminal, env), backend=f"real: {robot_deployment(robot).real_backend} emulator")


def replay_topics(robot: str) -> list[str]:
    """What the replay needs to pose the robot (recorded in addition to the config's
    topics): its joints, its base and its goal, as far as it publishes them."""
    from sim2real.sim import robot_deployment

    deployment = robot_deployment(robot)
    return [topic for topic, has in (("joint_states", bool(deployment.joints)), ("odom", deployment.floating_base),
                                     ("goal", "goal" in deployment.block_inputs.values())) if has]


REPLAY_FPS = 10


def read_bag(bag: Path) -> tuple[list[tuple[float, dict[str, Any]]], dict[str, tuple[np.ndarray, np.ndarray]],
                                 list[str]]:
    """The recorded robot states ``[(t, {joint_pos, base_pos, base_quat, goal, course})]``
    in time order (``course``: a course's JSON), the raw/filtered command series
    ``(t [N], values [N, K])`` and the filtered command's element names (its layout's
    labels: the robot's command space)."""
    from rosbags.highlevel import AnyReader

    from sim2real.ros_nodes.messages import command_labels

    states: list[tuple[float, dict[str, Any]]] = []
    series: dict[str, list[tuple[float, np.ndarray]]] = {"raw_command": [], "command": []}
    labels: list[str] = []
    with AnyReader([bag]) as reader:
        for conn, stamp, raw in reader.messages():
            topic, t = conn.topic.lstrip("/"), stamp * 1e-9
            if topic not in series and topic not in ("joint_states", "odom", "goal", "course"):
                continue
            msg: Any = reader.deserialize(raw, conn.msgtype)
            if topic in series:
                series[topic].append((t, np.asarray(msg.data, dtype=float)))
                if topic == "command" and not labels:
                    labels = command_labels(msg)
            elif topic == "joint_states":
                states.append((t, {"joint_pos": np.asarray(msg.position, dtype=float)}))
            elif topic == "course":
                states.append((t, {"course": str(msg.data)}))
            elif topic == "odom":
                p, q = msg.pose.pose.position, msg.pose.pose.orientation
                states.append((t, {"base_pos": np.array([p.x, p.y, p.z]), "base_quat": np.array([q.w, q.x, q.y, q.z])}))
            else:
                p = msg.pose.position
                states.append((t, {"goal": np.array([p.x, p.y, p.z])}))
    out = {}
    for topic, values in series.items():
        if values:
            width = min(len(v) for _, v in values)
            out[topic] = (np.array([t for t, _ in values]), np.array([v[:width] for _, v in values]))
    return states, out, labels


def replay_frames(robot: str, task: str, states: list[tuple[float, dict[str, Any]]]) -> list[np.ndarray]:
    """Pose the robot's model from the recorded state at ``REPLAY_FPS`` and render it
    (with the recorded course's walls and ceilings, where there is one)."""
    import json

    import mujoco

    from sim2real.sim import make, robot_deployment
    from sim2real.sim.quadruped import layouts

    env = make(task, render_mode="rgb_array", width=320, height=240)
    env.reset(seed=0)
    model, data = env.model, env.data
    target = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "target")
    target_mocap = int(model.body_mocapid[target]) if target >= 0 else -1
    joint_qpos = [int(model.jnt_qposadr[model.joint(name).id]) for name in robot_deployment(robot).joints]
    frames, latest, next_t = [], {}, states[0][0]
    shown_course = None
    for t, values in states:
        latest.update(values)
        if latest.get("course") is not None and latest["course"] != shown_course:
            shown_course = latest["course"]
            layouts.place(layouts.Layout.from_dict(json.loads(shown_course)), model, data)
        if t < next_t:
            continue
        next_t = t + 1.0 / REPLAY_FPS
        if "joint_pos" in latest:
            data.qpos[joint_qpos] = latest["joint_pos"][: len(joint_qpos)]
        if "base_pos" in latest:
            data.qpos[0:3], data.qpos[3:7] = latest["base_pos"], latest["base_quat"]
        if "goal" in latest and target_mocap >= 0:
            data.mocap_pos[target_mocap] = latest["goal"]
        mujoco.mj_forward(model, data)
        frames.append(env.render())
    env.close()
    return frames


def plot_commands(label: str, commands: dict[str, tuple[np.ndarray, np.ndarray]], names: list[str],
                  path: Path) -> list[str]:
    """The policy's raw command (dashed) against the filtered command (solid), one panel
    per command element, each named (``names``: the command's labels; ``ch k`` for an
    element without one). Returns the panels' names (empty: no command recorded)."""
    if "command" not in commands:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(series[0][0] for series in commands.values())
    width = commands["command"][1].shape[1]
    channels = [names[k] if k < len(names) and names[k] else f"ch {k}" for k in range(width)]
    cols = 1 if width <= 6 else 2
    rows = -(-width // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(8 * cols, 1.6 * rows + 0.8), sharex=True, squeeze=False)
    for k, ax in enumerate(axes.T.flat):  # down the first column, then the second
        if k >= width:
            ax.set_visible(False)
            continue
        for topic, style in (("raw_command", "--"), ("command", "-")):
            if topic in commands and commands[topic][1].shape[1] > k:
                t, v = commands[topic]
                ax.plot(t - t0, v[:, k], style, lw=1, label=topic)
        ax.set_ylabel(channels[k], fontsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="upper right", fontsize=8)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    fig.suptitle(f"{label}: policy command (raw, dashed) vs safety-filtered command (solid)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return channels
