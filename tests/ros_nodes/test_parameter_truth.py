"""A parameter set is applied or refused, never accepted and ignored (issue 26, defect 1,
the part that misleads an operator about a safety limit). Through the real
``set_parameters`` service, as ``ros2 param set`` calls it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from ros_harness import Harness, safety_node, wait_for

from sim2real.policies.safety.aerial import TiltLimit
from sim2real.policies.safety.types import SafetyState


def _set(h: Harness, node_name: str, **values: Any) -> Any:
    """One ``set_parameters`` call from a client node, as ``ros2 param set`` makes it."""
    from rcl_interfaces.msg import Parameter as ParameterMsg
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter

    client = h.nodes[0].create_client(SetParameters, f"/{node_name}/set_parameters")
    assert client.wait_for_service(timeout_sec=5.0)
    request = SetParameters.Request()
    request.parameters = [ParameterMsg(name=k, value=Parameter(k, value=v).get_parameter_value())
                          for k, v in values.items()]
    future = client.call_async(request)
    assert wait_for(future.done, 5.0)
    return future.result().results[0]


def _tilt(node) -> TiltLimit:
    return next(f for f in node.chain.limits if isinstance(f, TiltLimit))


def _filter_with_client(robot: str, tmp_path):
    """A running safety filter of ``robot`` and a node whose clients set its parameters."""
    from rclpy.node import Node

    h = Harness()
    h.add(Node("param_client", context=h.context))
    node = h.add(safety_node(h.context, robot, latch_file=str(tmp_path / "latch.json")))
    h.spin()
    yield h, node
    h.close()


@pytest.fixture
def drone(tmp_path):
    yield from _filter_with_client("drone", tmp_path)


def test_a_live_safety_limit_changes_the_chain(drone) -> None:
    h, node = drone
    assert _tilt(node).params.max_tilt == pytest.approx(0.8)
    result = _set(h, "safety_filter", max_tilt=0.05)
    assert result.successful, result.reason
    assert _tilt(node).params.max_tilt == pytest.approx(0.05) and node.get_parameter("max_tilt").value == 0.05
    # Behaviour, not just the number: 10 degrees of roll is now beyond the limit.
    state = SafetyState(now=1.0, state_stamp=1.0, base_pos=np.array([0, 0, 1.0]),
                        base_quat=np.array([np.cos(0.0873), np.sin(0.0873), 0, 0]),
                        base_lin_vel=np.zeros(3), base_ang_vel=np.zeros(3))
    _, report = _tilt(node).filter(np.array([0.3, 1.0, 0.0, 0.0]), state)
    assert report.acted


def test_an_invalid_live_value_is_refused_and_nothing_changes(drone) -> None:
    h, node = drone
    chain = node.chain
    result = _set(h, "safety_filter", max_tilt=3.0)  # beyond pi/2: the tilt limit refuses it
    assert not result.successful and "max_tilt" in result.reason
    assert node.chain is chain and node.get_parameter("max_tilt").value == pytest.approx(0.8)


def test_a_configure_time_parameter_is_refused_while_configured(drone) -> None:
    h, node = drone
    result = _set(h, "safety_filter", publish_on="state")
    assert not result.successful and "read at configure" in result.reason
    assert node.get_parameter("publish_on").value != "state"


def test_a_wrong_type_is_refused(drone) -> None:
    h, node = drone
    result = _set(h, "safety_filter", max_tilt="steep")
    assert not result.successful
    assert node.get_parameter("max_tilt").value == pytest.approx(0.8)


def test_limits_do_not_change_under_a_running_safe_action(drone) -> None:
    h, node = drone
    node.trip("test")
    result = _set(h, "safety_filter", max_tilt=0.05)
    assert not result.successful and "safe action" in result.reason


# -- issue 42, defect 6: hard limits are read-only while the robot moves ----------------------
@pytest.fixture
def arm(tmp_path):
    yield from _filter_with_client("arm", tmp_path)


@pytest.mark.parametrize("change", [{"max_linear_speed": 50.0}, {"max_linear_accel": 1e6},
                                    {"max_linear_speed": 1.0}, {"workspace_high": [0.9, 0.6, 0.9]},
                                    {"joint_lower": [-3.0] * 7}, {"passivity_filter": False},
                                    {"max_angular_speed": 2.5}, {"hold_damping": [1.0] * 7}])
def test_no_limit_can_be_loosened_while_running(arm, change: dict[str, Any]) -> None:
    """``max_linear_speed := 50`` and ``max_linear_accel := 1e6`` were accepted at once
    (the output went from 0.8 to 9.0 m/s). Now every loosening is refused: beyond the
    robot's published ceiling by rclpy's own range check, within it by the hard limits
    of configure; a parameter without a direction is fixed."""
    h, node = arm
    before = node.params(node.limit_names)
    chain = node.chain
    result = _set(h, "safety_filter", **change)
    assert not result.successful, change
    assert node.chain is chain and node.params(node.limit_names) == before


def test_limits_may_be_tightened_and_loosened_back_to_their_hard_limit(arm) -> None:
    h, node = arm
    assert _set(h, "safety_filter", max_linear_speed=0.3).successful
    limit = next(f for f in node.chain.limits if f.name == "velocity_limit")
    assert limit.params.upper[0] == pytest.approx(0.3)
    assert _set(h, "safety_filter", max_linear_speed=0.8).successful  # back to the hard limit, not beyond
    assert not _set(h, "safety_filter", max_linear_speed=0.81).successful
    assert _set(h, "safety_filter", workspace_high=[0.6, 0.3, 0.6]).successful  # a smaller box


def test_the_descriptors_say_the_hard_limits(arm) -> None:
    """The static ranges were open to 1.8e308; the robot's published ceilings cap them and
    configure narrows them to the hard limits."""
    from sim2real.sim.arm import constants as ARM

    _, node = arm
    speed = node.describe_parameter("max_linear_speed")
    assert speed.floating_point_range[0].to_value == pytest.approx(0.8) and ARM.CARTESIAN_SPEED_LIMIT >= 0.8
    assert "hard limit 0.8" in speed.additional_constraints
    assert node.describe_parameter("max_linear_accel").floating_point_range[0].to_value == pytest.approx(10.0)


def test_parameter_changes_are_recorded_in_the_bag() -> None:
    from sim2real.ros_nodes.recorder import KNOWN_TYPES
    from sim2real.ros_nodes.settings import DEFAULT_TOPICS

    assert "/parameter_events" in DEFAULT_TOPICS and KNOWN_TYPES["parameter_events"] == (
        "rcl_interfaces/msg/ParameterEvent")
