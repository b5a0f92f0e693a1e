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


@pytest.fixture
def drone(tmp_path):
    from rclpy.node import Node

    h = Harness()
    h.add(Node("param_client", context=h.context))
    node = h.add(safety_node(h.context, "drone", latch_file=str(tmp_path / "latch.json")))
    h.spin()
    yield h, node
    h.close()


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
