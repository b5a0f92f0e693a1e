"""Pure pursuit along the planner's waypoints (the gait reference's twist and crouch in
the waypoints task) and the crouch of the trot reference."""

from __future__ import annotations

import numpy as np

from sim2real.sim.quadruped import constants as c
from sim2real.sim.quadruped.gait import TrotReference
from sim2real.sim.quadruped.planner import WALK_HEIGHT
from sim2real.sim.quadruped.steering import MAX_CROUCH, PursuitGains, pursue

GAINS = PursuitGains()


def _pursue(points: list[tuple[float, float]], heights: tuple[float, float] = (WALK_HEIGHT, WALK_HEIGHT),
            done: bool = False) -> tuple[np.ndarray, float]:
    twist, crouch = pursue(np.array([points], dtype=float), np.array([heights], dtype=float), np.array([done]))
    return twist[0], float(crouch[0])


def test_straight_ahead_walks_at_full_speed_without_turning() -> None:
    twist, crouch = _pursue([(1.0, 0.0), (1.4, 0.0)])
    np.testing.assert_allclose(twist, [GAINS.speed, 0.0, 0.0], atol=1e-12)
    assert crouch == 0.0


def test_a_waypoint_to_the_left_turns_left_and_one_behind_turns_in_place() -> None:
    twist, _ = _pursue([(1.0, 0.5), (1.4, 0.8)])
    assert twist[2] > 0.5 and twist[1] > 0.0 and 0.0 < twist[0] < GAINS.speed
    behind, _ = _pursue([(-1.0, -0.1), (-1.4, -0.1)])
    assert behind[0] == 0.0 and behind[2] == -GAINS.max_yaw_rate  # turns the short way round
    assert abs(behind[1]) <= GAINS.max_lateral


def test_a_reached_waypoint_hands_the_aim_to_the_next() -> None:
    twist, _ = _pursue([(0.2, 0.0), (0.4, 0.6)])  # within the lookahead: aim at the next one
    assert twist[2] > 0.5


def test_a_low_waypoint_ahead_crouches_and_slows_before_the_trunk_is_under_it() -> None:
    allowed = WALK_HEIGHT - 0.06
    twist, crouch = _pursue([(1.0, 0.0), (1.4, 0.0)], heights=(WALK_HEIGHT, allowed))
    assert abs(crouch - 0.06) < 1e-12 and twist[0] == GAINS.crouched_speed
    _, deepest = _pursue([(1.0, 0.0), (1.4, 0.0)], heights=(0.05, 0.05))
    assert deepest == MAX_CROUCH


def test_at_the_goal_it_stands_still() -> None:
    twist, crouch = _pursue([(0.0, 0.0), (0.0, 0.0)], heights=(0.1, 0.1), done=True)
    assert not twist.any() and crouch == 0.0


def test_the_trot_reference_crouches_by_the_asked_height() -> None:
    ref = TrotReference(2)
    q = c.DEFAULT_POSE + ref.joint_offsets(np.zeros((2, 3)), np.array([0.0, 0.05]))  # standing: no stepping
    q = q - ref.knee_offset  # the servo-sag offset on top of the legs' geometry
    thigh, calf = q[:, 1::3], q[:, 2::3]
    # Equal thigh and calf: the hip-foot distance is 2 l cos(bend / 2), bend = -calf.
    reach = 2 * c.THIGH_LENGTH * np.cos(-calf / 2)
    np.testing.assert_allclose(reach[1] - reach[0], -0.05, atol=1e-9)
    np.testing.assert_allclose(thigh[0] - thigh[1], calf[1] / 2 - calf[0] / 2, atol=1e-9)  # feet stay under the hips
