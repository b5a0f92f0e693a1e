"""Who may command a robot: one controlling host at a time.

Every protocol emulator keeps one :class:`ControlLease`, and it is what a real robot's
controller does (Franka's FCI takes one client; a second connection is refused while
the first holds control). A host is identified by its address *and* its session (a
random number per connection), so a restarted driver on the same machine is a new
host. The rules:

* The first host to say hello takes the lease.
* Anything valid the holder sends (hello, command) renews it.
* Another host's hello is refused (and counted as ``busy``) while the holder has been
  heard within ``timeout`` seconds; the robot keeps streaming to the holder.
* After ``timeout`` seconds of silence from the holder, the next hello takes over
  (the robot holds until the new host's first command).
* The holder may give the lease back at once with an explicit release (the host's
  link sends one when it closes); the robot then holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Host = tuple[Any, int]
"""(address, session): the address as the socket reports it, the host's session id."""


@dataclass
class ControlLease:
    timeout: float
    """Seconds of silence from the holder after which another host may take over."""
    holder: Host | None = None
    last_heard: float = float("-inf")

    def claim(self, host: Host, now: float) -> str:
        """A hello from ``host``: ``"granted"`` (a new holder), ``"renewed"`` (the holder
        again) or ``"busy"`` (refused: another host holds the lease)."""
        if host == self.holder:
            self.last_heard = now
            return "renewed"
        # A clock that stepped back (heard "in the future") proves no silence: refused too.
        if self.holder is not None and now - self.last_heard <= self.timeout:
            return "busy"
        self.holder, self.last_heard = host, now
        return "granted"

    def holds(self, host: Host) -> bool:
        return self.holder is not None and host == self.holder

    def heard(self, host: Host, now: float) -> None:
        """A valid packet from the holder renews the lease."""
        if self.holds(host):
            self.last_heard = now

    def release(self, host: Host) -> bool:
        """The holder gives the lease back (``False``: ``host`` did not hold it)."""
        if not self.holds(host):
            return False
        self.holder, self.last_heard = None, float("-inf")
        return True

    def silent_for(self, now: float) -> float:
        """Seconds since the holder was last heard (``inf``: no holder)."""
        return float("inf") if self.holder is None else now - self.last_heard
