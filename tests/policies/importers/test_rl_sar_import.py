"""Importing an rl_sar policy folder: the imported graph gives exactly the joint targets
rl_sar's own pipeline would (its observation terms, scales, training joint order through
``joint_mapping``, default pose, action scale), written here independently from rl_sar's
semantics; its gains reach the simulated servos; mistakes in the foreign config are
refused with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from foreign_policy import small_network

from sim2real.cli import main
from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.errors import PolicyFileError
from sim2real.policies.importers import READERS
from sim2real.policies.importers.writer import ACTION_SCALE, import_policy
from sim2real.sim import make_vec
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as c

SDK_NAMES = list(c.JOINT_NAMES)  # FR, FL, RR, RL: Unitree's SDK order, also ours
MAPPING = [3, 4, 5, 0, 1, 2, 9, 10, 11, 6, 7, 8]  # Isaac Gym's alphabetical order FL, FR, RL, RR (HIMLoco's)
TERMS = ["commands", "ang_vel", "gravity_vec", "dof_pos", "dof_vel", "actions"]
CONFIG: dict[str, Any] = {
    "model_name": "policy.pt", "num_observations": 45, "observations": TERMS, "observations_history": [],
    "clip_obs": 100.0, "clip_actions_lower": [-100.0] * 12, "clip_actions_upper": [100.0] * 12,
    "rl_kp": [40.0] * 12, "rl_kd": [1.0] * 12, "action_scale": [0.125, 0.25, 0.25] * 4,
    "lin_vel_scale": 2.0, "ang_vel_scale": 0.25, "dof_pos_scale": 1.0, "dof_vel_scale": 0.05,
    "commands_scale": [2.0, 2.0, 0.25],
    "default_dof_pos": [0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5],  # training order
    "joint_mapping": MAPPING,
}
BASE = {"dt": 0.005, "decimation": 4, "num_of_dofs": 12, "joint_names": SDK_NAMES, "wheel_indices": []}


def write_folder(root: Path, network: torch.nn.Module, **changes: Any) -> Path:
    folder = root / "go2" / "policy_a"
    folder.mkdir(parents=True)
    (root / "go2" / "base.yaml").write_text(yaml.safe_dump({"go2": BASE}))
    (folder / "config.yaml").write_text(yaml.safe_dump({"go2/policy_a": {**CONFIG, **changes}}))
    torch.jit.save(torch.jit.script(network), str(folder / "policy.pt"))
    return folder


@pytest.fixture(scope="module")
def network() -> torch.nn.Module:
    return small_network(45, seed=0)


def rl_sar_frame(command: np.ndarray, ang_vel: np.ndarray, gravity: np.ndarray, q_sdk: np.ndarray,
                 dq_sdk: np.ndarray, prev_raw: np.ndarray) -> np.ndarray:
    """rl_sar's ComputeObservation for one robot (clipped, as it enters the history buffer)."""
    m = np.array(MAPPING)
    default = np.array(CONFIG["default_dof_pos"])
    terms = {
        "commands": command * np.array(CONFIG["commands_scale"]),
        "ang_vel": ang_vel * CONFIG["ang_vel_scale"],
        "gravity_vec": gravity,
        "dof_pos": (q_sdk[m] - default) * CONFIG["dof_pos_scale"],  # training joint i is SDK joint mapping[i]
        "dof_vel": dq_sdk[m] * CONFIG["dof_vel_scale"],
        "actions": prev_raw,
    }
    return np.clip(np.concatenate([terms[t] for t in TERMS]), -100, 100).astype(np.float32)


