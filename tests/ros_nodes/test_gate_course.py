"""A drone's gate course deployed (``DroneGates``): the gates on ``course`` (JSON), the
gate planner's path on ``plan``. The policy node's own copy of the task tracks the gates
passed and the carrot along the path from those messages and odometry alone, and
observes what the simulator's task does at every step of a flown course."""

from __future__ import annotations

import json

import numpy as np
import pytest

import sim2real.sim as S
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes import path_messages as P
from sim2real.ros_nodes.robots import ObservationBuilder, make_task
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.drone.position_control import CascadedPID

DRONE = robot_deployment("drone")


def from_topics(sim_m: Measurements, path: np.ndarray | None) -> Measurements:
    """What the policy node reconstructs: odometry, the course's JSON and the planner's path."""
    stamp = M.sec_to_stamp(1.0)
    out = Measurements(course=json.loads(json.dumps(sim_m.course)))
    odom = M.odometry(sim_m.base_pos, sim_m.base_quat, sim_m.base_lin_vel, sim_m.base_ang_vel, stamp)
    out.base_pos, out.base_quat, out.base_lin_vel, out.base_ang_vel = M.parse_odometry(odom)
    if path is not None:
        parsed = P.parse_path(P.path(path, stamp))
        assert not isinstance(parsed, str)
        out.path = parsed
    return out


@pytest.mark.parametrize("guidance", ["path", "gates"])
def test_the_policy_nodes_copy_of_a_gate_course_tracks_the_gates_and_the_carrot(guidance: str) -> None:
    opts = {"guidance": guidance, "n_gates": 3}
    train = S.make("sim2real/DroneGates-v0", action_mode="ctbr", dr=None, seed=4, **opts)
    obs, _ = train.reset(seed=4)
    sim_task = train.task
    read = DRONE.state_reader(sim_task, train.model)
    course = sim_task.course(0)
    # The planner node's path from the course as published: the task's own path.
    planned = DRONE.plan(np.array(course["start"]), None, 0.4, course=course) if guidance == "path" else None
    if planned is not None:
        np.testing.assert_allclose(planned, sim_task.path[0, : sim_task.path_count[0]], atol=1e-9)
    node_task = make_task("DroneGates", "ctbr", opts)
    builder = ObservationBuilder("drone", node_task, 4)
    assert set(builder.missing(Measurements())) >= {"course", *(["path"] if guidance == "path" else [])}
    assert "goal" not in builder.missing(Measurements())  # the node aims itself
    pid = CascadedPID(1, sim_task.observation_layout(), target_yaw=None)
    done, steps, action = False, 0, np.zeros(4)
    while not done:
        m = from_topics(read(train.data, train.engine.phys), planned)
        expected = sim_task.observe(train.engine.phys)[0]
        np.testing.assert_allclose(builder.build(m, action), expected, atol=1e-9, err_msg=f"step {steps}")
        assert node_task.index[0] == sim_task.index[0]
        action = np.clip(pid.act(obs), -1.0, 1.0)
        obs, _, terminated, truncated, info = train.step(action)
        done, steps = terminated or truncated, steps + 1
    assert info["is_success"] and sim_task.index[0] == 3
    m = from_topics(read(train.data, train.engine.phys), planned)
    builder.build(m, np.zeros(4))
    assert node_task.index[0] == 3  # the last gate, passed between the last two samples


def test_a_malformed_gate_course_or_path_is_refused() -> None:
    node_task = make_task("DroneGates", "ctbr", {"guidance": "path"})
    builder = ObservationBuilder("drone", node_task, 4)
    odom = Measurements(base_pos=np.zeros(3), base_quat=np.array([1.0, 0, 0, 0]), base_lin_vel=np.zeros(3),
                        base_ang_vel=np.zeros(3))
    good = {"gates": [[1.0, 0.0, 1.0]], "gate_yaw": [0.0]}
    for course, path in (({"gates": [[1.0, 0.0, np.nan]], "gate_yaw": [0.0]}, np.zeros((2, 3))),
                         ({"gates": [[1.0, 0.0, 1.0]], "gate_yaw": [0.0, 1.0]}, np.zeros((2, 3))),
                         ({"gates": "ahead"}, np.zeros((2, 3))),
                         ({"gates": [[1.0, 0.0, 1.0]] * 9, "gate_yaw": [0.0] * 9}, np.zeros((2, 3))),
                         (good, np.full((2, 3), np.inf))):
        odom.course, odom.path = course, path
        with pytest.raises(ValueError):
            builder.build(odom, np.zeros(4))
    for bad in ({"gates": [[0.0, 0.0]], "gate_yaw": [0.0]}, {"waypoint": []}):
        with pytest.raises(ValueError):
            DRONE.plan(np.zeros(2), None, 0.4, course=bad)
    odom.course, odom.path = good, DRONE.plan(np.zeros(2), None, 0.4, course=good)
    assert np.all(np.isfinite(builder.build(odom, np.zeros(4))))


@pytest.mark.slow
def test_the_graph_flies_gate_courses_with_the_pid_on_the_planned_path() -> None:
    """``sim2real deploy --task DroneGates``: the sim bridge publishes each course, the
    planner lays the gate path, the policy node's PID follows its carrot through the
    safety filter (the fence widened to the courses' arena), and courses are flown."""
    from ros_harness import deploy_json

    summary, log = deploy_json("--robot", "drone", "--policy", "classical", "--task", "DroneGates", "--duration", "25",
                               "--set", "safety_filter.fence_low=[-7, -7, -0.5]",
                               "--set", "safety_filter.fence_high=[7, 7, 2.5]")
    assert summary["task"] == "DroneGates"
    assert summary["task_success"]["successes"] >= 1, (summary["task_success"], log[-3000:])
    assert "planner]: path of" in log
    assert summary["interventions"]["by_filter"].get("geofence", 0) == 0
