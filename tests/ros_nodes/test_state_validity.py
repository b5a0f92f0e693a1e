"""Issue 42, defect 11: state the filter must not believe.

* Header stamps were ignored: a state stamped 10 s old, 10 s ahead or 11 days old was
  used as fresh. Now each state stream compares the stamp with the node's clock within
  ``stamp_tolerance`` (over real DDS here).
* Odometry with components near 1e155 became a zero quaternion (an overflowing norm);
  now every orientation goes through one check (:func:`messages.unit_quaternion`) and
  values beyond any physical magnitude are refused."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from ros_harness import Harness, make_probe, safety_node, wait_for

from sim2real.ros_nodes import messages as M


@pytest.mark.parametrize("offset", [-10.0, 10.0, -11 * 86400.0])
def test_a_misdated_state_is_refused_and_the_filter_holds(tmp_path: Path, offset: float) -> None:
    h = Harness()
    try:
        safety = h.add(safety_node(h.context, "arm", latch_file=str(tmp_path / "latch.json")))
        probe = h.add(make_probe(h.context, "arm"))
        h.spin()
        nudge = np.r_[0.1, np.zeros(6)]

        def passes() -> bool:
            probe.publish_state()
            probe.publish_raw(nudge)
            time.sleep(0.02)
            return safety.last_output is not None and safety.last_output.mode == "nominal"

        assert wait_for(passes, 10.0, step=0.0)
        rejected = safety.stats["rejected_state"]
        names = list(probe.info.joints)
        end = time.monotonic() + 0.5
        while time.monotonic() < end:  # the same state, stamped `offset` seconds away
            stamp = M.sec_to_stamp(probe.get_clock().now().nanoseconds * 1e-9 + offset)
            probe.pub_joints.publish(M.joint_state(names, np.r_[probe.q, 0.02, 0.02], np.zeros(9), None, stamp))
            probe.pub_ee.publish(M.pose_stamped(np.array([0.5, 0.0, 0.4]), np.array([0.0, 1.0, 0.0, 0.0]), stamp))
            probe.publish_raw(nudge)
            time.sleep(0.02)
        assert safety.stats["rejected_state"] >= rejected + 10
        assert safety.last_output.mode == "safe" and "state stale" in safety.last_output.reason
        assert safety.streams.rejected["joint_states"] > 0
    finally:
        h.close()


def _odometry(quat_xyzw: tuple[float, float, float, float], pos=(0.0, 0.0, 1.0), vel=(0.0, 0.0, 0.0)):
    from nav_msgs.msg import Odometry

    msg = Odometry()
    msg.pose.pose.position.x, msg.pose.pose.position.y, msg.pose.pose.position.z = pos
    o = msg.pose.pose.orientation
    o.x, o.y, o.z, o.w = quat_xyzw
    msg.twist.twist.linear.x, msg.twist.twist.linear.y, msg.twist.twist.linear.z = vel
    return msg


@pytest.mark.parametrize("quat", [(1e155, 1e155, 0.0, 1e155), (0.0, 0.0, 0.0, 1e200), (0.0, 0.0, 0.0, 1e-200),
                                  (0.0, 0.0, 0.0, 0.0), (float("nan"), 0.0, 0.0, 1.0)])
def test_an_orientation_that_is_no_rotation_is_refused(quat) -> None:
    assert isinstance(M.parse_odometry(_odometry(quat)), str)
    from geometry_msgs.msg import Pose
    from sensor_msgs.msg import Imu

    pose = Pose()
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = quat
    assert isinstance(M.parse_pose(pose), str)
    imu = Imu()
    imu.orientation = pose.orientation
    assert isinstance(M.parse_imu(imu), str)


def test_implausible_magnitudes_are_refused_and_a_unit_quaternion_passes() -> None:
    assert isinstance(M.parse_odometry(_odometry((0.0, 0.0, 0.0, 1.0), pos=(1e155, 0.0, 0.0))), str)
    assert isinstance(M.parse_odometry(_odometry((0.0, 0.0, 0.0, 1.0), vel=(0.0, 1e155, 0.0))), str)
    _, quat, _, _ = M.parse_odometry(_odometry((0.0, 0.0, 0.0, 1.2)))
    np.testing.assert_allclose(quat, [1.0, 0.0, 0.0, 0.0])
