"""The policy's observation rebuilt from topics equals the simulator's own, through the
real message conversions; joint-state parsing maps by name and rejects what it must;
the command spaces round-trip actions."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.policies.safety.spaces import command_space
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes import path_messages as P
from sim2real.ros_nodes.robots import ObservationBuilder, make_task
from sim2real.ros_nodes.sim_robot import SimRobot
from sim2real.sim.core.deployment import Measurements


def through_messages(robot: SimRobot) -> Measurements:
    """What a subscriber reconstructs from the published messages."""
    m = robot.measure()
    stamp = M.sec_to_stamp(1.0)
    out = Measurements(goal=m.goal, cmd_vel=m.cmd_vel)
    if m.path is not None:  # the planner's path, in the odometry's frame
        path = P.parse_path(P.path(m.path, stamp))
        assert not isinstance(path, str)
        out.path = path
    if m.ranges is not None:  # one sensor_msgs/Range per rangefinder
        info = robot.info
        ranges = [P.parse_range(P.range_reading(v, stamp, f"range_{n}", info.range_max))
                  for n, v in zip(info.rangefinders, m.ranges, strict=True)]
        out.ranges = np.array(ranges)
    if robot.info.joints:
        msg = M.joint_state(robot.info.joints[::-1], m.joint_pos[::-1], m.joint_vel[::-1], None, stamp)
        out.joint_pos, out.joint_vel, _ = M.parse_joint_state(msg, robot.info.joints)  # reordered on the wire
    if robot.info.floating_base:
        odom = M.odometry(m.base_pos, m.base_quat, m.base_lin_vel, m.base_ang_vel, stamp)
        out.base_pos, out.base_quat, out.base_lin_vel, out.base_ang_vel = M.parse_odometry(odom)
    if robot.info.has_ee:
        out.ee_pos, out.ee_quat = M.pose_arrays(M.pose_stamped(m.ee_pos, m.ee_quat, stamp).pose)
        out.ee_pos_desired, out.ee_quat_desired = M.pose_arrays(
            M.pose_stamped(m.ee_pos_desired, m.ee_quat_desired, stamp).pose)
    return out


@pytest.mark.parametrize("robot", ["arm", "quadruped", "drone"])
def test_observation_from_topics_equals_the_simulators(robot: str) -> None:
    sim = SimRobot(robot, seed=3, task_options={"start": "air"} if robot == "drone" else None)
    task = make_task(sim.task_name, sim.space.action_mode, {"start": "air"} if robot == "drone" else None)
    builder = ObservationBuilder(robot, task, sim.space.size)
    policy_space = command_space(robot, sim.space.action_mode)  # the quadruped's driver takes a wider range
    layout = task.observation_layout()
    starts = np.cumsum([0] + [n for _, n in layout])
    rng = np.random.default_rng(0)
    for _ in range(25):
        action = rng.uniform(-0.5, 0.5, sim.space.size)
        sim.step(policy_space.action_to_command(action))
        m = through_messages(sim)
        assert builder.missing(m) == []
        expected = sim.env.engine.observe()[0]
        for k, (name, _) in enumerate(layout):
            if name == "last_action":  # the simulated driver saw it in its own action units
                expected[starts[k]:starts[k + 1]] = action
        np.testing.assert_allclose(builder.build(m, action), expected, atol=1e-9)


def test_missing_measurements_are_named() -> None:
    sim = SimRobot("quadruped")
    builder = ObservationBuilder("quadruped", make_task(sim.task_name, "joint_pos"), 12)
    assert builder.missing(Measurements()) == ["joint_pos", "joint_vel", "base_pos", "base_quat", "base_lin_vel",
                                               "base_ang_vel", "cmd_vel"]


def test_joint_state_parsing_rejects_unknown_missing_and_short() -> None:
    names = ("a", "b", "c")
    stamp = M.sec_to_stamp(0.0)
    ok = M.parse_joint_state(M.joint_state(("c", "a", "b"), np.array([3, 1, 2.0]), np.zeros(3), None, stamp), names)
    np.testing.assert_array_equal(ok[0], [1, 2, 3])
    assert "unknown joint names ['x']" in M.parse_joint_state(
        M.joint_state(("a", "b", "x"), np.zeros(3), np.zeros(3), None, stamp), names)
    assert "missing joints ['c']" in M.parse_joint_state(
        M.joint_state(("a", "b"), np.zeros(2), np.zeros(2), None, stamp), names)
    short = M.joint_state(names, np.zeros(3), np.zeros(3), None, stamp)
    short.position = [0.0, 0.0]
    assert "wrong length: position has 2 values for 3" in M.parse_joint_state(short, names)
    nan = M.joint_state(names, np.array([0.0, np.nan, 0.0]), np.zeros(3), None, stamp)
    assert "non-finite" in M.parse_joint_state(nan, names)


@pytest.mark.parametrize("robot,mode", [("arm", "ee_delta"), ("arm", "joint_torque"), ("quadruped", "joint_pos"),
                                        ("drone", "ctbr")])
def test_command_space_inverts_the_action_map(robot: str, mode: str) -> None:
    space = command_space(robot, mode)
    a = np.random.default_rng(1).uniform(-1, 1, space.size)
    np.testing.assert_allclose(space.command_to_action(space.action_to_command(a)), a, atol=1e-12)
    np.testing.assert_allclose(space.command_to_action(space.upper + 10 * np.abs(space.scale)), 1.0)


REFERENCE_MODES = [
    ("quadruped", "QuadrupedVelocity", "gait_residual", "joint_pos",
     {"lin_vel_x": [0.4, 0.8], "zero_command_probability": 0.0, "resample_seconds": 100.0}),
    ("drone", "DroneHover", "ctbr_residual", "ctbr", {"start": "air", "residual_scale": 0.5}),
    ("drone", "DroneHover", "ctbr_residual", "ctbr",  # small angles, so the gate moves within 50 steps
     {"start": "air", "residual_scale": 0.5, "residual_tilt_gate": [2, 10]}),
    ("quadruped", "QuadrupedVelocity", "gait_residual", "joint_pos",  # the node keeps the history itself
     {"lin_vel_x": [0.4, 0.8], "zero_command_probability": 0.0, "resample_seconds": 100.0, "history_steps": 3}),
    # The hierarchy's follower: the planner's path and the rangefinders from their topics,
    # the pure-pursuit reference rebuilt from them (two sections: its waypoints pass).
    ("quadruped", "QuadrupedWaypoints", "gait_residual", "joint_pos", {"num_sections": 2}),
    # A drone's waypoint mission: the current waypoint on goal, the sequence on plan.
    ("drone", "DroneWaypoints", "ctbr_residual", "ctbr",
     {"start": "air", "residual_scale": 0.1, "n_waypoints": 3, "hold_seconds": 0.1}),
]


@pytest.mark.parametrize(("robot", "task_name", "mode", "driver", "opts"), REFERENCE_MODES)
def test_reference_mode_deployment_replays_training_exactly(
    robot: str, task_name: str, mode: str, driver: str, opts: dict
) -> None:
    """Policy node side (observation from topics, then the task's deploy_command: the
    mapped action plus the quadruped's trot or the drone's PID) driving the robot's
    plain driver gives the trajectory and observations the policy had in training,
    where the reference runs inside the simulator."""
    import sim2real.sim as S

    train = S.make(f"sim2real/{task_name}-v0", action_mode=mode, dr=None, seed=3, **opts)
    train_obs, _ = train.reset(seed=3)
    robot_sim = SimRobot(robot, task=task_name, action_mode=mode, seed=3, task_options=opts)
    assert robot_sim.space.action_mode == driver
    np.testing.assert_array_equal(robot_sim.env.engine.phys.qpos, train.engine.phys.qpos)
    task = make_task(task_name, mode, opts)
    if robot == "quadruped":
        task.gait.phase[:] = train.task.gait.phase  # the node's clock starts where the robot's does
    builder = ObservationBuilder(robot, task, train.action_space.shape[0])
    space = command_space(robot, mode)
    rng = np.random.default_rng(1)
    last = np.zeros(train.action_space.shape[0])
    for _ in range(50):
        obs = builder.build(through_messages(robot_sim), last)
        np.testing.assert_allclose(obs, train_obs, atol=1e-9)
        action = rng.uniform(-1, 1, len(last))
        robot_sim.step(task.deploy_command(action, obs, space.action_to_command))
        train_obs, *_ = train.step(action)
        last = action
    np.testing.assert_allclose(robot_sim.env.engine.phys.qpos, train.engine.phys.qpos, atol=1e-9)


@pytest.mark.parametrize(("robot", "task_name"), [("arm", "ArmMaze"), ("arm", "ArmPush")])
def test_observations_without_a_topic_source_are_refused(robot: str, task_name: str) -> None:
    """Fail closed: a policy whose observation the topics cannot rebuild is refused at
    configure time, with the blocks named, instead of acting on zeros."""
    from sim2real.sim.core.errors import ConfigError

    task = make_task(task_name, "")
    with pytest.raises(ConfigError, match="no ROS 2 source"):
        ObservationBuilder(robot, task, sum(n for _, n in task.action_layout()))


def test_a_task_of_another_robot_is_refused() -> None:
    """Fail closed: the builder writes measurements into the robot's own task type."""
    from sim2real.sim.core.errors import ConfigError

    with pytest.raises(ConfigError, match="is not a quadruped task"):
        ObservationBuilder("quadruped", make_task("ArmReach", "ee_delta"), 7)


