"""HIL-SERL's environment on a real arm: the deployment graph's safety filter, state
topics and cameras (``sim2real hil actor --env ros``).

The actor takes the policy node's place in the graph the launch file (or ``sim2real
deploy --policy external``) starts: it publishes the arm's ``ee_delta`` command on
``raw_command``, so every action, the policy's and the person's, passes the safety
filter before the robot's driver (the hardware bridge and its backend, or the sim
bridge) sees it. It reads what the policy node reads: ``joint_states``, ``ee_pose`` and
``ee_pose_desired`` through the same checks (:class:`~.state_input.StateStreams`), and
rebuilds the arm's proprioception with the task's own ``observe``
(:class:`~.robots.ObservationBuilder`); the scene comes from the cameras.

A real arm runs in real time, so :meth:`GraphArmEnv.step` takes one control period:
the command goes out at the period's start and the observation is read at its end.
Nothing here holds the arm: if the actor stops, stalls or raises, commands stop and the
filter's watchdog holds it. Stale state or images raise :class:`Sim2RealError` rather
than feed the policy an old observation.

Between episodes the arm goes back to its start pose through the filter, at most
``reset_speed``; then an optional service resets the scene.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import cv2
import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.client import Client
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from sim2real.errors import ConfigError, Sim2RealError
from sim2real.policies.common.pacing import pace
from sim2real.policies.hil.config import EnvConfig
from sim2real.policies.hil.env import PROPRIO_BLOCKS, ArmHilEnv, Obs, Step
from sim2real.policies.safety.spaces import command_space
from sim2real.ros_nodes import images
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.base import ThrottledLog
from sim2real.ros_nodes.qos import command_qos, sensor_qos, status_qos
from sim2real.ros_nodes.robots import ObservationBuilder, make_task
from sim2real.ros_nodes.state_input import StateStreams
from sim2real.sim import robot_deployment
from sim2real.sim.arm.base import ArmTask
from sim2real.sim.arm.rotations import quat_conj, quat_mul, quat_to_rotvec
from sim2real.sim.core.deployment import Measurements

DRIVER = "hardware_bridge"
"""The real robot's driver node: its diagnostics say whether the robot is enabled."""
SIM_DRIVER = "sim_bridge"
"""The simulated robot's node (always takes commands)."""
RESET_ROTATION_GAIN = 2.0
"""rad/s of tool rotation per rad of orientation error while returning to the start pose."""


