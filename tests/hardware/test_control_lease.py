"""The one-host-at-a-time rule every protocol emulator applies."""

from __future__ import annotations

from sim2real.hardware.emulator.control_lease import ControlLease

A, B = (("127.0.0.1", 5000), 11), (("127.0.0.1", 6000), 22)


def test_first_hello_takes_control_and_others_wait_out_the_timeout() -> None:
    lease = ControlLease(timeout=1.0)
    assert lease.claim(A, 0.0) == "granted"
    assert lease.claim(B, 0.5) == "busy"
    lease.heard(A, 0.9)  # a command renews it
    assert lease.claim(B, 1.8) == "busy"
    lease.heard(B, 1.85)  # a refused host's packets renew nothing
    assert lease.claim(B, 1.95) == "granted" and lease.holds(B) and not lease.holds(A)


def test_the_same_address_with_a_new_session_is_another_host() -> None:
    lease = ControlLease(timeout=1.0)
    lease.claim(A, 0.0)
    assert lease.claim((A[0], 99), 0.1) == "busy"
    assert lease.claim(A, 0.2) == "renewed"


def test_only_the_holder_releases() -> None:
    lease = ControlLease(timeout=1.0)
    lease.claim(A, 0.0)
    assert not lease.release(B) and lease.holds(A)
    assert lease.release(A) and lease.holder is None
    assert lease.claim(B, 0.1) == "granted"


def test_a_clock_step_back_never_hands_control_over() -> None:
    lease = ControlLease(timeout=1.0)
    lease.claim(A, 100.0)
    assert lease.claim(B, 50.0) == "busy"  # heard "in the future": no silence proven
    assert lease.silent_for(50.0) < 0