def test_a_task_without_its_deploy_model_is_refused() -> None:
    from sim2real.sim.core.registry import REGISTRY

    task = REGISTRY.get("DroneHover")(num_envs=1)
    with pytest.raises(RuntimeError, match="make_task"):
        ObservationBuilder("drone", task, 4)


def test_restart_forgets_the_observation_history() -> None:
    """A re-activated node starts a fresh history instead of one from before its pause."""
    opts = {"history_steps": 2}
    sim = SimRobot("quadruped", task="QuadrupedVelocity", action_mode="gait_residual", seed=2, task_options=opts)
    task = make_task(sim.task_name, "gait_residual", opts)
    builder = ObservationBuilder("quadruped", task, 12)
    layout = task.observation_layout()
    start = {name: sum(n for _, n in layout[:i]) for i, (name, _) in enumerate(layout)}
    cols = np.concatenate([np.arange(start[b], start[b] + 12) for b in ("joint_pos", "joint_vel", "last_action")])
    space = command_space("quadruped", "gait_residual")
    action = np.full(12, 0.3)
    for _ in range(5):
        obs = builder.build(through_messages(sim), action)
        sim.step(task.deploy_command(action, obs, space.action_to_command))
    obs = builder.build(through_messages(sim), action)
    assert np.abs(obs[start["history"]:][:36] - obs[cols]).max() > 1e-3  # the previous step, not this one
    builder.restart()
    obs = builder.build(through_messages(sim), action)
    np.testing.assert_allclose(obs[start["history"]:], np.tile(obs[cols], 2))


