"""``recorder``: records chosen topics into an MCAP rosbag2 with the ``rosbags`` library.

The bag is a standard rosbag2 folder (``metadata.yaml`` + ``.mcap``) that
``ros2 bag info/play`` read. Messages are stored as received (serialized CDR from a
raw subscription), so recording costs no deserialization.
``configure`` opens the bag, ``activate`` starts writing, ``cleanup``/shutdown
(SIGINT and SIGTERM included, see ``run_node``) closes it and writes ``metadata.yaml``.

Every ``flush_period`` seconds the pending messages go to disk as one complete MCAP
chunk (the writer would otherwise hold up to 1 MiB in memory: minutes of a slow
topic). A recorder killed outright (kill -9, power loss) thus loses at most that much,
and ``sim2real bag recover PATH`` rewrites everything up to the last complete chunk
into a readable bag.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from sim2real.ros_nodes.base import ManagedNode, run_node
from sim2real.ros_nodes.settings import RecorderSettings

KNOWN_TYPES: dict[str, str] = {
    "joint_states": "sensor_msgs/msg/JointState",
    "odom": "nav_msgs/msg/Odometry",
    "imu": "sensor_msgs/msg/Imu",
    "ee_pose": "geometry_msgs/msg/PoseStamped",
    "ee_pose_desired": "geometry_msgs/msg/PoseStamped",
    "goal": "geometry_msgs/msg/PoseStamped",
    "cmd_vel": "geometry_msgs/msg/Twist",
    "raw_command": "std_msgs/msg/Float64MultiArray",
    "command": "std_msgs/msg/Float64MultiArray",
    "diagnostics": "diagnostic_msgs/msg/DiagnosticArray",
    "estop": "std_msgs/msg/Bool",
    "episodes": "std_msgs/msg/String",
    "camera/image_raw": "sensor_msgs/msg/Image",
    "parameter_events": "rcl_interfaces/msg/ParameterEvent",
}
"""Types of the deployment graph's topics (others are looked up in the ROS graph)."""

def message_class(type_name: str) -> type:
    """``pkg/msg/Name`` -> the rclpy message class."""
    pkg, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


class Recorder(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("recorder", RecorderSettings, **kwargs)
        self.writer = None
        self.counts: dict[str, int] = {}
        self.flushes = 0
        self._connections: dict[str, Any] = {}
        self._flush_timer = None

    def load(self) -> None:
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore

        out = Path(self.param("output"))
        if out.exists():
            raise FileExistsError(f"{out} exists; rosbag2 output folders must be new")
        out.parent.mkdir(parents=True, exist_ok=True)
        store = get_typestore(Stores.ROS2_KILTED)
        graph = dict(self.get_topic_names_and_types())
        self.writer = Writer(out, version=9, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        qos = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.BEST_EFFORT,
                         durability=DurabilityPolicy.VOLATILE)
        for topic in self.param("topics"):
            resolved = self.resolve_topic_name(topic)
            type_name = KNOWN_TYPES.get(topic.lstrip("/")) or (graph.get(resolved) or [None])[0]
            if type_name is None:
                self.get_logger().error(f"not recording {resolved}: unknown type (not yet advertised?)")
                continue
            self._connections[resolved] = self.writer.add_connection(resolved, type_name, typestore=store)
            self.counts[resolved] = 0
            self.create_subscription(message_class(type_name), resolved,
                                     lambda data, t=resolved: self._write(t, data), qos, raw=True)
        self.get_logger().info(f"recording {sorted(self._connections)} to {out}")

    def _write(self, topic: str, data: bytes) -> None:
        if not self.active or self.writer is None:
            return
        self.writer.write(self._connections[topic], self.get_clock().now().nanoseconds, data)
        self.counts[topic] += 1

    def start(self) -> None:
        period = float(self.param("flush_period"))
        if period > 0:
            self._flush_timer = self.create_control_timer(period, self.flush)

    def stop(self) -> None:
        if self._flush_timer is not None:
            self.destroy_timer(self._flush_timer)
            self._flush_timer = None
        self.flush()

    def flush(self) -> None:
        """Write the pending messages to disk as a complete chunk and sync the file."""
        # rosbags' MCAP writer keeps the open chunk in memory (`storage.chunk`) and has no
        # public flush; `close_chunk` is what its own close() calls. The recorder tests
        # read the file mid-recording, so a change in rosbags cannot slip by unnoticed.
        storage = getattr(self.writer, "storage", None)
        if storage is None or not hasattr(storage, "close_chunk") or not storage.chunk.bio.tell():
            return
        storage.close_chunk()
        storage.bio.flush()
        os.fsync(storage.bio.fileno())
        self.flushes += 1

    def unload(self) -> None:
        self.close()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def destroy_node(self) -> None:
        self.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    return run_node(Recorder, args)


if __name__ == "__main__":
    raise SystemExit(main())