class GraphArmEnv(ArmHilEnv):
    """The arm behind the deployment graph (its DDS domain: ``ROS_DOMAIN_ID``).

    Args:
        config: Environment settings (``config.graph``: topics, timeouts, the return).
        seed: Seed of the start poses' offsets.
        success_fn: The reward classifier (``obs -> bool``): a real arm has no other
            success signal; without one every reward is 0.
        log: Where progress and warnings go.
    """

    paces_itself = True

    def __init__(self, config: EnvConfig, seed: int = 0, success_fn: Callable[[Obs], bool] | None = None,
                 log: Callable[[str], None] = print) -> None:
        task = make_task(config.task, "ee_delta", {} if config.end_on_success else {"end_on_success": False})
        if not isinstance(task, ArmTask):
            raise ConfigError("env.task", f"{config.task} is not an arm task")
        super().__init__(config, task, success_fn)
        self.graph, self.log = config.graph, log
        self.rng = np.random.default_rng(seed)
        self.space = command_space("arm", "ee_delta")
        self._grip_index = self.space.names.index("gripper")
        blocks = PROPRIO_BLOCKS if config.obs_mode == "pixels" else None  # state mode: every block needs a source
        self.builder = ObservationBuilder("arm", task, self.action_dim, blocks=blocks)
        self._lock = threading.Lock()
        self._m = Measurements()
        self._frames: dict[str, tuple[np.ndarray, float]] = {}
        self._rejected_images: dict[str, str] = {}
        self._driver: tuple[str, str] | None = None
        """The hardware bridge's latest (phase, message), if the graph has one."""
        self._sim_driven = False
        """The graph's robot is the simulator's (its bridge reported)."""
        self._last_action = np.zeros(self.action_dim)
        self._next_tick = time.monotonic()
        """When the current control period ends."""
        self._home: tuple[np.ndarray, np.ndarray] | None = None
        self._closed = False
        self.context = Context()
        rclpy.init(context=self.context)
        try:
            self.node = ActorNode(self.context, self.graph.namespace)
            self._subscribe()
            self.executor = SingleThreadedExecutor(context=self.context)
            self.executor.add_node(self.node)
            self._spinner = threading.Thread(target=self._spin, name="hil-graph-env", daemon=True)
            self._spinner.start()
            self._wait_for_graph()
        except BaseException:
            self.close()
            raise

    # -- ROS ---------------------------------------------------------------------------
    def _subscribe(self) -> None:
        node = self.node
        self.streams = StateStreams(node, robot_deployment("arm"), self._on_state)
        topics = self.graph.camera_topics or tuple(f"{cam}/image_raw" for cam in self.cameras)
        self.camera_topics = dict(zip(self.cameras, topics, strict=True))
        for cam, topic in self.camera_topics.items():
            kind = CompressedImage if topic.endswith("/compressed") else Image
            node.create_subscription(kind, topic, self._image_callback(cam), sensor_qos())
        self.pub = node.create_publisher(Float64MultiArray, "raw_command", command_qos())
        node.create_subscription(DiagnosticArray, "diagnostics", self._on_diagnostics, status_qos())
        self._reset_client: Client | None = None
        if self.graph.reset_scene_service:
            self._scene_resetter()  # now, long before its first call (see there)

    def _image_callback(self, cam: str) -> Callable[[Any], None]:
        return lambda msg: self._on_image(cam, msg)

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception as exc:  # the context went away at close, or a callback raised
            if self.context.ok():
                self.log(f"graph environment: executor stopped: {exc!r}")

    def _on_state(self, topic: str, values: dict[str, np.ndarray | None], header: Any) -> None:
        with self._lock:
            for name, value in values.items():
                setattr(self._m, name, value)
            self._m.stamps[topic] = time.monotonic()

    def _on_image(self, cam: str, msg: Any) -> None:
        frame = images.decode_image(msg)
        if isinstance(frame, str):
            self._rejected_images[cam] = frame
            self.node.log_throttled(f"image {cam}", f"rejected {self.camera_topics[cam]}: {frame}", level="error")
            return
        with self._lock:
            self._frames[cam] = (frame, time.monotonic())

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        sim, real = M.node_status(msg, SIM_DRIVER), M.node_status(msg, DRIVER)
        with self._lock:
            self._sim_driven |= sim is not None
            if real is not None:
                self._driver = (real[0].get("phase", ""), real[1])

    def _driver_not_enabled(self) -> str:
        """Why the real robot takes no commands ("" when it does, or when the graph drives
        a simulated one)."""
        with self._lock:
            driver = self._driver
        if driver is None or driver[0] == "enabled":
            return ""
        return driver[1] or driver[0]

    def _wait_for_graph(self) -> None:
        """The safety filter subscribed and every stream flowing, or a one-line error."""
        end = time.monotonic() + self.graph.start_timeout
        while time.monotonic() < end:
            if self.pub.get_subscription_count() > 0 and not self._stale():
                break
            time.sleep(0.02)
        else:
            if self.pub.get_subscription_count() == 0:
                raise Sim2RealError(f"nothing subscribes {self.node.resolve_topic_name('raw_command')} after "
                                    f"{self.graph.start_timeout:.0f} s: is the robot's graph running with "
                                    f"policy:=external (ROS_DOMAIN_ID {self.context.get_domain_id()})?")
            raise Sim2RealError(f"the arm's streams are not all flowing after {self.graph.start_timeout:.0f} s: "
                                f"{'; '.join(self._stale())}")
        # Which bridge drives the robot, from its own diagnostics (1 Hz): the graph's node
        # names arrive by discovery, which can lag the data streams, so they cannot say
        # there is no hardware bridge.
        while self._driver is None and not self._sim_driven and time.monotonic() < end:
            time.sleep(0.02)
        if self._driver is None and not self._sim_driven:
            raise Sim2RealError(f"no diagnostics from {DRIVER} or {SIM_DRIVER} within "
                                f"{self.graph.start_timeout:.0f} s: is the robot's graph complete?")
        if self._driver is not None:  # a real robot: nothing moves until a person enables it
            if self._driver_not_enabled():
                self.log(f"graph environment: waiting for the robot to be enabled (/{DRIVER}/enable, or auto_enable)")
            while self._driver_not_enabled() and time.monotonic() < end:
                time.sleep(0.05)
            if self._driver_not_enabled():
                raise Sim2RealError(f"the robot was not enabled within {self.graph.start_timeout:.0f} s "
                                    f"({self._driver_not_enabled()})")
        m = self.measurements()
        assert m.ee_pos is not None and m.ee_quat is not None
        position = np.array(self.graph.reset_position, dtype=float) if self.graph.reset_position else m.ee_pos
        self._home = (position, m.ee_quat.copy())
        self.log(f"graph environment: the arm's start pose {np.round(position, 3).tolist()} m; "
                 f"cameras {self.camera_topics or 'none'}")

    def _stale(self) -> list[str]:
        """What is missing or too old, one phrase each (empty: all fresh)."""
        now, out = time.monotonic(), []
        with self._lock:
            missing = self.builder.missing(self._m)
            ages = {t: now - s for t, s in self._m.stamps.items()}
            frames = {cam: now - t for cam, (_, t) in self._frames.items()}
        if missing:
            out.append(f"no {', '.join(missing)} yet")
        for topic in robot_deployment("arm").state_topics():
            age = ages.get(topic)
            if age is None or age > self.graph.state_timeout:
                out.append(f"{topic} {'never received' if age is None else f'{age * 1e3:.0f} ms old'}")
        for cam, topic in self.camera_topics.items():
            age = frames.get(cam)
            if age is None or age > self.graph.image_timeout:
                why = self._rejected_images.get(cam, "never received" if age is None else f"{age * 1e3:.0f} ms old")
                out.append(f"{topic} {why}")
        return out

    # -- the arm -----------------------------------------------------------------------
    def _command(self, action: np.ndarray) -> None:
        """Publish ``action`` (the task's layout, in [-1, 1]) as the arm's ee_delta command."""
        full = np.zeros(self.space.size)
        full[: min(self.action_dim, 6)] = action[:6]
        if self.has_gripper:
            full[self._grip_index] = action[-1]
        else:  # the task holds its tool: the width it trained with
            full[self._grip_index] = (self.task.fixed_gripper_width - self.space.offset[self._grip_index]) \
                / self.space.scale[self._grip_index]
        self.pub.publish(M.command_array(self.space.action_to_command(full), self.space.names))

    def _hold(self) -> None:
        """Command no motion (the gripper as it is)."""
        action = np.zeros(self.action_dim)
        if self.has_gripper:
            action[-1] = self._gripper_command
        self._command(action)

    def _tick(self) -> None:
        """Sleep to the end of this control period (``_next_tick``)."""
        self._next_tick = pace(self._next_tick, self.control_dt)

    def _restart_clock(self) -> None:
        """The control period starting now ends one period from now."""
        self._next_tick = time.monotonic() + self.control_dt

    def _full_observation(self) -> np.ndarray:
        halted = self._driver_not_enabled()
        if halted:
            raise Sim2RealError(f"the robot no longer takes commands ({DRIVER}: {halted}): stopping; enable it "
                                f"again and restart the actor")
        stale = self._stale()
        if stale:
            raise Sim2RealError(f"the arm's state is stale ({'; '.join(stale)}): stopping; the safety filter "
                                f"holds the arm")
        return self.builder.build(self.measurements(), self._last_action)

    def _advance(self, action: np.ndarray) -> Step:
        self._command(action)
        self._last_action = np.asarray(action, dtype=float)
        self._tick()
        # A real arm reports no success of its own: the classifier decides (ArmHilEnv.step).
        return self._full_observation(), 0.0, False, False, {"success": False}

    def _restart(self, seed: int | None) -> np.ndarray:
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._return_to_start()
        if self.graph.reset_scene_service:
            self._reset_scene()
        self._last_action = np.zeros(self.action_dim)
        self.builder.restart()
        return self._full_observation()

    def _return_to_start(self) -> None:
        """Drive the tool to the start pose (plus this episode's offset) through the filter."""
        assert self._home is not None
        position = self._home[0] + self.rng.uniform(-1.0, 1.0, 3) * self.graph.reset_noise
        lin_scale, ang_scale = self.space.scale[0], self.space.scale[3]
        end = time.monotonic() + self.graph.reset_timeout
        self._restart_clock()
        while True:
            m, stale = self.measurements(), self._stale()
            if stale or m.ee_pos is None or m.ee_quat is None:
                raise Sim2RealError(f"returning to the start pose: the arm's state is stale ({'; '.join(stale)})")
            error = position - m.ee_pos
            turn = quat_to_rotvec(quat_mul(self._home[1], quat_conj(m.ee_quat)))
            if np.linalg.norm(error) <= self.graph.reset_tolerance and np.linalg.norm(turn) <= 0.05:
                return
            if time.monotonic() > end:
                self.log(f"graph environment: the arm did not reach its start pose in {self.graph.reset_timeout:.0f} s "
                         f"({np.linalg.norm(error) * 1e3:.0f} mm away); the episode starts where it is")
                return
            velocity = 4.0 * error
            speed = np.linalg.norm(velocity)
            if speed > self.graph.reset_speed:
                velocity *= self.graph.reset_speed / speed
            action = np.zeros(self.action_dim)
            action[:3] = velocity / lin_scale
            action[3:6] = np.clip(RESET_ROTATION_GAIN * turn / ang_scale, -1.0, 1.0)
            if self.has_gripper:
                action[-1] = self._gripper_command
            self._command(np.clip(action, -1.0, 1.0))
            self._tick()

    def _scene_resetter(self) -> Client:
        """The client of ``reset_scene_service``, kept for the node's life: a client made
        just before its call can find the server before the server has found the client's
        response reader, and then the answer is dropped ("client will not receive
        response") and the reset hangs."""
        name = self.node.resolve_service_name(self.graph.reset_scene_service)
        if self._reset_client is None or self._reset_client.srv_name != name:
            if self._reset_client is not None:
                self.node.destroy_client(self._reset_client)
            self._reset_client = self.node.create_client(Trigger, name)
        return self._reset_client

    def _reset_scene(self) -> None:
        client = self._scene_resetter()
        if not client.service_is_ready() and not client.wait_for_service(timeout_sec=5.0):
            raise Sim2RealError(f"no service {self.graph.reset_scene_service} (env.graph.reset_scene_service)")
        future = client.call_async(Trigger.Request())
        end = time.monotonic() + self.graph.reset_scene_timeout
        self._restart_clock()
        while not future.done() and time.monotonic() < end:
            # Hold the arm where it is while the scene is reset (a person may take
            # a while): the filter's watchdog would hold it too, but counted as an
            # intervention in every episode.
            self._hold()
            self._tick()
        result = future.result() if future.done() else None
        if result is None or not result.success:
            if not future.done():
                client.remove_pending_request(future)  # forget the unanswered request
            why = result.message if result is not None else f"no answer in {self.graph.reset_scene_timeout:.0f} s"
            raise Sim2RealError(f"{self.graph.reset_scene_service} failed: {why}")
        self._restart_clock()

    def _images(self) -> dict[str, np.ndarray]:
        size = self.config.image_size
        with self._lock:
            frames = {cam: self._frames[cam][0] for cam in self.cameras}
        return {cam: square(frame, size) for cam, frame in frames.items()}

    def measurements(self) -> Measurements:
        with self._lock:
            return replace(self._m, stamps=dict(self._m.stamps))

    def views(self, cameras: tuple[str, ...], size: tuple[int, int]) -> dict[str, np.ndarray]:
        with self._lock:
            frames = {cam: self._frames[cam][0] for cam in cameras if cam in self._frames}
        return {cam: f if (f.shape[1], f.shape[0]) == size else cv2.resize(f, size, interpolation=cv2.INTER_AREA)
                for cam, f in frames.items()}

    def close(self) -> None:
        if getattr(self, "executor", None) is not None:
            self.executor.shutdown(timeout_sec=2.0)
        spinner = getattr(self, "_spinner", None)
        if spinner is not None and spinner.is_alive():
            spinner.join(timeout=2.0)
        if getattr(self, "node", None) is not None and not self._closed:
            self.node.destroy_node()
        self._closed = True
        if self.context.ok():
            rclpy.shutdown(context=self.context)


def square(frame: np.ndarray, side: int) -> np.ndarray:
    """The centre square of ``frame`` resized to ``side`` pixels: a camera's 4:3 image
    as the simulated cameras render it (MuJoCo's field of view is vertical)."""
    h, w = frame.shape[:2]
    s = min(h, w)
    top, left = (h - s) // 2, (w - s) // 2
    crop = frame[top : top + s, left : left + s]
    if s == side:
        return np.ascontiguousarray(crop)
    return cv2.resize(crop, (side, side), interpolation=cv2.INTER_AREA)


class ActorNode(ThrottledLog, Node):
    """The actor's plain rclpy node (no lifecycle: it lives as long as the environment)."""

    def __init__(self, context: Context, namespace: str) -> None:
        super().__init__("hil_actor", namespace=namespace, context=context)
