"""PX4's flight modes as MAVLink carries them (``px4_custom_mode.h``).

HEARTBEAT's ``custom_mode`` holds the main mode in bits 16-23 and the sub mode (AUTO's)
in bits 24-31, with ``MAV_MODE_FLAG_CUSTOM_MODE_ENABLED`` in ``base_mode``;
``MAV_CMD_DO_SET_MODE`` carries the main mode in param2 and the sub mode in param3.
"""

from __future__ import annotations

MAIN_MANUAL, MAIN_ALTCTL, MAIN_POSCTL, MAIN_AUTO, MAIN_ACRO, MAIN_OFFBOARD, MAIN_STABILIZED = 1, 2, 3, 4, 5, 6, 7
SUB_AUTO_READY, SUB_AUTO_TAKEOFF, SUB_AUTO_LOITER, SUB_AUTO_MISSION, SUB_AUTO_RTL, SUB_AUTO_LAND = 1, 2, 3, 4, 5, 6

MODES: dict[str, tuple[int, int]] = {
    "MANUAL": (MAIN_MANUAL, 0),
    "ALTCTL": (MAIN_ALTCTL, 0),
    "POSCTL": (MAIN_POSCTL, 0),
    "OFFBOARD": (MAIN_OFFBOARD, 0),
    "AUTO.LOITER": (MAIN_AUTO, SUB_AUTO_LOITER),
    "AUTO.RTL": (MAIN_AUTO, SUB_AUTO_RTL),
    "AUTO.LAND": (MAIN_AUTO, SUB_AUTO_LAND),
}
"""PX4's mode names (as QGroundControl and the PX4 docs write them) -> (main, sub)."""


def custom_mode(name: str) -> int:
    """HEARTBEAT's ``custom_mode`` of a mode name.

    Raises:
        KeyError: not a mode of :data:`MODES`.
    """
    main, sub = MODES[name]
    return (main << 16) | (sub << 24)


def mode_name(custom: int) -> str | None:
    """The mode name of a HEARTBEAT ``custom_mode`` (None: not one of :data:`MODES`)."""
    return from_command((int(custom) >> 16) & 0xFF, (int(custom) >> 24) & 0xFF)


def from_command(param2: float, param3: float) -> str | None:
    """The mode ``MAV_CMD_DO_SET_MODE`` asks for (param2: main, param3: sub), or None."""
    main, sub = int(param2), int(param3)
    for name, (m, s) in MODES.items():
        if m == main and (m != MAIN_AUTO or s == sub):
            return name
    return None
