"""A stop asked by a signal ends the loop that waits for it (sim2real.stopping)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

from sim2real.stopping import StopRequest, stop_on_signals

# The main thread spends its whole time inside wait(0), so a signal's handler nearly
# always runs there: with threading.Event (whose set() takes the lock wait() holds) it
# deadlocked on 37 of 60 SIGTERMs.
WAITING_LOOP = textwrap.dedent("""
    import sys
    from sim2real.stopping import StopRequest, stop_on_signals
    stop = StopRequest()
    with stop_on_signals(stop.set):
        sys.stdout.write("waiting\\n")
        sys.stdout.flush()
        while not stop.wait(0):
            pass
    print("stopped", flush=True)
""")


def test_a_signal_ends_a_loop_waiting_on_the_request() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        proc = subprocess.Popen([sys.executable, "-c", WAITING_LOOP], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "waiting\n"
            time.sleep(0.05)
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=10)
        finally:
            proc.kill()
        assert (proc.returncode, out) == (0, "stopped\n"), sig


def test_wait_returns_when_asked_or_at_its_timeout() -> None:
    stop = StopRequest()
    start = time.monotonic()
    assert stop.wait(0.05) is False
    assert time.monotonic() - start >= 0.05
    threading.Timer(0.05, stop.set).start()
    assert stop.wait(10) is True
    assert time.monotonic() - start < 5
    assert stop.is_set() and stop.wait(0)
    stop.clear()
    assert not stop.is_set()


def test_signal_handlers_come_back_after_the_block() -> None:
    before = signal.getsignal(signal.SIGTERM)
    stop = StopRequest()
    with stop_on_signals(stop.set):
        signal.raise_signal(signal.SIGTERM)
        assert stop.is_set()
    assert signal.getsignal(signal.SIGTERM) is before
