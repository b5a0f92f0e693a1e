"""Test-wide set-up. Importing sim2real first picks the headless GL backend
before any test module imports mujoco (MuJoCo reads MUJOCO_GL at import).

Under pytest-xdist (``make test``: two workers) the tests fall in two groups, each
run by one worker: those that judge wall-clock timing (a ROS graph, the console in a
browser, a robot's emulator) one at a time, and the computing ones (training, physics,
files) beside them at a lower CPU priority, so that a training run never takes the core
a graph's deadline needs. Each worker has its own slice of DDS domains."""

import atexit
import contextlib
import os
import shutil
import tempfile

import pytest
from hypothesis import settings

import sim2real  # noqa: F401  (side effect: MUJOCO_GL)

# Property tests draw the same examples on every run (a suite that never flakes: CI
# judges a change, not the draw); HYPOTHESIS_PROFILE=explore draws fresh ones to hunt for
# new counterexamples (`make explore`), whose failures then become fixed examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
"""``gw0``, ``gw1``, ... under pytest-xdist, else empty."""

WALL_CLOCK = ("ros_nodes", "console", "hardware", "test_demo.py", "test_launch_policy.py",
              "test_dependencies.py")
"""The tests (folders and files under tests/) that judge wall-clock timing."""

COMPUTE_NICE = 10
"""The computing tests' niceness under xdist: where they contend for a core with a
wall-clock test's threads they get about 1 slice in 10 (CFS weights 110 against 1024);
on an idle core they run at full speed."""


def _domain_slice() -> tuple[int, int]:
    """The DDS domains this test process may use, [low, high): under pytest-xdist each
    worker gets its own slice of 1..232, so two workers' graphs never share a domain
    (a test on domain d may also use d + 1 for its robot's side)."""
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(WORKER[2:] or 0)
    width = 232 // count
    return 1 + index * width, 1 + (index + 1) * width


# DDS traffic stays on this machine in every test that touches ROS 2.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
_low, _high = _domain_slice()
os.environ["SIM2REAL_TEST_DOMAINS"] = f"{_low}:{_high}"  # read by dds_domains.unique_domain_id
if WORKER or not os.environ.get("ROS_DOMAIN_ID"):
    os.environ["ROS_DOMAIN_ID"] = str(_low)  # the slice's first: dds_domains hands out the rest
# Safety latches persist under $ROS_HOME (policies/safety/latch.py): keep the tests' own.
os.environ["ROS_HOME"] = tempfile.mkdtemp(prefix="sim2real-test-ros-home-")
atexit.register(shutil.rmtree, os.environ["ROS_HOME"], True)  # every test process made one and left it


def _judges_wall_clock(nodeid: str) -> bool:
    """``nodeid``: ``tests/<folder or file>/...::test``, relative to the repository."""
    parts = nodeid.split("::")[0].split("/")
    return len(parts) > 1 and parts[1] in WALL_CLOCK


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Two groups, one per worker: the wall-clock tests one at a time on one, the
    computing tests on the other. (pytest-xdist's own ``loadgroup`` marks do not work
    with pytest 9.2, which no longer reads the node id xdist rewrites.)"""
    from xdist.scheduler import LoadScopeScheduling

    class TwoGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "wall_clock" if _judges_wall_clock(nodeid) else "compute"

    return TwoGroups(config, log)


def _wall_clock_done(config: pytest.Config) -> str:
    """A file the wall-clock worker leaves when its group is done, in this run's
    temporary directory (xdist gives each worker ``<run's basetemp>/popen-gwN``)."""
    return os.path.join(os.path.dirname(str(config.option.basetemp)), "wall-clock-tests-done")


_ran_wall_clock = False


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under xdist, a computing test (and the processes and threads it starts) runs at
    :data:`COMPUTE_NICE` while the wall-clock tests run beside it, at normal priority
    once they are done (on a busy machine it would crawl otherwise); a wall-clock test
    at normal priority."""
    global _ran_wall_clock
    if not WORKER:
        return
    wall_clock = _judges_wall_clock(item.nodeid)
    _ran_wall_clock |= wall_clock
    want = 0 if wall_clock or os.path.exists(_wall_clock_done(item.config)) else COMPUTE_NICE
    try:
        if os.getpriority(os.PRIO_PROCESS, 0) != want:
            os.setpriority(os.PRIO_PROCESS, 0, want)
    except OSError:  # lowering it back needs CAP_SYS_NICE: then it stays lower
        pass


def pytest_sessionfinish(session: pytest.Session) -> None:
    """xdist ends a worker once no work is left for it: the wall-clock one says so."""
    if WORKER and _ran_wall_clock:
        with open(_wall_clock_done(session.config), "w"):
            pass


@pytest.fixture(scope="session")
def ray_local():
    """One local Ray instance (2 CPUs, loopback only) for every test that fans work out;
    starting one costs ~4 s, so the tests share it.

    Ray's own processes (GCS, raylet) start at normal priority even when a computing test
    at :data:`COMPUTE_NICE` starts them: their start has a 30 s deadline of Ray's own,
    which niced daemons missed beside the wall-clock tests on a busy machine (4 errors in
    one fresh-clone run). Its workers run at Ray's worker niceness (15) all the same."""
    from sim2real.policies.common import cluster

    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        with contextlib.suppress(OSError):  # lowering it needs CAP_SYS_NICE
            os.setpriority(os.PRIO_PROCESS, 0, 0)
        cluster.connect(cluster.LOCAL, num_cpus=2)
    finally:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, niceness)
    import ray

    yield ray
    ray.shutdown()


@pytest.fixture
def realtime_caller():
    """The test's own thread, and every thread it starts, at real-time priority where
    permitted (SCHED_FIFO at the executors' priority; threads inherit it): for a test
    whose body stands in for a real-time caller, such as the policy feeding a backend's
    0.125-0.15 s command deadman. At normal priority a loaded machine delays the test's
    own commands past the deadline it checks; the backend's behaviour is what is tested,
    not the scheduling of the test thread. Start no child process under it: a child
    inherits the priority and the process's RLIMIT_RTTIME, which kills a Python start-up
    that computes for half a second without blocking."""
    from sim2real.hardware.realtime import EXECUTOR_PRIORITY, realtime_thread

    with realtime_thread("test caller", EXECUTOR_PRIORITY, cpu=None) as status:
        yield status
