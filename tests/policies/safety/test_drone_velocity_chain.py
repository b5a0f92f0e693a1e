"""The drones' safety chain in the ``velocity`` space: the acceleration, the fence ahead
and the speed box bound every command, and the safe action hovers, then lands, with or
without odometry."""

from __future__ import annotations

import numpy as np
import pytest

from sim2real.policies.safety import SafetyState, command_space, make_chain
from sim2real.policies.safety.chain import SafetyChain
from sim2real.policies.safety.presets import params_from_dict

DT = 0.02


def _state(t: float, pos: tuple[float, float, float], fresh: bool = True) -> SafetyState:
    state = SafetyState(now=t)
    stamp = t if fresh else t - 1.0
    state.set(stamp, base_pos=np.array(pos, float), base_quat=np.array([1.0, 0.0, 0.0, 0.0]),
              base_lin_vel=np.zeros(3), base_ang_vel=np.zeros(3))
    state.state_stamp = stamp
    return state


def _run(chain: SafetyChain, command: list[float] | None, steps: int, pos: tuple[float, float, float],
         t0: float = 0.0, fresh: bool = True) -> tuple[np.ndarray, str, float]:
    out, t = None, t0
    for k in range(1, steps + 1):
        t = t0 + DT * k
        if command is not None:
            chain.accept(np.array(command, float), t)
        out = chain.step(_state(t, pos, fresh))
    assert out is not None and out.command is not None
    return out.command, out.mode, t


@pytest.mark.parametrize("robot", ["drone", "x500"])
def test_speed_and_acceleration_are_bounded(robot: str) -> None:
    params = params_from_dict(robot, {})
    chain = make_chain(command_space(robot, "velocity"), params)
    first, mode, _ = _run(chain, [10.0, -10.0, 10.0], 1, (0.0, 0.0, 1.0))
    assert mode == "nominal"
    # From rest, at most the change the rate limit credits a first command (its longest step).
    assert np.abs(first) == pytest.approx(np.full(3, params.max_accel * params.rate_max_dt_periods * DT))
    last, _, _ = _run(chain, [10.0, -10.0, 10.0], 100, (0.0, 0.0, 1.0), t0=DT)
    assert last == pytest.approx([params.max_speed[0], -params.max_speed[1], params.max_speed[2]])
    assert chain.accept(np.array([0.1, np.nan, 0.0]), 3.0).startswith("non-finite value")


def test_a_velocity_toward_the_fence_stops_inside_its_margin_and_away_passes() -> None:
    chain = make_chain(command_space("drone", "velocity"))  # fence x 3.0 m; 0.3 m margin; 1 s brake
    toward, _, t = _run(chain, [1.0, 0.0, 0.0], 60, (2.5, 0.0, 1.0))
    assert toward[0] == pytest.approx(0.2)  # (2.7 - 2.5) m in 1 s
    at_margin, _, t = _run(chain, [1.0, 0.0, 0.0], 10, (2.75, 0.0, 1.0), t0=t)
    assert at_margin[0] == pytest.approx(0.0)
    away, mode, _ = _run(chain, [-1.0, 0.0, 0.0], 60, (2.75, 0.0, 1.0), t0=t)
    assert mode == "nominal" and away[0] == pytest.approx(-1.0)


def test_without_fresh_odometry_the_command_is_not_used() -> None:
    chain = make_chain(command_space("drone", "velocity"))
    _, _, t = _run(chain, [0.5, 0.0, 0.0], 40, (0.0, 0.0, 1.0))
    out, mode, _ = _run(chain, [0.5, 0.0, 0.0], 5, (0.0, 0.0, 1.0), t0=t, fresh=False)
    assert mode == "safe" and out[0] < 0.5


def test_the_safe_action_returns_to_the_engage_point_then_lands() -> None:
    params = params_from_dict("drone", {})
    chain = make_chain(command_space("drone", "velocity"), params)
    _, _, t = _run(chain, [0.5, 0.0, 0.0], 40, (0.0, 0.0, 1.0))
    _, mode, t = _run(chain, None, 5, (0.0, 0.0, 1.0), t0=t)  # the policy fell silent: the safe action
    assert mode == "safe"
    engage = t
    hover, mode, t = _run(chain, None, 10, (0.2, 0.0, 1.0), t0=t)  # blown 0.2 m off: back to the engage point
    assert mode == "safe" and hover[0] == pytest.approx(-0.2, abs=0.03) and hover[2] == pytest.approx(0.0, abs=0.01)
    steps = round((engage + params.hover_seconds + 0.5 - t) / DT)
    land, mode, _ = _run(chain, None, steps, (0.0, 0.0, 1.0), t0=t)
    assert mode == "safe" and land == pytest.approx([0.0, 0.0, -params.land_speed])


def test_the_blind_safe_action_hovers_on_the_vehicles_estimate_then_descends() -> None:
    params = params_from_dict("drone", {})
    chain = make_chain(command_space("drone", "velocity"), params)
    _, _, t = _run(chain, [0.0, 0.0, 0.0], 40, (0.0, 0.0, 1.0))
    hover, mode, t = _run(chain, [0.5, 0.0, 0.0], 10, (0.0, 0.0, 1.0), t0=t, fresh=False)
    assert mode == "safe" and hover == pytest.approx(np.zeros(3))
    land, mode, _ = _run(chain, [0.5, 0.0, 0.0], round(params.hover_seconds / DT) + 5, (0.0, 0.0, 1.0), t0=t,
                         fresh=False)
    assert mode == "safe" and land == pytest.approx([0.0, 0.0, -params.land_speed])
