"""Recording survives the ways a run ends: Ctrl-C in a terminal (SIGINT to the whole
process group, then launch's own SIGINT), SIGTERM, and kill -9 (then `sim2real bag
recover`). Nodes run as their own processes, as under `ros2 launch`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from ros_harness import Harness, wait_for

from sim2real.ros_nodes.bag_recovery import MAGIC, recover


def read_bag(path: Path) -> dict[str, int]:
    """Messages per topic, read with rosbags (what standard tools would see)."""
    from rosbags.rosbag2 import Reader

    counts: dict[str, int] = {}
    with Reader(path) as reader:
        for conn, _stamp, _data in reader.messages():
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
    return counts


class Publishing:
    """A command publisher at 100 Hz in this process (the recorded topic)."""

    def __init__(self) -> None:
        from rclpy.node import Node
        from std_msgs.msg import Float64MultiArray

        self.h = Harness()
        node = self.h.add(Node("publisher", context=self.h.context))
        pub = node.create_publisher(Float64MultiArray, "command", 10)
        self.sent = 0

        def tick() -> None:
            pub.publish(Float64MultiArray(data=[1.0, 2.0]))
            self.sent += 1

        node.create_timer(0.01, tick)
        self.h.spin()

    def env(self) -> dict[str, str]:
        return {**os.environ, "ROS_DOMAIN_ID": str(self.h.domain_id), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


def start(module: str, env: dict[str, str], *ros_args: str) -> subprocess.Popen:
    # A process group of its own, like the processes of a terminal's foreground job.
    return subprocess.Popen([sys.executable, "-m", f"sim2real.ros_nodes.{module}", "--ros-args", *ros_args],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def recording(bag: Path) -> bool:
    files = list(bag.glob("*.mcap"))
    return bool(files) and files[0].stat().st_size > 2000  # past the header: chunks are on disk


@pytest.mark.parametrize("how", ["ctrl_c", "sigterm"])
def test_a_signal_ends_every_node_cleanly_and_finalises_the_bag(tmp_path: Path, how: str) -> None:
    source = Publishing()
    bag = tmp_path / "bag"
    procs = {}
    try:
        env = source.env()
        procs["recorder"] = start("recorder", env, "-p", f"output:={bag}", "-p", "topics:=[command]",
                                  "-p", "flush_period:=0.5")
        procs["safety_filter"] = start("safety_filter", env, "-p", "robot:=drone",
                                       "-p", f"latch_file:={tmp_path / 'latch.json'}")
        assert wait_for(lambda: recording(bag), 60.0), procs["recorder"].stderr
        time.sleep(1.5)
        for p in procs.values():
            if how == "ctrl_c":  # the terminal signals the group, then launch forwards one more
                os.killpg(p.pid, signal.SIGINT)
                time.sleep(0.05)
                os.kill(p.pid, signal.SIGINT)
            else:
                p.terminate()
        codes = {name: p.wait(timeout=30) for name, p in procs.items()}
        errors = {name: p.stderr.read()[-400:] for name, p in procs.items() if codes[name]}
        assert codes == {"recorder": 0, "safety_filter": 0}, errors
        assert (bag / "metadata.yaml").exists()
        assert read_bag(bag)["/command"] > 50
    finally:
        source.h.close()
        for p in procs.values():
            if p.poll() is None:
                p.kill()


def test_kill_9_then_recover_gives_a_readable_bag(tmp_path: Path) -> None:
    source = Publishing()
    bag = tmp_path / "bag"
    try:
        proc = start("recorder", source.env(), "-p", f"output:={bag}", "-p", "topics:=[command]",
                     "-p", "flush_period:=0.5")
        assert wait_for(lambda: recording(bag), 60.0)
        time.sleep(1.5)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        source.h.close()
    assert not (bag / "metadata.yaml").exists()
    with pytest.raises(Exception):  # noqa: B017  (rosbags' own error types vary by version)
        read_bag(bag)
    out = subprocess.run([sys.executable, "-m", "sim2real", "bag", "recover", str(bag), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    recovered = read_bag(tmp_path / "bag-recovered")
    assert recovered["/command"] > 100  # seconds at 100 Hz, less at most the last flush period


def test_recover_keeps_every_complete_chunk_of_a_torn_file(tmp_path: Path) -> None:
    """Cut a finished recording anywhere: recovery never fails and keeps a prefix."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    Msg = store.types["std_msgs/msg/Float64MultiArray"]
    layout = store.types["std_msgs/msg/MultiArrayLayout"]([], 0)
    full = tmp_path / "full"
    writer = Writer(full, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.open()
    conn = writer.add_connection("/command", "std_msgs/msg/Float64MultiArray", typestore=store)
    storage = writer.storage
    for i in range(300):
        writer.write(conn, i * 10_000_000, store.serialize_cdr(Msg(layout, np.array([float(i)])), conn.msgtype))
        if i % 50 == 49:
            storage.close_chunk()  # what the recorder's flush does
    writer.close()
    data = (full / "full.mcap").read_bytes()
    assert recover(full, tmp_path / "whole").messages == {"/command": 300}
    last = 0
    for k, cut in enumerate(sorted({len(MAGIC), 100, 2000, len(data) // 3, len(data) // 2, len(data) - 400})):
        torn = tmp_path / f"torn{k}"
        torn.mkdir()
        (torn / f"torn{k}.mcap").write_bytes(data[:cut])
        report = recover(torn)
        n = report.messages.get("/command", 0)
        assert n % 50 == 0 and n >= last  # whole chunks only, more as the cut moves on
        assert read_bag(report.output).get("/command", 0) == n
        last = n
    assert last >= 200
    # A torn write that left garbage (a record claiming more bytes than there are) after
    # two chunks: the two chunks survive, the garbage is reported as lost.
    (tmp_path / "bad").mkdir()
    cut = len(data) // 2
    (tmp_path / "bad" / "bad.mcap").write_bytes(data[:cut] + b"\x06" + (10**9).to_bytes(8, "little") + b"\x00" * 64)
    report = recover(tmp_path / "bad")
    assert not report.complete and report.tail_bytes > 64 and report.messages["/command"] % 50 == 0
