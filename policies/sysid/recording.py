"""A recorded run as system identification reads it: the robot's state samples and the
commands that reached it, from an MCAP (or sqlite3) bag written by the recorder.

States come from ``joint_states`` (by joint name, never by position) and ``odom`` (REP
105: twist in the body frame), paired by their header stamps (the driver stamps both
with the same time); commands from ``command`` (the safety filter's output, what the
robot executed). Times are the bag's receive times, so commands and states share one
clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.errors import Sim2RealError


class RecordingError(Sim2RealError):
    """A bag that system identification cannot use (one line: what is missing)."""


@dataclass
class Recording:
    """State samples ``[N]`` and commands ``[M]`` of one run, in time order."""

    times: np.ndarray
    """s, when each state sample arrived."""
    qpos: np.ndarray
    """``[N, 7 + J]`` or ``[N, J]``: a floating base's position and quaternion (w first),
    then the joints' positions in the deployment's joint order."""
    qvel: np.ndarray
    """``[N, 6 + J]`` or ``[N, J]``: a floating base's world linear and body angular
    velocity, then the joints' velocities."""
    command_times: np.ndarray
    commands: np.ndarray
    """``[M, C]`` the executed commands, in the robot's command layout."""

    @property
    def duration(self) -> float:
        return float(self.times[-1] - self.times[0]) if len(self.times) > 1 else 0.0


def read_recording(bag: str | Path, joints: tuple[str, ...], floating_base: bool) -> Recording:
    """The states and commands of a bag for a robot with ``joints`` (and a floating base).

    Raises:
        RecordingError: not a bag, or without the topics the fit needs.
    """
    from rosbags.highlevel import AnyReader

    path = Path(bag)
    if not path.exists():
        raise RecordingError(f"{path}: no such bag")
    joint_rows: dict[int, tuple[float, np.ndarray, np.ndarray]] = {}
    base_rows: dict[int, tuple[float, np.ndarray]] = {}
    commands: list[tuple[float, np.ndarray]] = []
    try:
        with AnyReader([path]) as reader:
            topics = {c.topic.lstrip("/") for c in reader.connections}
            needed = ["command", *(["joint_states"] if joints else []), *(["odom"] if floating_base else [])]
            missing = [t for t in needed if t not in topics]
            if missing:
                raise RecordingError(f"{path} has no {', '.join(missing)} (recorded: {', '.join(sorted(topics))})")
            wanted = [c for c in reader.connections if c.topic.lstrip("/") in needed]
            for conn, received, raw in reader.messages(connections=wanted):
                topic, t = conn.topic.lstrip("/"), received * 1e-9
                msg: Any = reader.deserialize(raw, conn.msgtype)
                if topic == "command":
                    commands.append((t, np.asarray(msg.data, dtype=float)))
                    continue
                stamp = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
                if topic == "joint_states":
                    row = _joints_by_name(msg, joints)
                    if row is not None:
                        joint_rows[stamp] = (t, *row)
                else:
                    base_rows[stamp] = (t, _odometry(msg))
    except RecordingError:
        raise
    except Exception as exc:  # rosbags' own errors: not a bag, a damaged file
        raise RecordingError(f"{path}: cannot read the bag ({' '.join(str(exc).split())})") from None
    return _assemble(path, joints, floating_base, joint_rows, base_rows, commands)


def _joints_by_name(msg: Any, joints: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    index = {n: k for k, n in enumerate(msg.name)}
    if any(n not in index for n in joints) or len(msg.velocity) != len(msg.name):
        return None  # another robot's joints, or no velocities: not a state sample of this robot
    order = [index[n] for n in joints]
    return np.asarray(msg.position, dtype=float)[order], np.asarray(msg.velocity, dtype=float)[order]


def _odometry(msg: Any) -> np.ndarray:
    """``[13]`` position, quaternion (w first), world linear and body angular velocity."""
    import mujoco

    p, q = msg.pose.pose.position, msg.pose.pose.orientation
    quat = np.array([q.w, q.x, q.y, q.z], dtype=float)
    quat /= max(np.linalg.norm(quat), 1e-12)
    t = msg.twist.twist
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, quat)
    v_world = rot.reshape(3, 3) @ np.array([t.linear.x, t.linear.y, t.linear.z])
    return np.concatenate([[p.x, p.y, p.z], quat, v_world, [t.angular.x, t.angular.y, t.angular.z]])


def _assemble(path: Path, joints: tuple[str, ...], floating_base: bool,
              joint_rows: dict[int, tuple[float, np.ndarray, np.ndarray]],
              base_rows: dict[int, tuple[float, np.ndarray]], commands: list[tuple[float, np.ndarray]]) -> Recording:
    stamps = sorted(set(joint_rows) & set(base_rows) if joints and floating_base else joint_rows or base_rows)
    if len(stamps) < 2 or not commands:
        raise RecordingError(f"{path}: {len(stamps)} complete state samples and {len(commands)} commands; "
                             "the fit needs a run with both")
    times, qpos, qvel = [], [], []
    for s in stamps:
        t, jp, jv = joint_rows[s] if joints else (base_rows[s][0], np.zeros(0), np.zeros(0))
        base = base_rows[s][1] if floating_base else np.zeros(13)
        times.append(t)
        qpos.append(np.concatenate([base[:7] if floating_base else [], jp]))
        qvel.append(np.concatenate([base[7:] if floating_base else [], jv]))
    width = min(len(c) for _, c in commands)
    order = np.argsort([t for t, _ in commands], kind="stable")
    return Recording(times=np.array(times), qpos=np.array(qpos), qvel=np.array(qvel),
                     command_times=np.array([commands[k][0] for k in order]),
                     commands=np.array([commands[k][1][:width] for k in order]))
