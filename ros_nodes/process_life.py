"""How a node's process lives and ends (one process per node: ``ros2 launch``,
``sim2real deploy --processes``, ``python -m sim2real.ros_nodes.<node>``).

* It ends with its parent. ``ros2 launch`` does not pass SIGTERM on to the processes it
  started (ros2/launch#666: it dies and leaves them running), and nothing can when the
  launcher is killed with SIGKILL or runs out of memory. So each node asks the kernel
  for SIGTERM when its parent ends (Linux ``PR_SET_PDEATHSIG``), and leaves the way
  SIGTERM always makes it leave: the robot sent to its safe state, files closed.
* A stop signal (SIGINT: Ctrl-C reaches every process of the terminal's group, and
  launch may send another; SIGTERM: launch's escalation, a service manager) is never
  raised: no KeyboardInterrupt lands in an import, a constructor or a shutdown step.
  While the process is still starting (importing: seconds, before any ROS entity or
  robot link exists) it ends the process at once with 0: nothing to undo, and launch
  need not wait (it escalated to SIGTERM after 5 s of imports). Once the node runs, it
  is *noted*; the node's loop sees the note and ends in order
  (:func:`sim2real.ros_nodes.base.run_node`).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
PR_SET_PDEATHSIG = 1
"""``prctl`` option (linux/prctl.h): the signal this process gets when its parent ends."""


class StopSignals:
    """The stop signals this process has received."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.starting = True
        """A stop signal ends the process at once (see :meth:`running`)."""

    @property
    def requested(self) -> bool:
        return bool(self.received)

    def running(self) -> None:
        """From now on a stop signal is only noted: the process has something to wind
        down (call it before creating the ROS context)."""
        self.starting = False

    def _note(self, signum: int, _frame: object) -> None:
        self.received.append(signum)
        if self.starting:  # nothing exists yet that needs an orderly end
            os._exit(0)


_STOP: StopSignals | None = None


def note_stop_signals() -> StopSignals:
    """From now on SIGINT and SIGTERM end the starting process with 0, then (after
    :meth:`StopSignals.running`) are noted on the returned object, instead of raising
    KeyboardInterrupt or terminating the process by the default action. Call it first
    thing in a node process (main thread); calling it again returns the same object."""
    global _STOP
    if _STOP is None:
        _STOP = StopSignals()
        for sig in STOP_SIGNALS:
            signal.signal(sig, _STOP._note)
    return _STOP


def ignore_stop_signals() -> None:
    """For the last moments of the process: a late SIGINT (launch's, after the
    terminal's) must not turn a clean exit into death by signal while Python finalizes
    (it resets handled signals to their default action)."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def end_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Have the kernel send ``sig`` to this process when its parent ends; ``False`` where
    that cannot be asked (not Linux).

    The parent is the *thread* that started this process: a launcher must start node
    processes from a thread that lives as long as they should (``ros2 launch`` and
    :class:`~sim2real.ros_nodes.graph.ProcessGraph` use their main thread).
    """
    if not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(int(sig)), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_PDEATHSIG): {os.strerror(err)}")
    if os.getppid() != parent:  # the parent ended before the request took effect
        os.kill(os.getpid(), sig)
    return True
