"""HIL-SERL's actor on a real arm's graph (``sim2real hil actor --env ros``): the arm
emulated behind ros2_control, the hardware bridge, the safety filter and the cell's
cameras, started as a user starts them (``sim2real deploy --backend real --emulate
--policy external``), and the actor's environment in this process on its own DDS
participant.

* its actions move the arm, through the filter: the e-stop stops them;
* episodes start from the start pose (driven back through the filter) after the scene
  is reset (the emulator's ``reset_scene``, as a person or a mechanism would); the arm is
  held however long the reset takes;
* observations: the arm's proprioception rebuilt by the task's own ``observe``, the
  cameras cropped and resized to the learner's images;
* the graph gone: the next step raises with the stale streams named (commands stop; the
  filter's watchdog holds the arm).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from ros_harness import unique_domain_id, wait_for

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.config import HilConfig
from sim2real.policies.hil.transport import free_port_pair

SECONDS = 30.0
"""How long the graph runs (the test ends it sooner)."""


@pytest.fixture
def arm_graph(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[subprocess.Popen[str]]:
    seconds = float(getattr(request, "param", SECONDS))
    domain = unique_domain_id()
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    cmd = [sys.executable, "-m", "sim2real", "deploy", "--robot", "arm", "--backend", "real", "--emulate",
           "--policy", "external", "--task", "ArmPegInsert", "--duration", str(seconds), "--domain-id", str(domain),
           "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.communicate(timeout=60)


def _config() -> HilConfig:
    return HilConfig.from_dict({"env": {"task": "ArmPegInsert", "cameras": ["wrist", "front"],
                                        "graph": {"reset_scene_service": "/franka/reset_scene",
                                                  "start_timeout": 60.0, "reset_noise": 0.0}}})


def _estop(env: Any) -> None:
    """Press the e-stop (``estop``, std_msgs/Bool) from the actor's own node: a new DDS
    participant would make every process of the graph rediscover the domain."""
    from std_msgs.msg import Bool

    from sim2real.ros_nodes.qos import estop_qos

    pub = env.node.create_publisher(Bool, "estop", estop_qos())
    assert wait_for(lambda: pub.get_subscription_count() > 0, 5.0)
    for _ in range(3):
        pub.publish(Bool(data=True))
        time.sleep(0.05)


def _moved(env: Any, action: np.ndarray, steps: int) -> np.ndarray:
    start = env.measurements().ee_pos.copy()
    for _ in range(steps):
        env.step(action)
    return env.measurements().ee_pos - start


# Slow-marked (issue 43, item 4, open): the emulated Franka cell (its physics real-time,
# two software-rendered cameras), the real-time graph and the actor need more than two
# cores: alone on an idle machine 9 of 9 runs pass; inside the full suite the actor's
# view of the arm went 260-300 ms stale in both runs since, and with 2 CPU-bound competitors
# most runs fail. `make test-slow` runs them.
@pytest.mark.slow
def test_the_actor_drives_the_arm_through_the_safety_filter(arm_graph: subprocess.Popen[str]) -> None:
    from sim2real.policies.hil.console import HilConsoleTarget
    from sim2real.ros_nodes.hil_env import GraphArmEnv

    env = GraphArmEnv(_config().env, seed=0, log=lambda s: None)
    try:
        obs = env.reset(seed=0)
        home = env.measurements().ee_pos.copy()
        assert obs["state"].shape == (env.state_dim,) and np.all(np.isfinite(obs["state"]))
        for cam in ("wrist", "front"):
            assert obs[cam].shape == (3, 64, 64) and obs[cam].dtype == np.uint8 and obs[cam].std() > 5.0, cam
        # Observation's ee_pos block is the measured tool position (the task's own observe).
        assert np.allclose(env.full_obs[env._ee_pos], env.measurements().ee_pos, atol=0.01)
        # The console in this actor shows the arm's cameras and its measured state.
        target = HilConsoleTarget(env)
        assert target.control_period() == 0.0  # the environment keeps the real time itself
        target.episode_started(obs)
        for cam in ("front", "wrist"):
            latest = target.frames.latest(cam)
            assert latest is not None and np.asarray(latest[2]).shape == (240, 320, 3), cam
        shown = target.snapshot()["state"]
        assert np.allclose(shown["ee_pos"], env.measurements().ee_pos, atol=0.01)
        assert "hole_rel_peg_tip" not in shown  # a real arm's scene is in its cameras only

        t0 = time.monotonic()
        forward = np.array([0.4, 0, 0, 0, 0, 0], dtype=np.float32)
        moved = _moved(env, forward, 12)
        assert time.monotonic() - t0 >= 12 * env.control_dt * 0.9  # a real arm's time
        # Forward, mostly: a loaded machine's late commands let the tool sag a little
        # (2.0 cm over 19 cm once, while two trainings shared the 2 cores).
        assert moved[0] > 0.05 and abs(moved[1]) < 0.1 * moved[0] and abs(moved[2]) < 0.15 * moved[0], moved

        _estop(env)  # the filter's latched e-stop: the actor's commands stop reaching the arm
        time.sleep(0.3)
        held = _moved(env, forward, 8)
        assert np.linalg.norm(held) < 0.005, held

        # The next episode: the filter still holds, so the return cannot move the arm; the
        # scene is reset all the same and the episode starts where the arm is.
        env.config.graph.reset_timeout = 1.0
        env.reset()
        assert np.linalg.norm(env.measurements().ee_pos - home) > 0.05
    finally:
        env.close()
    arm_graph.terminate()  # SIGTERM ends the graph's window early, with its summary
    out, _ = arm_graph.communicate(timeout=60)
    summary = json.loads(out)
    assert summary["policy"] == "external"
    assert summary["interventions"]["by_filter"].get("estop", 0) > 0, summary["interventions"]
    assert summary["emulator"]["overruns"] < 20, summary["emulator"]
    assert summary["emulator"]["cameras"]["published"] > 20, summary["emulator"]


@pytest.mark.slow  # as the test above
def test_the_arm_returns_to_its_start_pose_and_a_lost_graph_stops_the_actor(arm_graph: subprocess.Popen[str]) -> None:
    from sim2real.ros_nodes.hil_env import GraphArmEnv

    env = GraphArmEnv(_config().env, seed=0, log=lambda s: None)
    try:
        env.reset(seed=0)
        home = env.measurements().ee_pos.copy()
        _moved(env, np.array([0, 0.4, 0.2, 0, 0, 0], dtype=np.float32), 10)
        assert np.linalg.norm(env.measurements().ee_pos - home) > 0.05
        env.reset()
        assert np.linalg.norm(env.measurements().ee_pos - home) < 0.01  # back, through the filter

        # A scene reset that takes many control periods (a person putting the peg back):
        # the arm is held meanwhile and the next episode moves it.
        from std_srvs.srv import Trigger

        calls: list[float] = []

        def slow_reset(request: Any, response: Any) -> Any:
            calls.append(time.monotonic())
            time.sleep(0.6)
            response.success, response.message = True, "reset by hand"
            return response

        env.node.create_service(Trigger, "slow_reset", slow_reset)
        env.config.graph.reset_scene_service = "slow_reset"
        env.reset()
        assert len(calls) == 1  # the service named now, not the client made for the first name
        assert np.linalg.norm(_moved(env, np.array([0.4, 0, 0, 0, 0, 0], dtype=np.float32), 5)) > 0.02

        arm_graph.terminate()  # the robot's graph goes away mid-episode
        out, _ = arm_graph.communicate(timeout=60)
        assert arm_graph.returncode == 0 and json.loads(out)["emulator"]["ticks"] > 0  # and its emulator with it
        with pytest.raises(Sim2RealError, match="stale"):
            for _ in range(20):
                env.step(np.zeros(env.action_dim, dtype=np.float32))
    finally:
        env.close()


def test_an_actor_without_a_graph_says_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from sim2real.ros_nodes.hil_env import GraphArmEnv

    monkeypatch.setenv("ROS_DOMAIN_ID", str(unique_domain_id()))
    cfg = HilConfig.from_dict({"env": {"task": "ArmPegInsert", "graph": {"start_timeout": 1.0}}})
    with pytest.raises(Sim2RealError, match=r"nothing subscribes .*raw_command.*policy:=external"):
        GraphArmEnv(cfg.env, log=lambda s: None)


@pytest.mark.slow
@pytest.mark.parametrize("arm_graph", [120.0], indirect=True)
def test_a_hil_run_on_the_emulated_arm_streams_its_transitions_to_the_learner(
        arm_graph: subprocess.Popen[str], tmp_path: Any) -> None:
    """``sim2real hil run --env ros``: learner and actor as a user starts them, the actor on
    the graph; its transitions reach the learner and the learner's weights reach it."""
    cmd = [sys.executable, "-m", "sim2real", "hil", "run", "--env", "ros", "--cameras", "wrist,front", "--steps", "160",
           "--device", "none", "--run-dir", str(tmp_path / "run"), "--port", str(free_port_pair()),
           "--set", "env.graph.reset_scene_service=/franka/reset_scene", "--set", "env.graph.start_timeout=60",
           "--set", "env.max_episode_steps=40", "--set", "learner.warmup_steps=60", "--set", "learner.batch_size=16",
           "--set", "learner.publish_seconds=1", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=dict(os.environ), check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 160 and summary["episodes"] >= 3, summary
    assert summary["unacknowledged"] == 0 and summary["flushed"], summary  # every transition reached the learner
    assert summary["weight_updates"] >= 1, summary  # and the learner's weights reached the actor
    arm_graph.terminate()  # SIGTERM ends the graph's window early, with its summary
    out, _ = arm_graph.communicate(timeout=60)
    emulator = json.loads(out)["emulator"]
    assert emulator["episodes"] >= summary["episodes"] - 1, emulator  # the scene was reset between episodes