def rl_sar_targets(net: torch.nn.Module, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rl_sar's output: joint targets in SDK order and the raw action."""
    m = np.array(MAPPING)
    with torch.no_grad():
        raw = np.clip(net(torch.as_tensor(obs)[None])[0].numpy(), -100, 100)
    target = np.empty(12)
    target[m] = raw * np.array(CONFIG["action_scale"]) + np.array(CONFIG["default_dof_pos"])
    return target, raw


def stacked(frames: list[np.ndarray], history: list[int], priority: str) -> np.ndarray:
    """rl_sar's ObservationBuffer.get_obs_vec: ``frames`` newest first, each split into TERMS."""
    if priority == "time":
        return np.concatenate([frames[k] for k in history])
    sizes = np.cumsum([0, 3, 3, 3, 12, 12, 12])
    return np.concatenate([frames[k][sizes[t]:sizes[t + 1]] for t in range(len(TERMS)) for k in history])


@pytest.mark.parametrize(("history", "priority"), [([], "time"), ([0, 1, 2, 3, 4, 5], "time"), ([2, 0, 1], "term")])
def test_the_imported_graph_commands_what_rl_sars_pipeline_would(tmp_path: Path, history: list[int],
                                                                 priority: str) -> None:
    """One frame (robot_lab's policies) and stacked past frames in both of rl_sar's
    interleavings (HIMLoco's six frames, newest first, frame by frame)."""
    frames_read = len(history) or 1
    network = small_network(45 * frames_read, seed=frames_read)
    folder = write_folder(tmp_path, network, observations_history=history, observations_history_priority=priority)
    meta = import_policy(READERS["rl_sar"].read(folder), tmp_path / "out", check=False)
    policy = OnnxPolicy(tmp_path / "out")
    assert meta["action_mode"] == "joint_pos" and meta["task_options"]["servo_kp"] == [40.0] * 12
    assert meta["adapter"]["joint_names"][:3] == ["FL_hip_joint", "FL_thigh_joint", "FL_calf_joint"]
    assert meta["task_options"].get("history_steps", 0) == max(history or [0])
    env = make_vec("QuadrupedVelocity", 3, seed=1, dr="none", **meta["task_options"])  # no noise: the true state
    task = env.task
    obs, prev_raw, worst = env.reset(), np.zeros((3, 12)), 0.0
    buffers: list[list[np.ndarray]] = [[], [], []]  # rl_sar's ObservationBuffer, newest first, per robot
    for k in range(60):
        action = policy(obs)
        st = task.base_state(env.engine.phys)
        for i in range(3):
            frame = rl_sar_frame(task.command[i], st.ang_vel[i], st.gravity[i], st.joint_pos[i], st.joint_vel[i],
                                 prev_raw[i])
            buffers[i] = [frame] * 6 if k == 0 else [frame, *buffers[i][:5]]  # a reset fills it with the present
            want, prev_raw[i] = rl_sar_targets(network, stacked(buffers[i], history or [0], priority))
            # At a reset our previous action is our default pose, rl_sar's a zero action; the two
            # closed loops (the reference's previous action is its own) converge within ~20 steps.
            if k >= 30:
                worst = max(worst, float(np.max(np.abs(c.DEFAULT_POSE + ACTION_SCALE * action[i] - want))))
        obs, *_ = env.step(action)
    assert worst <= 1e-5, worst
    model = task.build_model()  # the policy's own gains on the simulated servos
    np.testing.assert_allclose(model.actuator_gainprm[:12, 0], 40.0)
    np.testing.assert_allclose(model.actuator_biasprm[:12, 2], -1.0)


@pytest.mark.parametrize(("change", "field"), [
    ({"joint_mapping": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10]}, "joint_mapping"),  # not a permutation
    ({"default_dof_pos": [0.1, 0.8, 1.5] * 4}, "default_dof_pos"),  # calf sign flipped: outside its range
    ({"num_observations": 48}, "num_observations"),
    ({"observations": [*TERMS, "height_scan"]}, "observations"),
    ({"observations_history": [1, 2]}, "observations_history"),  # without the present frame
    ({"observations_history": [0, 1], "observations_history_priority": "space"}, "priority"),
    ({"rl_kp": [40.0] * 11}, "kp"),
    ({"action_scale": [0.0] * 12}, "action_scale"),
])
def test_mistakes_in_the_foreign_config_are_refused(network: torch.nn.Module, tmp_path: Path, change: dict[str, Any],
                                                    field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        READERS["rl_sar"].read(write_folder(tmp_path, network, **change))


def test_a_network_of_the_wrong_shape_or_rate_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = torch.nn.Sequential(torch.nn.Linear(45, 8))
    with pytest.raises(PolicyFileError, match="12 joint actions"):
        import_policy(READERS["rl_sar"].read(write_folder(tmp_path / "a", wrong)), tmp_path / "out", check=False)
    folder = write_folder(tmp_path / "b", torch.nn.Sequential(torch.nn.Linear(45, 12)))
    (folder.parent / "base.yaml").write_text(yaml.safe_dump({"go2": {**BASE, "decimation": 10}}))
    assert main(["import", "rl_sar", str(folder), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "50 ms per step" in err and "Traceback" not in err


def test_the_policys_gains_reach_the_go2_backend_and_explicit_options_win(network: torch.nn.Module,
                                                                          tmp_path: Path) -> None:
    """On a real robot the gains go into LowCmd's kp/kd under the policy (the Go2 backend's
    policy_kp/policy_kd), beside how to reach the robot; gains that differ per joint are refused."""
    import json

    from sim2real.ros_nodes.deployment import DeployOptions, graph_parameters
    from sim2real.sim import robot_deployment

    import_policy(READERS["rl_sar"].read(write_folder(tmp_path, network)), tmp_path / "out", check=False)
    reach = {"domain_id": 7, "policy_kd": 2.0}
    bridge = {"hardware_bridge": {"backend_options": json.dumps(reach)}}
    # The Go2 emulator: a real robot refuses this untrained network (see test_sim_check.py).
    params, nodes = graph_parameters(DeployOptions(robot="quadruped", backend="real", policy=str(tmp_path / "out"),
                                                   overrides=bridge, emulated=True))
    assert "hardware_bridge" in nodes
    assert json.loads(params["hardware_bridge"]["backend_options"]) == {"policy_kp": 40.0, "policy_kd": 2.0,
                                                                       "domain_id": 7}
    with pytest.raises(ValueError, match="servo_kp differs"):
        robot_deployment("quadruped").backend_options({"servo_kp": [40.0] * 11 + [30.0]})