def test_the_policy_nodes_copy_of_the_waypoints_task_follows_the_path_from_its_topic() -> None:
    """The robot carried along its plan (and then a new plan arriving mid-way): the node's
    own task, fed only the path, the rangefinders and odometry through their messages,
    passes the same waypoints and observes exactly what the simulator's task does."""
    import mujoco

    import sim2real.sim as S
    from sim2real.sim import robot_deployment
    from sim2real.sim.quadruped import constants as C

    opts = {"num_sections": 2}
    train = S.make("sim2real/QuadrupedWaypoints-v0", action_mode="gait_residual", dr=None, seed=5, **opts)
    train_obs, _ = train.reset(seed=5)
    sim_task = train.task
    info = robot_deployment("quadruped")
    read = info.state_reader(sim_task, train.model)

    class Driver:  # what the robot's driver publishes, for through_messages
        def __init__(self) -> None:
            self.info = info

        def measure(self) -> Measurements:
            return read(train.data, train.engine.phys)

    node_task = make_task("QuadrupedWaypoints", "gait_residual", opts)
    node_task.gait.phase[:] = sim_task.gait.phase
    builder = ObservationBuilder("quadruped", node_task, 12)
    wps = sim_task.waypoints[0].copy()

    def carry_to(x: float, y: float) -> np.ndarray:
        """The robot put at (x, y) and one control period run; the node's observation."""
        obs = builder.build(through_messages(Driver()), np.zeros(12))
        node_task.deploy_command(np.zeros(12), obs, lambda a: C.DEFAULT_POSE + 0.3 * a)  # its clock advances
        train.data.qpos[:2] = [x, y]
        train.data.qvel[:] = 0.0
        mujoco.mj_forward(train.model, train.data)
        sim_obs, *_ = train.step(np.zeros(12))
        return sim_obs

    np.testing.assert_allclose(builder.build(through_messages(Driver()), np.zeros(12)), train_obs, atol=1e-9)
    for x, y, _ in wps[: len(wps) // 2]:
        sim_obs = carry_to(x, y)
        np.testing.assert_allclose(builder.build(through_messages(Driver()), np.zeros(12)), sim_obs, atol=1e-9)
        assert node_task.index[0] == sim_task.index[0]
    assert node_task.index[0] >= len(wps) // 2 - 1
    # A new plan (re-planned from here): both follow it from its first waypoint.
    here = train.data.qpos[:2].copy()
    replanned = np.vstack([[here[0] + 0.6, here[1], 0.2], wps[-1]])
    sim_task.set_path(0, replanned)
    sim_obs = carry_to(*here)
    np.testing.assert_allclose(builder.build(through_messages(Driver()), np.zeros(12)), sim_obs, atol=1e-9)
    assert node_task.index[0] == sim_task.index[0] == 0
    np.testing.assert_allclose(node_task.waypoints[0], replanned)


def test_the_policy_nodes_copy_of_a_drone_mission_knows_which_waypoint_is_current() -> None:
    """DroneWaypoints deployed: the current waypoint on ``goal``, the sequence on ``plan``.
    At every waypoint of the mission, and for a plan of another length, the node's own
    task observes what the simulator's does."""
    import sim2real.sim as S
    from sim2real.sim import robot_deployment
    from sim2real.sim.core.layout import layout_slices

    opts = {"start": "air", "n_waypoints": 4}
    train = S.make("sim2real/DroneWaypoints-v0", action_mode="ctbr_residual", dr=None, seed=2, **opts)
    train.reset(seed=2)
    sim_task = train.task
    read = robot_deployment("drone").state_reader(sim_task, train.model)

    class Driver:  # what the robot's driver and the mission publish, for through_messages
        info = robot_deployment("drone")

        def measure(self) -> Measurements:
            return read(train.data, train.engine.phys)

    node_task = make_task("DroneWaypoints", "ctbr_residual", opts)
    builder = ObservationBuilder("drone", node_task, 4)
    for k in range(4):  # the mission moves on, as the simulated task does after each hold
        sim_task.index[0] = k
        sim_task.target[0] = sim_task.waypoints[0, k]
        train.step(np.zeros(4))
        expected = sim_task.observe(train.engine.phys)[0]
        np.testing.assert_allclose(builder.build(through_messages(Driver()), np.zeros(4)), expected, atol=1e-9)
        assert node_task.index[0] == k
    # A longer mission than training's: the node follows it (what is left, what comes next).
    longer = np.vstack([sim_task.waypoints[0], [[0.5, 0.5, 1.0], [1.0, 0.5, 1.2]]])
    m = through_messages(Driver())
    m.path, m.goal = longer, longer[4]
    obs = builder.build(m, np.zeros(4))
    blocks = layout_slices(node_task.observation_layout())
    np.testing.assert_allclose(obs[blocks["next_waypoint_offset"]], longer[5] - longer[4], atol=1e-9)
    assert obs[blocks["waypoints_left"]][0] == pytest.approx(1 / 5)


def test_a_nodes_diagnostics_are_found_under_each_name_ros_gives_it() -> None:
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

    def status(name: str, latched: str) -> DiagnosticStatus:
        return DiagnosticStatus(name=name, message=f"from {name}", values=[KeyValue(key="latched_at", value=latched)])

    for name in ("safety_filter", "/robot1/safety_filter", "safety_filter: guards"):
        msg = DiagnosticArray(status=[status("policy", "9"), status(name, "1.5")])
        assert M.node_status(msg, "safety_filter") == ({"latched_at": "1.5"}, f"from {name}")
    msg = DiagnosticArray(status=[status("safety_filter_2", "1"), status("/safety_filter/x", "2")])
    assert M.node_status(msg, "safety_filter") is None
    # two reports in one message: the later one is the node's latest word
    msg = DiagnosticArray(status=[status("safety_filter", "1"), status("safety_filter", "2")])
    assert M.node_status(msg, "safety_filter") == ({"latched_at": "2"}, "from safety_filter")
