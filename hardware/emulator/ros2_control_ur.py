"""The robot side of a Universal Robots UR5e under ``ur_robot_driver``, backed by the
simulated UR5e (:mod:`sim2real.sim.arm.ur5e`): what ``ur_control.launch.py ur_type:=ur5e
initial_joint_controller:=forward_position_controller`` presents, with the External
Control program started on the pendant (names and QoS: :mod:`~sim2real.hardware.ros2_control.ur_topics`).

The driver's behaviour played here:

* ``joint_states`` at ``state_rate_hz`` (the real one at 500 Hz, RTDE's rate; every frame
  through :class:`StreamFaults`, as on every other protocol) and the speed scaling at 100 Hz.
* ``forward_position_controller/commands`` streamed to the joints' servos (the robot's
  own joint control), the last one held forever; refused while the program does not run
  (the driver's ``controller_stopper`` has the controller deactivated then: the arm holds).
  Or, with ``controller: forward_velocity_controller``, velocities, the last one held
  forever as well: the joints keep moving until one reaches its position limit, where the
  robot's safety system makes a protective stop.
  Or, with ``controller: scaled_joint_trajectory_controller``, its trajectories, whose
  time runs at the speed scaling (``speed_slider`` times the robot's own: 0 while
  stopped), as the scaled controller's does: a slower slider slows every move.
* A protective stop (:meth:`protective_stop`, the fault a test injects; on the robot a
  collision or a safety limit): the arm stops where it is, the program stops, the speed
  scaling reads 0 until ``dashboard_client/unlock_protective_stop`` (refused for the first
  ``unlock_delay_s``: an e-Series unlocks 5 s after the stop at the earliest) and then
  ``dashboard_client/play``. ``dashboard_client/stop`` stops the program.

The reach runs underneath as an operator would run it: a target in the reach box, an
episode ended on success (the flange within 2 cm) or after ``REACH_SECONDS``, the next
target drawn; the arm is never teleported (:meth:`mission`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64, Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from sim2real.hardware.emulator.base import EmulatorSettings, Mission, MotionOnset, episode_summary
from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.ros2_control_manager import (
    ControllerManagerEmulator,
    forward_command,
    joint_state_message,
    trajectory_command,
)
from sim2real.hardware.ros2_control import topics as T
from sim2real.hardware.ros2_control import ur_topics as UT
from sim2real.hardware.ros2_control.trajectory import JointTarget
from sim2real.sim.arm import ur5e as U
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError


@dataclass
class UrDriverEmulatorConfig:
    seed: int = 0
    """Seed of the reach targets."""
    state_rate_hz: float = 250.0
    """``joint_states`` rate. The real driver's is 500 Hz (RTDE). 250 by default: what the
    backend reads at most (``read_rate_hz``), at half the DDS traffic. Measured here (2
    shared cores, load average ~6, emulator, backend and a reach in one process): 500 asked
    ticks at 479 Hz, of which the backend read 146/s; 250 asked ticks at 250, read 176/s."""
    program_running: bool = True
    """The External Control program runs from the start (play pressed on the pendant)."""
    unlock_delay_s: float = 5.0
    """Seconds after a protective stop before it may be unlocked (the e-Series' 5 s)."""
    domain_id: int | None = None
    """DDS domain (None: ``$ROS_DOMAIN_ID``)."""
    namespace: str = ""
    """The driver's namespace (ur_control.launch.py: the root)."""
    controller: str = "forward_position_controller"
    """The active motion controller (``initial_joint_controller``): one of :data:`~.ur_topics.CONTROLLERS`."""
    speed_slider: float = 1.0
    """The pendant's speed slider (0..1]: the speed scaling while the program runs."""

    def validate(self) -> None:
        if self.controller not in UT.CONTROLLERS:
            raise ConfigError("controller", f"{self.controller!r}: one of {', '.join(UT.CONTROLLERS)}")
        if not (math.isfinite(self.speed_slider) and 0.0 < self.speed_slider <= 1.0):
            raise ConfigError("speed_slider", f"must be in (0, 1], got {self.speed_slider!r}")
        if not (math.isfinite(self.state_rate_hz) and 10.0 <= self.state_rate_hz <= 1000.0):
            raise ConfigError("state_rate_hz", f"must be within 10..1000 Hz, got {self.state_rate_hz!r}")
        if not (math.isfinite(self.unlock_delay_s) and self.unlock_delay_s >= 0.0):
            raise ConfigError("unlock_delay_s", f"must be >= 0 s, got {self.unlock_delay_s!r}")


class UrDriverEmulator(ControllerManagerEmulator):
    """One simulated UR5e behind ur_robot_driver's topics and services, on its own rclpy context."""

    robot = "ur5e"
    physics_dt = U.PHYSICS_DT

    def __init__(self, config: UrDriverEmulatorConfig | None = None, faults: StreamFaults | None = None) -> None:
        self.config = cfg = config or UrDriverEmulatorConfig()
        cfg.validate()
        self.faults = faults or StreamFaults()
        self.model = U.load_ur5e_spec().compile()
        self.data = mujoco.MjData(self.model)
        self.data.qpos[:6] = self.data.ctrl[:6] = U.HOME_QPOS
        mujoco.mj_forward(self.model, self.data)
        self._site = self.model.site("ee").id
        self._rng = np.random.default_rng(cfg.seed)
        self._lock = threading.Lock()
        """Guards the driver's state below between the executor (commands, services) and the serve thread."""
        self.target = JointTarget(U.HOME_QPOS.copy())
        self._q_measured = U.HOME_QPOS.copy()
        """The joints after the latest physics update (the serve thread's; read under the lock)."""
        self.program_running = cfg.program_running
        self.protective_stopped_at: float | None = None
        """Monotonic time of the protective stop in force (None: none)."""
        self.last_command: tuple[float, np.ndarray] | None = None
        self._program_published: bool | None = None
        self.scaled_time = 0.0
        """s: the scaled trajectory controller's clock (advances at the speed scaling)."""
        self._last_physics: float | None = None
        self._next_scaling = 0.0
        self.goal = U.draw_target(self._rng)
        self.data.mocap_pos[0] = self.goal
        self._episode_start: float | None = None
        self.episodes: list[bool] = []
        self.episode_ends: list[float] = []
        self.onset = MotionOnset(threshold=0.001)
        self._start_ros("ur_ros2_control_emulator", "ur arm emulator", cfg.domain_id, cfg.namespace,
                        cfg.state_rate_hz)
        self.counters.update(commands_accepted=0, trajectories_accepted=0, scaling_published=0, protective_stops=0)
        self.rejected: dict[str, int] = {}
        node = self.ros.node
        self.pub_state = node.create_publisher(JointState, UT.JOINT_STATES, T.controller_qos())
        self.pub_scaling = node.create_publisher(Float64, UT.SPEED_SCALING, T.controller_qos())
        self.pub_program = node.create_publisher(Bool, UT.PROGRAM_RUNNING, UT.latched_qos())
        self.interface, topic = UT.CONTROLLERS[cfg.controller]
        if self.interface == "trajectory":
            node.create_subscription(JointTrajectory, topic, self._on_trajectory, T.controller_qos())
        elif self.interface == "velocity":
            node.create_subscription(Float64MultiArray, topic, self._on_velocity, T.controller_qos())
        else:
            node.create_subscription(Float64MultiArray, topic, self._on_forward, T.controller_qos())
        node.create_service(Trigger, UT.PLAY, self._on_play)
        node.create_service(Trigger, UT.STOP, self._on_stop)
        node.create_service(Trigger, UT.UNLOCK_PROTECTIVE_STOP, self._on_unlock)
        self._publish_program()

    @classmethod
    def launch(cls, settings: EmulatorSettings) -> UrDriverEmulator:
        # ur_control.launch.py runs at the root namespace: the driver's /joint_states would
        # meet the deployment graph's, so a run of its own gives the robot a domain apart.
        domain = settings.domain_id if settings.robot_domain_id is None else settings.robot_domain_id
        controller = str(settings.backend_options.get("controller", UrDriverEmulatorConfig.controller))
        return cls(UrDriverEmulatorConfig(seed=settings.seed, domain_id=domain, controller=controller), settings.faults)

    def connect_options(self) -> dict[str, Any]:
        return {"domain_id": self.domain, "namespace": self.config.namespace,
                "arm_state_rate_hz": self.config.state_rate_hz}

    # -- the driver (the executor thread) ------------------------------------------------
    def _reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def _on_forward(self, msg: Float64MultiArray) -> None:
        self._forward_command(msg, lambda q, now: self.target.forward(q, now, U.VELOCITY_LIMIT))

    def _on_velocity(self, msg: Float64MultiArray) -> None:
        # The robot's joint speed limits bound what it does; it moves from where it is.
        self._forward_command(msg, lambda v, now: self.target.velocity(
            np.clip(v, -U.VELOCITY_LIMIT, U.VELOCITY_LIMIT), now, self._q_measured))

    def _forward_command(self, msg: Float64MultiArray, apply: Callable[[np.ndarray, float], None]) -> None:
        """A forward controller's command (positions or velocities) handed to ``apply``
        under the lock, unless malformed or the program does not run."""
        values = forward_command(msg, 6)
        if isinstance(values, str):
            return self._reject(values)
        now = time.monotonic()
        with self._lock:
            if not self.program_running:
                return self._reject("program_not_running")
            apply(values, now)
            self.last_command = (now, values)
        self.counters["commands_accepted"] += 1
        return None

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        goal = trajectory_command(msg, U.JOINTS)
        if isinstance(goal, str):
            return self._reject(goal)
        times, points = goal
        now = time.monotonic()
        with self._lock:
            if not self.program_running:
                return self._reject("program_not_running")
            # From where the arm is, on the controller's scaled clock.
            self.target.trajectory(self.scaled_time, times, points, start=self._q_measured)
            self.last_command = (now, points[-1].copy())
        self.counters["commands_accepted"] += 1
        self.counters["trajectories_accepted"] += 1
        return None

    def speed_scaling(self) -> float:
        """The speed scaling as a factor (called locked): the slider while the program runs
        and no protective stop is in force, else 0."""
        return self.config.speed_slider if self.program_running and self.protective_stopped_at is None else 0.0

    def _hold_here(self) -> None:
        """The arm stops where it is (its brakes; the controller deactivated): called locked."""
        self.target = JointTarget(self._q_measured.copy())

    def protective_stop(self) -> None:
        """A protective stop, as a collision or a safety limit triggers it on the robot."""
        with self._lock:
            self.protective_stopped_at = time.monotonic()
            self.program_running = False
            self._hold_here()
        self.counters["protective_stops"] += 1
        self._publish_program()

    def _on_play(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            if self.protective_stopped_at is not None:
                response.success, response.message = False, "Failed to execute: play (protective stop)"
                return response
            self.program_running = True
            self._hold_here()  # the controller starts from where the arm is
        self._publish_program()
        response.success, response.message = True, "Starting program"
        return response

    def _on_stop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            self.program_running = False
            self._hold_here()
        self._publish_program()
        response.success, response.message = True, "Stopped"
        return response

    def _on_unlock(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            stopped = self.protective_stopped_at
            wait = 0.0 if stopped is None else stopped + self.config.unlock_delay_s - time.monotonic()
            if wait > 0.0:
                response.success = False
                response.message = f"Cannot unlock protective stop until {wait:.1f} s have passed"
                return response
            self.protective_stopped_at = None
        response.success, response.message = True, "Protective stop releasing"
        return response

    def _publish_program(self) -> None:
        """``robot_program_running`` on change only, as io_and_status_controller publishes it."""
        with self._lock:
            running = self.program_running
        if running != self._program_published:
            self._program_published = running
            self.pub_program.publish(Bool(data=running))

    # -- the simulated arm (the serve thread) --------------------------------------------
    def _physics(self, now: float, steps: int) -> None:
        with self._lock:
            if self.interface == "trajectory":
                scaling = self.speed_scaling()
                self.scaled_time += scaling * (now - (now if self._last_physics is None else self._last_physics))
                q_d, qd_d = self.target.sample(self.scaled_time)
                qd_d = qd_d * scaling  # the trajectory's velocity on the wall clock
            else:
                q_d, qd_d = self.target.sample(now)
            self._last_physics = now
            beyond = self.interface == "velocity" and bool(np.any(q_d < U.JOINT_LOWER) or np.any(q_d > U.JOINT_UPPER))
        if beyond:  # a velocity held into a joint's limit: the robot's safety system stops it
            self.protective_stop()
            with self._lock:
                q_d, qd_d = self.target.sample(now)
        # The commanded velocity feeds the servos' damping term, as the robot's joint
        # control tracks a streamed trajectory (without it they lag kd/kp * qdot).
        self.data.ctrl[:6] = np.clip(q_d + U.JOINT_KD / U.JOINT_KP * qd_d, U.JOINT_LOWER, U.JOINT_UPPER)
        mujoco.mj_step(self.model, self.data, nstep=steps)
        self.counters["physics_steps"] += steps
        with self._lock:
            self._q_measured = self.data.qpos[:6].copy()
        self.onset.observe(now, self.data.qpos[:6], self.last_command is not None)
        self._reach(now)

    def _reach(self, now: float) -> None:
        """The operator's reach: timed from the first command, ended on success or timeout."""
        if self.last_command is None:
            return
        if self._episode_start is None:
            self._episode_start = now
        success = float(np.linalg.norm(self.data.site_xpos[self._site] - self.goal)) < U.REACH_RADIUS
        if success or now - self._episode_start > U.REACH_SECONDS:
            with self._lock:  # the count and the next goal change together (mission())
                self.episodes.append(success)
                self.episode_ends.append(now)
                self.goal = U.draw_target(self._rng)
                self.data.mocap_pos[0] = self.goal
            self._episode_start = now

    def _publish(self, now: float) -> None:
        m = Measurements(joint_pos=self.data.qpos[:6].copy(), joint_vel=self.data.qvel[:6].copy(),
                         joint_effort=self.data.actuator_force[:6].copy())
        clock = self.ros.node.get_clock()
        for frame in self.faults.due(now, m):
            if frame.joint_pos is not None and frame.joint_vel is not None:
                self.pub_state.publish(joint_state_message(U.JOINTS, frame, now, clock))
                self.counters["states_published"] += 1
        if now >= self._next_scaling:
            self._next_scaling = max(self._next_scaling + 1.0 / UT.SPEED_SCALING_RATE, now)
            with self._lock:
                scaling = 100.0 * self.speed_scaling()
            self.pub_scaling.publish(Float64(data=scaling))
            self.counters["scaling_published"] += 1

    def _tick(self, now: float, due: int) -> None:
        if due > 0:
            self._physics(now, due)
        self._publish(now)

    # -- operator and counters -----------------------------------------------------------
    def ee_pos(self) -> np.ndarray:
        """The simulator's flange position (the truth the tests compare against)."""
        return self.data.site_xpos[self._site].copy()

    def mission(self) -> Mission | None:
        with self._lock:
            return Mission(goal=self.goal.copy(), episodes=len(self.episodes), successes=sum(self.episodes))

    def summary(self) -> dict[str, Any]:
        return {"robot": self.robot, "backend": "ur", "model": "ur5e", **self.loop_summary(),
                "rejected": dict(self.rejected), **episode_summary(self.episodes, self.episode_ends),
                "program_running": self.program_running, **self.onset.summary()}
