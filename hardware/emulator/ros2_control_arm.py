"""The robot side of a Franka under ros2_control, backed by the simulated arm. By default
franka_ros2 as franka_bringup's franka.launch.py starts it (``topology: franka_ros2``):
``ros2_control_node`` with ``joint_state_broadcaster`` (the 7 arm joints on
``franka/joint_states`` at the controller manager's rate), ros2_controllers'
``joint_trajectory_controller`` loaded from our controller file, ``franka_gripper_node``
(the fingers on ``franka_gripper/joint_states`` at its own rate; a width moved to at its
default speed, as its Move action does, fed by the gripper relay's topic), and
``joint_state_publisher`` merging both at 30 Hz; or no gripper at all. The first
emulator's single 9-joint stream with forward position controllers is ``topology:
merged`` (names and QoS: :mod:`sim2real.hardware.ros2_control.topics`).

The simulated arm runs in real time in its joint-position actuator mode (joint servos
with franka_ros's joint impedance gains, gravity compensated), which is what a real
Franka does with joint position commands: its internal controller tracks them. The
controllers behave as ros2_control's do: a command of the wrong length (or a
non-finite one, which franka's hardware interface refuses) is counted and ignored, the
last valid command is held forever (forward controllers have no timeout: the host's
backend is the deadman), and before any command the arm holds where it started.

Every state frame goes through :meth:`StreamFaults.due` before it is published, so the
pre-flight check's fault injections look the same as on every other protocol.

The episodes of the simulated task run underneath, as an operator would run them: an
episode ends on success or timeout and the scene is reset around the arm (a new target,
the peg back in the hand: :meth:`ArmTask.reset_scene`); the arm is never teleported
(:meth:`mission` gives the goal and counters). A host that runs episodes itself (the
HIL-SERL actor) calls ``reset_scene`` (std_srvs/Trigger, in the controllers' namespace)
between them, as it would ask a person or a reset mechanism; from its first call on,
episodes are the host's: each call ends one (successful if the task succeeded at any
moment of it) and the emulator no longer ends them itself.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from sim2real.hardware.emulator.base import (
    EmulatorSettings,
    Mission,
    MotionOnset,
    PoseListener,
    episode_summary,
)
from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.ros2_control_manager import (
    ControllerManagerEmulator,
    forward_command,
    joint_state_message,
    trajectory_command,
)
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control.trajectory import JointTarget
from sim2real.sim import robot_deployment
from sim2real.sim.arm import constants as ARM
from sim2real.sim.arm.base import ArmTask
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY


@dataclass
class Ros2ControlArmEmulatorConfig:
    task: str = "ArmReach"
    """Simulated task (registry name): its targets become the mission's goal."""
    dr: str = "none"
    """Domain-randomization preset of the simulated robot."""
    seed: int = 0
    """Seed of the simulated targets and start pose."""
    arm_id: str = "panda"
    """franka_ros2's ``arm_id``: the joint name prefix (``panda``, ``fr3``)."""
    topology: T.Topology = "franka_ros2"
    """``franka_ros2``: franka.launch.py's streams and our controller file's trajectory
    controller; ``merged``: one 9-joint ``joint_states``, forward position controllers."""
    gripper: bool = True
    """A Franka Hand with franka_gripper (``load_gripper:=true``); without it, no finger
    stream and no gripper command (the simulated fingers stay as they are)."""
    state_rate_hz: float = T.BROADCASTER_RATE
    """The arm's joint-state rate: the broadcaster's rate under our controller file (250 Hz);
    1000 plays franka_bringup's own controllers.yaml (the controller manager's 1 kHz)."""
    gripper_state_rate_hz: float = T.GRIPPER_STATE_RATE
    """``franka_gripper/joint_states`` rate (franka_gripper_node.yaml's ``state_publish_rate``)."""
    gripper_speed: float = 0.1
    """m/s the fingers' width moves at (franka_gripper's ``default_speed``)."""
    merged_rate_hz: float = 30.0
    """``franka_ros2``: joint_state_publisher's merged ``joint_states`` (``rate: 30``; 0: none)."""
    feedforward: bool = True
    """Add the commanded joint velocity (from consecutive commands) to the servo's
    damping term, as Franka's own controller tracks a streamed trajectory; without it
    the joint servos lag ``kd/kp * qdot`` (~0.08 s)."""
    domain_id: int | None = None
    """DDS domain (None: ``$ROS_DOMAIN_ID``)."""
    namespace: str = T.NAMESPACE
    """The ros2_control graph's namespace (franka_ros2's ``namespace:=``)."""

    def validate(self) -> None:
        if not (math.isfinite(self.state_rate_hz) and 10.0 <= self.state_rate_hz <= 1000.0):
            raise ConfigError("state_rate_hz", f"must be within 10..1000 Hz, got {self.state_rate_hz!r}")
        if not self.arm_id.isidentifier():
            raise ConfigError("arm_id", f"must be a ROS name prefix, got {self.arm_id!r}")
        if not (math.isfinite(self.gripper_state_rate_hz) and 1.0 <= self.gripper_state_rate_hz <= 1000.0):
            raise ConfigError("gripper_state_rate_hz", f"must be within 1..1000 Hz, got {self.gripper_state_rate_hz!r}")
        if self.topology == "merged" and not self.gripper:
            raise ConfigError("gripper", "the merged topology carries the fingers in joint_states")


