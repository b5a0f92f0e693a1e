"""Test-wide set-up. Importing sim2real first picks the headless GL backend
before any test module imports mujoco (MuJoCo reads MUJOCO_GL at import)."""

import os
import tempfile

import sim2real  # noqa: F401  (side effect: MUJOCO_GL)

# DDS traffic stays on this machine in every test that touches ROS 2.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(10 + os.getpid() % 200))
# Safety latches persist under $ROS_HOME (policies/safety/latch.py): keep the tests' own.
os.environ["ROS_HOME"] = tempfile.mkdtemp(prefix="sim2real-test-ros-home-")


import pytest


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance (2 CPUs, loopback only) for every test that fans work out;
    starting one costs ~4 s, so the tests share it."""
    from sim2real.policies.common import cluster

    cluster.connect(cluster.LOCAL, num_cpus=2)
    import ray

    yield ray
    ray.shutdown()
