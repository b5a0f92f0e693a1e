"""The simulated robot behind the sim bridge: a sim2real ``SimEnv`` driven by physical
commands, read out as the measurements a real robot's driver would publish.

No ROS here, so the bridge node stays thin and this is testable on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.policies.safety.spaces import CommandSpace, command_space
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.env import SimEnv
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.frames import specific_force
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.core.rendering import OffscreenRenderer
from sim2real.sim.quadruped.velocity import Velocity


@dataclass
class RobotPose:
    """The positions a picture of the robot is drawn from."""

    qpos: np.ndarray
    mocap_pos: np.ndarray
    mocap_quat: np.ndarray
    time: float
    heightfields_changed: bool
    """A reset drew new terrain since the last pose: upload it before drawing."""


@dataclass
class EpisodeRecord:
    index: int
    success: bool
    steps: int
    seconds: float
    metrics: dict[str, float]
    task: dict[str, Any]
    under_latch: bool = False
    """It ran under a latched safety guard (set by the sim bridge): the filter's, not the policy's."""


class SimRobot:
    """One robot in MuJoCo, commanded in physical units (see ``policies/safety/spaces.py``).

    Args:
        robot: ``arm``, ``quadruped`` or ``drone``.
        task: Registry name of the task (default: the robot's deployment task).
        action_mode: Default: the robot's deployment mode.
        dr: Domain-randomization preset (``none``, ``train``, ``heldout``).
        seed: Seed of resets (targets, commands, randomization).
        task_options: Keyword options of the task.
        render_size: ``(width, height)`` of :meth:`render`'s frames (``(0, 0)``: no camera).
        cameras: The MuJoCo cameras :meth:`render` may be asked for (empty: the task's
            render camera); an unknown name is a ``ConfigError`` here, not at the first frame.
    """

    def __init__(self, robot: str, task: str = "", action_mode: str = "", dr: str = "none", seed: int = 0,
                 task_options: dict[str, Any] | None = None, render_size: tuple[int, int] = (0, 0),
                 cameras: tuple[str, ...] = ()) -> None:
        info = robot_deployment(robot)
        self.robot = robot
        self.info = info
        self.task_name = task or info.task
        mode, options = info.driver_mode(action_mode or info.action_mode, task_options or {})
        self.env = SimEnv(REGISTRY.get(self.task_name), action_mode=mode, dr=dr, seed=seed, **options)
        self.task = self.env.task
        self.space: CommandSpace = command_space(robot, mode, options.get("action_scale"))
        self.control_dt = float(self.task.control_dt)
        self.seed = seed
        self.episodes: list[EpisodeRecord] = []
        self._steps = 0
        self._metric_sums: dict[str, float] = {}
        self.metric_totals: dict[str, float] = {}
        """Each task metric summed over every step of the run (all episodes)."""
        self._last_info: dict[str, Any] = {}
        self._previous_base_vel: np.ndarray | None = None
        self._read = info.state_reader(self.task, self.env.model)
        self.render_size = render_size
        self.cameras = self._known_cameras(cameras) if render_size[0] > 0 else ()
        """The cameras :meth:`render` draws, checked against the model."""
        self._renderer: OffscreenRenderer | None = None
        self._render_data: Any = None
        self._heightfields_stale = True
        _, reset_info = self.env.reset(seed=seed)
        self.task_state: dict[str, Any] = reset_info.get("task", {})

    # -- stepping --------------------------------------------------------------------
    def hold_command(self) -> np.ndarray:
        """What the driver applies with no (fresh) command: zero motion for the arm and the
        quadruped (hold setpoint / default pose), motors off for the drone."""
        if self.info.motors_off_without_command:
            return np.zeros(self.space.size)
        return self.space.hold.copy()

    def step(self, command: np.ndarray, under_latch: bool = False) -> EpisodeRecord | None:
        """One control period under ``command``; returns the episode's record when it ended
        (the robot is then reset with a new target or velocity command). ``under_latch``:
        whether the episode, should it end now, ran under a latched safety guard; it is in
        the record before the record is in :attr:`episodes`, so no reader sees it unset."""
        action = self.space.command_to_action(command)
        self._previous_base_vel = self.env.data.qvel[0:3].copy() if self.info.floating_base else None
        _, _, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        self._last_info = info
        for k, v in info["metrics"].items():
            self._metric_sums[k] = self._metric_sums.get(k, 0.0) + float(v)
            self.metric_totals[k] = self.metric_totals.get(k, 0.0) + float(v)
        if terminated or truncated:
            rec = EpisodeRecord(
                index=len(self.episodes), success=bool(info.get("is_success", False)), steps=self._steps,
                seconds=self._steps * self.control_dt,
                metrics={k: v / self._steps for k, v in self._metric_sums.items()}, task=info.get("task", {}),
                under_latch=under_latch,
            )
            self.episodes.append(rec)
            self._steps, self._metric_sums = 0, {}
            _, reset_info = self.env.reset()
            self._heightfields_stale = True  # a reset may draw new terrain
            self._previous_base_vel = None  # no velocity change across a reset
            self.task_state = reset_info.get("task", {})
            return rec
        return None

    @property
    def sim_time(self) -> float:
        return float(self.env.data.time)

    @property
    def metrics(self) -> dict[str, float]:
        return dict(self._last_info.get("metrics", {}))

    # -- read-out ----------------------------------------------------------------------
    def measure(self) -> Measurements:
        """What the robot's driver publishes now."""
        return self._read(self.env.data, self.env.engine.phys)

    def set_velocity_command(self, cmd: np.ndarray) -> None:
        """Operator velocity command (quadruped tasks with a ``command`` block)."""
        if isinstance(self.task, Velocity):
            self.task.set_command(0, cmd)

    def linear_acceleration(self) -> np.ndarray:
        """Body-frame specific force over the last control period, as an IMU's
        delta-velocity output gives it (gusts included)."""
        d = self.env.data
        previous = self._previous_base_vel
        return specific_force(d.qpos[3:7], d.qvel[0:3], d.qvel[0:3] if previous is None else previous,
                              self.control_dt)

    # -- cameras -----------------------------------------------------------------------
    def _known_cameras(self, names: tuple[str, ...]) -> tuple[str, ...]:
        import mujoco

        names = tuple(n for n in names if n) or (self.env.camera or "",)
        model = self.env.model
        known = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]
        unknown = [n for n in names if n and n not in known]
        if unknown:
            raise ConfigError("cameras", f"{', '.join(unknown)}: no such camera in {self.task_name}; "
                              f"its cameras: {', '.join(str(k) for k in known) or 'none'}")
        return names

    def pose(self) -> RobotPose:
        """A copy of what a picture of the robot needs, taken on the control thread (cheap:
        positions only), for :meth:`render_pose` on another thread."""
        d = self.env.data
        stale, self._heightfields_stale = self._heightfields_stale, False
        return RobotPose(d.qpos.copy(), d.mocap_pos.copy(), d.mocap_quat.copy(), float(d.time), stale)

    def render_pose(self, pose: RobotPose, camera: str | None = None) -> np.ndarray | None:
        """The ``[H, W, 3]`` uint8 frame of ``camera`` (default: the first of
        :attr:`cameras`; ``""``: MuJoCo's free camera) of ``pose``, drawn for a live view
        (no shadows, reflections or multisampling) from the renderer's own copy of the
        data, so stepping goes on meanwhile; ``None`` when made without a ``render_size``.

        One thread renders at a time; the GL context is made by :meth:`prepare_views`, or
        here on the first call."""
        import mujoco

        if not self.cameras:
            return None
        model = self.env.model
        if self.prepare_views():
            pose.heightfields_changed = True
        renderer = self._renderer
        assert renderer is not None  # prepare_views made it (there are cameras)
        if pose.heightfields_changed:
            for h in range(model.nhfield):
                renderer.upload_heightfield(model, h)
        data = self._render_data
        data.qpos[:], data.mocap_pos[:], data.mocap_quat[:] = pose.qpos, pose.mocap_pos, pose.mocap_quat
        data.time = pose.time
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)  # tracking cameras follow the centre of mass
        mujoco.mj_camlight(model, data)
        name = self.cameras[0] if camera is None else camera
        return renderer.render(model, data, name or None)

    def prepare_views(self) -> bool:
        """Make the live renderer's GL context now, if it is not made yet (whether it was).
        Call it before a control loop starts: making it holds the GIL for ~200 ms
        (measured idle; longer on a busy machine), which stalled every thread of the
        process, the real-time control loop's too, when the first frame made it. A live
        renderer leaves its context unbound, so another thread draws with it later."""
        import mujoco

        if self._renderer is not None or not self.cameras:
            return False
        self._renderer = OffscreenRenderer(self.env.model, *self.render_size, live=True)
        self._render_data = mujoco.MjData(self.env.model)
        return True

    def render(self, camera: str | None = None) -> np.ndarray | None:
        """:meth:`render_pose` of the current pose (on the calling thread)."""
        return self.render_pose(self.pose(), camera)

    def close(self) -> None:
        """Release the GL context (the simulation itself needs no closing)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
