"""Test helpers for the ROS 2 node tests: a private DDS domain per test (on loopback),
a fake robot that publishes state and a fake policy that publishes raw commands, and
a recorder of what reaches the robot."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from dds_domains import unique_domain_id

os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"  # before any DDS participant exists


def deploy_json(*args: str, timeout: float = 180.0) -> tuple[dict[str, Any], str]:
    """``sim2real deploy ARGS --json`` in its own process on loopback DDS and a fresh
    domain: (its summary, its log). Fails the test on a non-zero exit."""
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "sim2real", "deploy", *args, "--domain-id", str(unique_domain_id()), "--json"]
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout), done.stderr


def wait_for(predicate: Callable[[], bool], timeout: float, step: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


class Harness:
    """One rclpy context with the nodes under test and a probe node, spun in a thread."""

    def __init__(self, domain_id: int | None = None) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.domain_id = unique_domain_id() if domain_id is None else domain_id
        self.context = Context()
        rclpy.init(context=self.context, domain_id=self.domain_id)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.nodes: list[Any] = []
        self._thread: threading.Thread | None = None

    def add(self, node: Any) -> Any:
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def spin(self) -> None:
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except BaseException as exc:  # a dead spin thread silently starves every probe: keep why
            self.spin_error = exc
            raise

    spin_error: BaseException | None = None

    def state(self) -> str:
        """Whether the probes are still being served, for a failing test's message."""
        alive = self._thread is not None and self._thread.is_alive()
        return f"test executor {'spinning' if alive else 'stopped'}" + (
            f" ({self.spin_error!r})" if self.spin_error is not None else "")

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        import rclpy

        self.executor.shutdown(timeout_sec=2.0)
        # Let spin() return before the nodes go: destroying a node the spinning thread still
        # waits on raises InvalidHandle there (seen in a fresh-clone CI run's warnings).
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        for node in self.nodes:
            node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)


def make_probe(context: Any, robot: str = "arm") -> Any:
    """A node standing in for the robot driver and the policy."""
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool, Float64MultiArray

    from sim2real.ros_nodes import messages as M
    from sim2real.ros_nodes.qos import command_qos, observer_qos, sensor_qos, status_qos
    from sim2real.sim import robot_deployment
    from sim2real.sim.arm import constants as ARM

    class Probe(Node):
        def __init__(self) -> None:
            super().__init__("probe", context=context)
            self.info = robot_deployment(robot)
            self.pub_joints = self.create_publisher(JointState, "joint_states", sensor_qos())
            self.pub_ee = self.create_publisher(PoseStamped, "ee_pose", sensor_qos())
            self.pub_raw = self.create_publisher(Float64MultiArray, "raw_command", command_qos())
            self.pub_estop = self.create_publisher(Bool, "estop", status_qos())
            self.commands: list[tuple[float, np.ndarray]] = []
            self.diagnostics: list[Any] = []
            self.lock = threading.Lock()
            self.create_subscription(Float64MultiArray, "command", self._on_command, observer_qos())
            self.create_subscription(DiagnosticArray, "diagnostics", self._on_diag, status_qos())
            self.q = ARM.HOME_QPOS.copy()

        def _on_command(self, msg: Float64MultiArray) -> None:
            with self.lock:
                self.commands.append((time.monotonic(), np.asarray(msg.data)))

        def _on_diag(self, msg: DiagnosticArray) -> None:
            with self.lock:
                self.diagnostics += [s for s in msg.status if s.name.startswith("safety_filter")]

        def publish_state(self, names: list[str] | None = None, n_values: int | None = None) -> None:
            stamp = self.get_clock().now().to_msg()
            names = list(self.info.joints) if names is None else names
            n = len(names) if n_values is None else n_values
            pos = np.r_[self.q, 0.02, 0.02][:n] if n <= 9 else np.zeros(n)
            self.pub_joints.publish(M.joint_state(names, pos, np.zeros(n), None, stamp))
            self.pub_ee.publish(M.pose_stamped(np.array([0.5, 0.0, 0.4]), np.array([0.0, 1.0, 0.0, 0.0]), stamp))

        def publish_raw(self, values: Any, labels: tuple[str, ...] = ()) -> None:
            msg = Float64MultiArray()
            msg.data = [float(v) for v in values]
            if labels:
                msg = M.command_array(values, labels)
            self.pub_raw.publish(msg)

        def received(self) -> list[tuple[float, np.ndarray]]:
            with self.lock:
                return list(self.commands)

        def last_diag_values(self) -> dict[str, str]:
            with self.lock:
                return {kv.key: kv.value for kv in self.diagnostics[-1].values} if self.diagnostics else {}

    return Probe()


def safety_node(context: Any, robot: str = "arm", **params: Any) -> Any:
    from rclpy.parameter import Parameter

    from sim2real.ros_nodes.graph import config_dir, load_config
    from sim2real.ros_nodes.safety_filter import SafetyFilterNode

    values = {**load_config(config_dir() / f"{robot}.yaml", context.get_domain_id())["safety_filter"], **params}
    node = SafetyFilterNode(context=context, parameter_overrides=[Parameter(k, value=v) for k, v in values.items()])
    node.trigger_configure()
    node.trigger_activate()
    return node


def export_tiny_policy(task_name: str, action_mode: str, out: Path, task_options: dict | None = None,
                       observation_layout: list | None = None, actor=None) -> Path:
    """A random 2-layer tanh MLP (or ``actor``, a torch module) for ``task_name`` written
    by ``sim2real.policies.export`` (ONNX graph, metadata JSON with its SHA-256)."""
    import hashlib
    import json

    import torch

    from sim2real.policies.export.metadata import build_metadata
    from sim2real.policies.export.onnx import export_onnx
    from sim2real.sim import REGISTRY

    task_cls = REGISTRY.get(task_name)
    task = task_cls(num_envs=1, action_mode=action_mode, **(task_options or {}))
    obs_layout = observation_layout or task.observation_layout()
    obs_size = sum(n for _, n in obs_layout)
    act_size = sum(n for _, n in task.action_layout())
    torch.manual_seed(0)
    actor = actor or torch.nn.Sequential(torch.nn.Linear(obs_size, 16), torch.nn.Tanh(), torch.nn.Linear(16, act_size),
                                torch.nn.Tanh())
    out.mkdir(parents=True, exist_ok=True)
    path = out / "policy.onnx"
    export_onnx(actor, obs_size, path)
    state = {"robot": task_cls.robot, "task": f"sim2real/{task_name}-v0", "task_name": task_cls.name,
             "action_mode": action_mode, "algo": "ppo", "obs_size": obs_size, "observation_layout": obs_layout,
             "action_size": act_size, "action_layout": task.action_layout(), "control_dt": task_cls.control_dt,
             "physics_dt": task_cls.physics_dt}
    meta = build_metadata(fmt="onnx", file=path.name, sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                          state=state, normalization={"enabled": False}, action_scaling=None,
                          training={"run": "tiny-random"}, verification={}, task_options=task_options)
    (out / "policy.onnx.json").write_text(json.dumps(meta))
    return path