class Ros2ControlArmEmulator(ControllerManagerEmulator):
    """One simulated Franka behind ros2_control's topics, on its own rclpy context."""

    robot = "arm"
    physics_dt = ARM.PHYSICS_DT

    def __init__(self, config: Ros2ControlArmEmulatorConfig | None = None,
                 faults: StreamFaults | None = None) -> None:
        self.config = cfg = config or Ros2ControlArmEmulatorConfig()
        cfg.validate()
        self.faults = faults or StreamFaults()
        self.env = SimEnv(REGISTRY.get(cfg.task), action_mode="joint_position", dr=cfg.dr, seed=cfg.seed)
        if not isinstance(self.env.task, ArmTask):
            raise ConfigError("task", f"{cfg.task} is not an arm task")
        self.task: ArmTask = self.env.task
        self.env.reset(seed=cfg.seed)
        self.model, self.data = self.env.model, self.env.data
        self._read = robot_deployment("arm").state_reader(self.task, self.model)
        self.arm_names, self.finger_names = T.arm_joint_names(cfg.arm_id), T.finger_joint_names(cfg.arm_id)
        self._lock = threading.Lock()
        self.target = JointTarget(self.data.qpos[:7].copy())
        # Before any command the gripper keeps what it holds: a task's tool stays squeezed
        # (as a real gripper's grasp holds), an empty hand keeps its opening.
        self.gripper = float(self.data.qpos[7:9].sum()) if self.task.uses_gripper else self.task.fixed_gripper_width
        self.gripper_goal = self.gripper
        """The width asked for (franka_gripper: the goal it moves to at ``gripper_speed``)."""
        self._q_measured = self.data.qpos[:7].copy()
        self._next_gripper_state = 0.0
        self.gripper_node_running = True
        """False: franka_gripper_node has died (no finger states; a fault to test against)."""
        self._next_merged = 0.0
        self.last_command: tuple[float, np.ndarray] | None = None
        """Arrival (monotonic s) and value (its last point) of the latest accepted arm command."""
        self._kd_over_kp = ARM.JOINT_KD / ARM.JOINT_KP
        self.onset = MotionOnset(threshold=0.001)
        """A joint 1 mrad (about 0.5-1 mm at the hand) from where it rested before the first command."""
        self.rejected: dict[str, int] = {}
        self.episodes: list[bool] = []
        self.episode_ends: list[float] = []
        self._control_steps = 0
        self._host_episodes = False
        """True once a host has reset the scene: episodes end at its calls only."""
        self._succeeded = False
        """The task succeeded at some moment of the current episode."""
        self._scene_requests = 0
        self._scene_resets = 0
        self._pose_listeners: list[PoseListener] = []
        self._substeps = 0
        self._tracking: list[float] = []
        self._start_ros("franka_ros2_control_emulator", "ros2_control arm emulator", cfg.domain_id, cfg.namespace,
                        cfg.state_rate_hz)
        self.counters.update(commands_accepted=0, trajectories_accepted=0, gripper_accepted=0, gripper_goals=0,
                             gripper_states_published=0, merged_published=0)
        node = self.ros.node
        self.stock = cfg.topology == "franka_ros2"
        self.pub_state = node.create_publisher(JointState, T.ARM_STATES if self.stock else T.JOINT_STATES,
                                               T.controller_qos())
        node.create_subscription(JointTrajectory, T.TRAJECTORY, self._on_trajectory, T.controller_qos())
        if self.stock:
            self.pub_merged = node.create_publisher(JointState, T.JOINT_STATES, T.controller_qos())
            if cfg.gripper:
                self.pub_fingers = node.create_publisher(JointState, T.GRIPPER_STATES, 1)
                node.create_subscription(Float64, T.GRIPPER_WIDTH, self._on_gripper_width, T.controller_qos())
        else:
            node.create_subscription(Float64MultiArray, T.POSITION_COMMANDS, self._on_forward, T.controller_qos())
            node.create_subscription(Float64MultiArray, T.GRIPPER_COMMANDS, self._on_gripper, T.controller_qos())
        node.create_service(Trigger, "reset_scene", self._on_reset_scene)

    @classmethod
    def launch(cls, settings: EmulatorSettings) -> Ros2ControlArmEmulator:
        config = Ros2ControlArmEmulatorConfig(task=settings.task or robot_deployment("arm").task,
                                              seed=settings.seed, domain_id=settings.domain_id)
        return cls(config, settings.faults)

    def connect_options(self) -> dict[str, Any]:
        cfg = self.config
        return {"domain_id": self.domain, "arm_id": cfg.arm_id, "namespace": cfg.namespace,
                "topology": cfg.topology, "gripper": cfg.gripper, "arm_state_rate_hz": cfg.state_rate_hz,
                "gripper_state_rate_hz": cfg.gripper_state_rate_hz}

    # -- controllers (the executor thread) -------------------------------------------
    def _reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def _on_forward(self, msg: Float64MultiArray) -> None:
        q = forward_command(msg, 7)
        if isinstance(q, str):
            return self._reject(q)
        now = time.monotonic()
        with self._lock:
            self.target.forward(q, now, ARM.VELOCITY_LIMIT)
            self.last_command = (now, q)
        self.counters["commands_accepted"] += 1
        return None

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        goal = trajectory_command(msg, self.arm_names)
        if isinstance(goal, str):
            return self._reject(goal)
        times, points = goal
        now = time.monotonic()
        with self._lock:
            self.target.trajectory(now, times, points, start=self._q_measured if self.stock else None)
            self.last_command = (now, points[-1].copy())
        self.counters["commands_accepted"] += 1  # every arm command: forward or trajectory
        self.counters["trajectories_accepted"] += 1
        return None

    def _on_gripper(self, msg: Float64MultiArray) -> None:
        w = np.asarray(msg.data, dtype=np.float64)
        if w.shape != (1,):
            return self._reject("gripper_size")
        if not np.isfinite(w[0]):
            return self._reject("gripper_non_finite")
        with self._lock:
            self.gripper = float(np.clip(w[0], 0.0, ARM.GRIP_WIDTH_MAX))
        self.counters["gripper_accepted"] += 1
        return None

    def _on_gripper_width(self, msg: Float64) -> None:
        """The relay's width (franka_gripper's Move goal): the fingers go there at its speed."""
        if not math.isfinite(msg.data):
            return self._reject("gripper_non_finite")
        with self._lock:
            self.gripper_goal = float(np.clip(msg.data, 0.0, ARM.GRIP_WIDTH_MAX))
        self.counters["gripper_goals"] += 1
        return None

    def _on_reset_scene(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        """Ask the serve thread (which owns the simulation) to reset the scene, and wait."""
        with self._lock:
            self._scene_requests += 1
            wanted = self._scene_requests
        end = time.monotonic() + 2.0
        while self._scene_resets < wanted and time.monotonic() < end and not self._closed:
            time.sleep(0.002)
        response.success = self._scene_resets >= wanted
        response.message = (f"scene reset (episode {len(self.episodes)} begins)" if response.success
                            else "the emulator is not serving")
        return response

    def watch_pose(self, listener: PoseListener) -> mujoco.MjModel:
        self._pose_listeners.append(listener)
        return self.model

    # -- the simulated arm (the serve thread) ------------------------------------------
    def _physics(self, now: float, steps: int) -> None:
        with self._lock:
            q_d, qd_d = self.target.sample(now)
            if self.stock:  # franka_gripper moves to its goal at its speed; forward: at once
                step = self.config.gripper_speed * steps * ARM.PHYSICS_DT
                self.gripper += float(np.clip(self.gripper_goal - self.gripper, -step, step))
            width = self.gripper
        ctrl = q_d + (self._kd_over_kp * qd_d if self.config.feedforward else 0.0)
        self.data.ctrl[:7] = np.clip(ctrl, ARM.JOINT_LOWER, ARM.JOINT_UPPER)
        self.data.ctrl[7] = width
        decimation = int(round(ARM.CONTROL_DT / ARM.PHYSICS_DT))
        for _ in range(steps):
            mujoco.mj_step(self.model, self.data)
            self._substeps += 1
            if self._substeps % decimation == 0:
                self._episode_step()
        self.counters["physics_steps"] += steps
        with self._lock:
            self._q_measured = self.data.qpos[:7].copy()
        self.onset.observe(now, self.data.qpos[:7], self.last_command is not None)
        if np.any(qd_d):
            self._tracking.append(float(np.max(np.abs(q_d - self.data.qpos[:7]))))
            del self._tracking[:-20_000]

    def _episode_step(self) -> None:
        """The simulated task's verdict once per control period: success or timeout ends
        the episode and the scene is reset around the arm. The first episode starts with
        the first command: the stopwatch does not run while the host is still connecting
        and checking. Once the host runs the episodes, they end at its requests only."""
        if not self.episodes and self.counters["commands_accepted"] == 0 and not self._host_episodes:
            return
        self._control_steps += 1
        phys = self.env.engine.phys
        result = self.task.evaluate(phys, np.zeros((1, self.task.action_size)))
        self._succeeded |= bool(result.success[0])
        if self._host_episodes:
            return
        if bool(result.terminated[0]) or self._control_steps >= self.env.engine.episode_steps:
            self._end_episode(bool(result.success[0]))

    def _end_episode(self, success: bool) -> None:
        # The count and the next goal change together: a mission read between them (the
        # operator's, a test's) saw the episode ended and the old goal still set.
        with self._lock:
            self.episodes.append(success)
            self.episode_ends.append(time.monotonic())
            self._control_steps = 0
            self._succeeded = False
            self.task.reset_scene(0, self.model, self.data, self.env.engine.rng)
            mujoco.mj_forward(self.model, self.data)

    def _serve_scene_requests(self) -> None:
        with self._lock:
            pending = self._scene_requests - self._scene_resets
        if pending <= 0:
            return
        if self._host_episodes and (self._control_steps or self._succeeded):
            self._end_episode(self._succeeded)  # the host's episode that this call ends
        else:  # the host's first call: what ran before was the emulator's own, unfinished
            self._control_steps, self._succeeded = 0, False
            self.task.reset_scene(0, self.model, self.data, self.env.engine.rng)
            mujoco.mj_forward(self.model, self.data)
        self._host_episodes = True
        self._scene_resets += pending

    def _publish(self, now: float) -> None:
        m = self._read(self.data, self.env.engine.phys)
        for frame in self.faults.due(now, m):
            if frame.joint_pos is None or frame.joint_vel is None:
                continue
            n = 7 if self.stock else 9  # franka_ros2: the broadcaster has the arm's joints only
            msg = joint_state_message([*self.arm_names, *self.finger_names][:n], frame, now,
                                      self.ros.node.get_clock())
            self.pub_state.publish(msg)
            self.counters["states_published"] += 1
            if self.stock:
                self._publish_stock_extras(now, msg, frame.joint_pos)

    def _publish_stock_extras(self, now: float, arm: JointState, q: np.ndarray) -> None:
        """franka_gripper's finger state (each finger half the width, velocities and
        efforts 0, as its node publishes them) and joint_state_publisher's 30 Hz merge,
        each at its own rate."""
        cfg = self.config
        fingers = JointState(name=list(self.finger_names), position=[float(q[7:9].sum()) / 2] * 2,
                             velocity=[0.0, 0.0], effort=[0.0, 0.0])
        fingers.header.stamp = arm.header.stamp
        if cfg.gripper and self.gripper_node_running and now >= self._next_gripper_state:
            self._next_gripper_state = max(self._next_gripper_state + 1.0 / cfg.gripper_state_rate_hz, now)
            self.pub_fingers.publish(fingers)
            self.counters["gripper_states_published"] += 1
        if cfg.merged_rate_hz > 0 and now >= self._next_merged:
            self._next_merged = max(self._next_merged + 1.0 / cfg.merged_rate_hz, now)
            merged = JointState(name=[*arm.name, *(fingers.name if cfg.gripper else [])],
                                position=[*arm.position, *(fingers.position if cfg.gripper else [])],
                                velocity=[*arm.velocity, *(fingers.velocity if cfg.gripper else [])])
            merged.header.stamp = arm.header.stamp
            self.pub_merged.publish(merged)
            self.counters["merged_published"] += 1

    def _tick(self, now: float, due: int) -> None:
        self._serve_scene_requests()
        if due > 0:
            self._physics(now, due)
        for listener in self._pose_listeners:
            listener(now, self.data)
        self._publish(now)

    # -- operator and counters ---------------------------------------------------------
    def ee_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The simulator's fingertip pose (the truth the tests compare against)."""
        phys = self.env.engine.phys
        return self.task.ee_pos(phys)[0].copy(), self.task.ee_quat(phys)[0].copy()

    def mission(self) -> Mission | None:
        with self._lock:  # one episode's count with its goal (_end_episode)
            targets = getattr(self.task, "targets", None)
            goal = np.asarray(targets[0], dtype=np.float64).copy() if isinstance(targets, np.ndarray) else None
            return Mission(goal=goal, episodes=len(self.episodes), successes=sum(self.episodes))

    def tracking_error(self) -> dict[str, float]:
        """Largest joint error (rad) while the command moves: p50, p99, max."""
        a = np.asarray(self._tracking)
        if not len(a):
            return {"p50": math.nan, "p99": math.nan, "max": math.nan}
        return {"p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)), "max": float(a.max())}

    def summary(self) -> dict[str, Any]:
        return {"robot": "arm", "backend": "ros2_control", "task": self.config.task, "arm_id": self.config.arm_id,
                "topology": self.config.topology, "gripper": self.config.gripper,
                **self.loop_summary(), "rejected": dict(self.rejected),
                **episode_summary(self.episodes, self.episode_ends),
                "simulated_s": round(self._substeps * ARM.PHYSICS_DT, 3),
                "tracking_error_rad": {k: round(v, 5) for k, v in self.tracking_error().items()},
                **self.onset.summary()}

    def close(self) -> None:
        if self._closed:
            return
        super().close()
        self.env.close()
