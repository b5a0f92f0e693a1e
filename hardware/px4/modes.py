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


MAIN_NAMES = {MAIN_MANUAL: "MANUAL", MAIN_ALTCTL: "ALTCTL", MAIN_POSCTL: "POSCTL", MAIN_AUTO: "AUTO",
              MAIN_ACRO: "ACRO", MAIN_OFFBOARD: "OFFBOARD", MAIN_STABILIZED: "STABILIZED", 8: "RATTITUDE"}
AUTO_NAMES = {SUB_AUTO_READY: "READY", SUB_AUTO_TAKEOFF: "TAKEOFF", SUB_AUTO_LOITER: "LOITER",
              SUB_AUTO_MISSION: "MISSION", SUB_AUTO_RTL: "RTL", SUB_AUTO_LAND: "LAND", 7: "RTGS",
              8: "FOLLOW_TARGET", 9: "PRECLAND", 10: "VTOL_TAKEOFF"}
"""Every mode PX4 reports (``px4_custom_mode.h``), to name what a HEARTBEAT says, beyond
the modes :data:`MODES` commands."""


def mode_name(custom: int) -> str:
    """The name of a HEARTBEAT ``custom_mode``: ``AUTO.LAND``, ``STABILIZED``...;
    ``custom 0x...`` for a mode PX4 does not define."""
    main, sub = (int(custom) >> 16) & 0xFF, (int(custom) >> 24) & 0xFF
    if main == MAIN_AUTO and sub in AUTO_NAMES:
        return f"AUTO.{AUTO_NAMES[sub]}"
    if main in MAIN_NAMES and main != MAIN_AUTO:
        return MAIN_NAMES[main]
    return f"custom 0x{int(custom) & 0xFFFFFFFF:08x}"


def from_command(param2: float, param3: float) -> str | None:
    """The mode ``MAV_CMD_DO_SET_MODE`` asks for (param2: main, param3: sub), or None."""
    main, sub = int(param2), int(param3)
    for name, (m, s) in MODES.items():
        if m == main and (m != MAIN_AUTO or s == sub):
            return name
    return None
