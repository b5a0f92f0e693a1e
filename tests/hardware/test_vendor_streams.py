"""The Crazyflie's setpoint stream and the arm's command stream: real-time threads that
send the newest command they hold and never wait for the caller's computation, while the
caller never waits for them (or for the vendor's library). Behaviour only: who waits on
whom, what is sent, which scheduling the thread runs under."""

from __future__ import annotations

import threading
import time

import numpy as np
from ros2_control_rig import Rig, wait_for
from test_crazyflie_backend import Served, fly

from sim2real.hardware.backend import Phase
from sim2real.hardware.crazyflie.backend import CrazyflieBackend
from sim2real.hardware.realtime import probe
from sim2real.sim.drone import constants as C

PERMITTED = probe().realtime


def test_a_crazyflie_command_never_waits_on_cflib_and_the_newest_is_sent(realtime_caller) -> None:
    """The regression: command() sent the setpoint itself, through cflib's send lock (and,
    on a radio, its queue), so a busy link stalled the bridge's executor. Now it hands the
    newest setpoint to the stream and returns; the stream sends the newest one."""
    served = Served()
    backend = CrazyflieBackend("ctbr", {"uri": served.uri})
    try:
        backend.connect(3.0)
        backend.enable()
        fly(backend, 0.3, z_target=0.2)
        assert wait_for(lambda: bool(backend.health().detail["realtime"]), 2.0)
        if PERMITTED:
            assert backend.health().detail["realtime"]["policy"] == "SCHED_FIFO"
        assert backend.health().detail["setpoint_stream"]["ticks"] > 0
        lock = backend._cf._send_lock  # cflib's: held while anything is sent on the link
        hover = np.array([C.HOVER_THRUST * 0.8, 0.0, 0.0, 0.0])
        sent = backend.counters()["setpoints_sent"]
        done = threading.Event()
        with lock:  # the link busy for 0.1 s
            caller = threading.Thread(target=lambda: ([backend.command(hover * (1 + 0.01 * k)) for k in range(5)],
                                                      done.set()), daemon=True)
            caller.start()
            returned = done.wait(1.0)
            time.sleep(0.1 if returned else 0.0)
        caller.join(2.0)
        assert returned, "command() waited for the link"
        assert wait_for(lambda: backend.counters()["setpoints_sent"] > sent, 1.0)
        time.sleep(0.02)
        assert backend.counters()["setpoints_sent"] - sent <= 2  # the one in the way, then the newest
        assert backend.phase is Phase.ENABLED
    finally:
        if backend.phase is not Phase.ESTOPPED:
            backend.estop("test teardown")
        backend.close()
        served.stop()


def test_a_stuck_arm_command_cannot_hold_off_the_deadman(rig: Rig, realtime_caller) -> None:
    """The regression: command() held the backend's lock through its IK step, so the
    command stream (and with it the deadman) waited for it. A command() that takes 0.4 s
    (a stalled host) now runs its IK outside the lock: the deadman holds the arm 0.125 s
    after the last command, and the late result is dropped."""
    backend = rig.backend
    backend.enable()
    assert wait_for(lambda: bool(backend.detail()["realtime"]), 2.0)  # reported once the stream runs
    if PERMITTED:
        assert backend.detail()["realtime"]["policy"] == "SCHED_FIFO"
    rig.drive(np.r_[np.zeros(6), 0.04], 0.2)
    real_step = backend._ik.step

    def slow_step(q: np.ndarray, pos: np.ndarray, quat: np.ndarray, dt: float,
                  posture: np.ndarray | None = None) -> np.ndarray:
        time.sleep(0.4)
        return real_step(q, pos, quat, dt, posture)

    backend._ik.step = slow_step  # type: ignore[method-assign]  # the real IK, on a host that takes 0.4 s for it
    holds, ignored = backend.counters()["holds"], backend.counters()["commands_ignored"]
    backend.command(np.r_[0.05, np.zeros(5), 0.04])
    returned = time.monotonic()
    assert backend.counters()["holds"] == holds + 1 and "no command for" in backend.last_hold["reason"]
    assert backend.last_hold["time"] < returned  # held while the command was still being computed
    assert backend.counters()["commands_ignored"] == ignored + 1 and backend.phase is Phase.CONNECTED
    assert backend.detail()["command_stream"]["ticks"] > 0
