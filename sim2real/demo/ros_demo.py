"""The main job: the shipped policies deployed through the ROS 2 graph.

For each robot: sim bridge -> policy -> safety filter -> sim bridge over DDS on
loopback (a private domain, discovery limited to localhost), with the recorder
writing an MCAP rosbag2 of the run. The report's video and plots are read back
from that bag: the frames are the bridge's ``camera/image_raw`` messages, and
the plots show the policy's raw command against the filtered command the robot
received. The video replays the recorded robot state (``joint_states``, ``odom``,
``goal``) into the robot's MuJoCo model and renders it offline, as a visualiser
replaying a bag would: rendering inside the running bridge (software GL here)
would stall its control loop.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.demo.transfer import report_lines

ROBOTS = ("arm", "quadruped", "drone")
CONFINED = ("quadruped", "QuadrupedWaypoints", "quadruped_confined")
"""The hierarchy's run: (robot, shipped policy, run name): the quadruped crossing a
confined course, the planner's path followed by the learned follower."""


@dataclass
class RobotRun:
    robot: str
    summary: dict[str, Any]
    video: str | None
    plot: str | None
    backend: str = "sim"
    """``sim`` (the sim bridge) or the real robot's backend run against its emulator."""
    name: str = ""
    """The run's name in the report and its files (empty: the robot's)."""

    @property
    def label(self) -> str:
        return self.name or self.robot

    def row(self) -> dict[str, Any]:
        s = self.summary
        t, i, lat, miss = (
            s["task_success"],
            s["interventions"],
            s["latency_ms"]["state_to_command"],
            s["deadline_misses"],
        )
        return {
            "robot": self.label,
            "backend": self.backend,
            "policy": Path(str(s["policy"])).parent.name if str(s["policy"]).endswith(".onnx") else s["policy"],
            "task": s["task"],
            "success": (f"walked {t['walking_s']:.0f} s at {t['mean_vx']:.2f} m/s (asked {t['cmd_vel'][0]:.2f}), "
                        f"{t['falls']} falls" if t.get("walking_s") else f"{t['successes']}/{t['episodes']}"),
            "interventions": f"{i['steps_with_intervention']}/{i['filter_steps']}",
            "safe_action_steps": i["safe_action_steps"],
            "p50_ms": lat["p50_ms"],
            "p99_ms": lat["p99_ms"],
            "deadline_misses": sum(int(v) for v in miss.values()),
        }


def domain_for(index: int) -> int:
    """A DDS domain of our own per robot (0-232 are valid; stay clear of the default 0)."""
    return 100 + (os.getpid() * 7 + index * 31) % 100


