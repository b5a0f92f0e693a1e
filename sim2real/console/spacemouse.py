"""A 3Dconnexion SpaceMouse on the console's own machine (pyspacemouse) as an operator
input beside the page's keyboard and gamepads: holding its left button takes over,
releasing gives back; the puck's push drives x, y, z and its twist the yaw, with the
same rules as every other input (one operator, bounds, blend, dead man).

Its live axes and buttons go to the page's device panel, so a puck that reads zeros is
seen before it matters. Needs ``pip install "sim2real[spacemouse]"`` and read access to
the device's hidraw node.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable
from typing import Any

from sim2real.errors import Sim2RealError
from sim2real.policies.teleop.target import ConsoleTarget

SESSION = "spacemouse"
DEADZONE = 0.05


def open_spacemouse() -> Callable[[], Any]:
    """pyspacemouse's ``read`` once the device is open."""
    try:
        pyspacemouse = importlib.import_module("pyspacemouse")  # optional, outside sim2real[all]
    except ImportError as exc:
        raise Sim2RealError("the SpaceMouse needs pyspacemouse: pip install \"sim2real[spacemouse]\"") from exc
    if not pyspacemouse.open():
        raise Sim2RealError("no SpaceMouse found (check the USB connection and hidraw permissions)")
    return pyspacemouse.read


class SpaceMouseInput:
    """Polls a SpaceMouse and commands ``target`` as the session ``spacemouse``.

    Args:
        read: Returns the device's state (``x, y, z, roll, pitch, yaw`` in [-1, 1] and
            ``buttons``), pyspacemouse's ``read``.
    """

    def __init__(self, target: ConsoleTarget, read: Callable[[], Any], rate: float = 100.0) -> None:
        self.target, self.read, self.period = target, read, 1.0 / rate
        self.engaged = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> None:
        """Read the device once and act on it."""
        state = self.read()
        # Push forward/left/up and twist left, as the robot's x, y, z and yaw.
        by_name = {"vx": float(state.y), "vy": -float(state.x), "vz": float(state.z), "wz": -float(state.yaw)}
        by_name["yaw_rate"] = by_name["wz"]
        by_name = {k: 0.0 if abs(v) < DEADZONE else v for k, v in by_name.items()}
        buttons = [int(b) for b in getattr(state, "buttons", [])]
        held = bool(buttons and buttons[0])
        axes = [by_name.get(name, 0.0) for name in self.target.deployment.operator.names]
        puck = [by_name[k] for k in ("vx", "vy", "vz", "wz")]
        now, control = time.monotonic(), self.target.control
        with self.target.lock:
            self.target.devices[SESSION] = {"axes": [round(v, 3) for v in puck], "buttons": buttons}
            if held and not self.engaged:
                control.take_over(SESSION, now)
            elif not held and self.engaged:
                control.give_back(SESSION, now)
                control.release(SESSION, now)
            if held:
                control.command(SESSION, axes, now)
        self.engaged = held
        if held:
            self.target.commanded()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="console-spacemouse", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:  # an unplugged device: the operator's stream stops, the dead man holds
                self.target.log(f"SpaceMouse stopped: {exc}")
                return
            self._stop.wait(self.period)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