def run_robot(robot: str, index: int, duration: float, out: Path, seed: int, video: bool, policy: str = "",
              name: str = "") -> RobotRun:
    """One robot's graph for ``duration`` s with its default policy, or ``policy`` (then
    its run is ``name``: files, report section), recorded and replayed."""
    from sim2real.ros_nodes.deployment import DeployOptions, run_deployment
    from sim2real.ros_nodes.graph import config_dir, load_config

    label = name or robot
    bag = out / "bags" / label
    if bag.is_dir():
        # rosbag2 refuses an existing output folder; this one is the previous demo's own
        # recording of this robot (the report is rewritten too), so it is replaced.
        shutil.rmtree(bag)
    topics = sorted(set(load_config(config_dir() / f"{robot}.yaml")["recorder"]["topics"]) | set(replay_topics(robot))
                    | ({"course", "plan"} if policy else set()))
    opts = DeployOptions(
        robot=robot,
        policy=policy,
        duration=duration,
        seed=seed,
        record=str(bag),
        domain_id=domain_for(index),
        overrides={"recorder": {"topics": topics}},
    )
    summary = run_deployment(opts)
    states, commands = read_bag(bag)
    video_name = None
    if video and states:
        import imageio.v3 as iio

        frames = replay_frames(robot, str(summary["task"]), states)
        if frames:
            video_name = f"{label}.mp4"
            iio.imwrite(out / video_name, np.stack(frames), fps=REPLAY_FPS, codec="libx264", macro_block_size=8)
            iio.imwrite(out / f"{label}.png", frames[len(frames) // 2])
    plot_name = f"{label}_commands.png" if plot_commands(robot, commands, out / f"{label}_commands.png") else None
    return RobotRun(robot, summary, video_name, plot_name, name=name)


def replay_topics(robot: str) -> list[str]:
    """What the replay needs to pose the robot (recorded in addition to the config's
    topics): its joints, its base and its goal, as far as it publishes them."""
    from sim2real.sim import robot_deployment

    deployment = robot_deployment(robot)
    return [topic for topic, has in (("joint_states", bool(deployment.joints)), ("odom", deployment.floating_base),
                                     ("goal", "goal" in deployment.block_inputs.values())) if has]


REPLAY_FPS = 10


def read_bag(bag: Path) -> tuple[list[tuple[float, dict[str, Any]]], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The recorded robot states ``[(t, {joint_pos, base_pos, base_quat, goal, course})]``
    in time order (``course``: a course's JSON), and the raw/filtered command series
    ``(t [N], values [N, K])``."""
    from rosbags.highlevel import AnyReader

    states: list[tuple[float, dict[str, Any]]] = []
    series: dict[str, list[tuple[float, np.ndarray]]] = {"raw_command": [], "command": []}
    with AnyReader([bag]) as reader:
        for conn, stamp, raw in reader.messages():
            topic, t = conn.topic.lstrip("/"), stamp * 1e-9
            if topic not in series and topic not in ("joint_states", "odom", "goal", "course"):
                continue
            msg: Any = reader.deserialize(raw, conn.msgtype)
            if topic in series:
                series[topic].append((t, np.asarray(msg.data, dtype=float)))
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
    return states, out


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


def plot_commands(robot: str, commands: dict[str, tuple[np.ndarray, np.ndarray]], path: Path) -> bool:
    """The policy's raw command (dashed) against the filtered command (solid)."""
    if "command" not in commands:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t0 = min(series[0][0] for series in commands.values())
    channels = min(4, commands["command"][1].shape[1])
    fig, axes = plt.subplots(channels, 1, figsize=(8, 1.8 * channels), sharex=True)
    axes = np.atleast_1d(axes)
    for k, ax in enumerate(axes):
        for topic, style in (("raw_command", "--"), ("command", "-")):
            if topic in commands and commands[topic][1].shape[1] > k:
                t, v = commands[topic]
                ax.plot(t - t0, v[:, k], style, lw=1, label=topic)
        ax.set_ylabel(f"ch {k}")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(f"{robot}: policy command (raw) vs safety-filtered command")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def run_emulated(robot: str, index: int, duration: float, seed: int) -> RobotRun:
    """The same graph with ``backend: real``: the hardware bridge speaking the robot's own
    protocol to its simulator-backed emulator (started in its own process), enabled after
    the pre-flight check passes."""
    from sim2real.ros_nodes.deployment import DeployOptions, run_deployment
    from sim2real.sim import robot_deployment

    summary = run_deployment(DeployOptions(robot=robot, backend="real", emulate=True, duration=duration, seed=seed,
                                           domain_id=domain_for(index + len(ROBOTS))))
    summary["task"] = robot_deployment(robot).task
    return RobotRun(robot, summary, None, None, backend=f"real: {robot_deployment(robot).real_backend} emulator")


def write_report(out: Path, runs: list[RobotRun], seconds: float, transfer: list[Any] | None = None,
                 transfer_episodes: int = 0) -> Path:
    rows = [r.row() for r in runs]
    lines = [
        "# sim2real demo: shipped policies through the ROS 2 graph",
        "",
        "Each robot ran as sim bridge -> policy (ONNX, onnxruntime) -> safety filter -> sim bridge, "
        "over DDS on loopback (`ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`, a private domain), with the "
        f"recorder writing an MCAP rosbag2 (`bags/<robot>/`). Took {seconds:.0f} s.",
        "",
        "Rows marked `real` ran the same graph with `backend: real`: the hardware bridge drove "
        "the robot through its own protocol (ros2_control, Unitree's low-level DDS, CRTP over "
        "cflib) against that protocol's emulator, enabled after the pre-flight check passed "
        "(docs/hardware.md).",
        "",
        "| robot | backend | policy | task | success | filter interventions | safe-action steps | "
        "state->command p50 (ms) | p99 (ms) | deadline misses |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['robot']} | {r['backend']} | {r['policy']} | {r['task']} | {r['success']} | {r['interventions']} | "
            f"{r['safe_action_steps']} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['deadline_misses']} |"
        )
    for run in runs:
        lines += ["", f"## {run.label} ({run.backend})", ""]
        if run.video:
            lines += [
                f"![{run.label}]({run.label}.png)",
                "",
                f"Video (the bag's states replayed): [{run.video}]({run.video})",
                "",
            ]
        if run.plot:
            lines += [f"![commands]({run.plot})", ""]
        lines += ["```json", _json(run.summary), "```"]
    lines += report_lines(transfer or [], transfer_episodes)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, indent=2, default=float)
