"""What PX4's commander does with modes, arming and the offboard signal (v1.14 as documented).

* Offboard signal: every offboard setpoint (``SET_ATTITUDE_TARGET``,
  ``SET_POSITION_TARGET_LOCAL_NED``) proves the external controller alive. The signal is
  *available* once setpoints have streamed without a gap of ``OFFBOARD_MAX_GAP`` (> 2 Hz)
  for ``OFFBOARD_MIN_STREAM`` s; OFFBOARD is refused (``MAV_RESULT_TEMPORARILY_REJECTED``)
  until then.
* Offboard loss: in OFFBOARD, no setpoint for ``COM_OF_LOSS_T`` s -> the failsafe action
  ``COM_OBL_RC_ACT`` (0 Position, 1 Altitude, 2 Manual, 3 Return, 4 Land, 5 Hold,
  6 Terminate, 7 Disarm). The stick modes (0-2) need manual control: with no RC (the
  emulator's default, a companion-computer vehicle) or with the RC lost they fall back to
  Land, as PX4's failsafe does without manual control.
* RC loss: an RC receiver's signal (:meth:`Commander.rc_signal`, the vehicle's radio, not
  MAVLink) seen once and then none for ``COM_RC_LOSS_T`` s -> ``NAV_RCL_ACT`` (0 Disabled,
  1 Hold, 2 Return, 3 Land, 5 Terminate, 6 Disarm; 4 lands), while armed and in the air,
  unless the mode is excepted by ``COM_RCL_EXCEPT`` (bit 0 Mission, bit 1 Hold, bit 2
  Offboard: an offboard flight that ignores the pilot's radio).
* Data-link loss: a ground station's HEARTBEAT (``MAV_TYPE_GCS``; an onboard controller's,
  as our backend's, is not the data link, as in PX4) seen once and then none for
  ``COM_DL_LOSS_T`` s -> ``NAV_DLL_ACT`` (0 Disabled: a warning only, 1 Hold, 2 Return,
  3 Land, 5 Terminate, 6 Disarm; 4, unused by PX4, lands), while armed and in the air. It
  never softens a failsafe already running (a landing stays a landing); no
  ``COM_DLL_EXCEPT`` exceptions. The link's return is reported; the mode stays.
* Return (``AUTO.RTL``) flies back over home (where it booted) at its altitude, then lands
  (:mod:`.px4_control`; ``RTL_RETURN_ALT`` is not modelled: the arena's ceiling is 4 m).
* Arming (``MAV_CMD_COMPONENT_ARM_DISARM``): refused when a pre-arm check fails (the
  vehicle's own list: no position estimate, battery below ``BAT_LOW_THR``), or in
  OFFBOARD without the offboard signal; param2 = 21196 forces it (disarm in flight).
* Landed in AUTO.LAND or AUTO.RTL for ``COM_DISARM_LAND`` s: disarmed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from pymavlink.dialects.v20 import common as mavlink

from sim2real.hardware.px4.modes import MODES

OFFBOARD_MAX_GAP = 0.5
"""s, the longest gap between setpoints of a stream (> 2 Hz)."""
OFFBOARD_MIN_STREAM = 1.0
"""s a stream must have run before OFFBOARD (or arming in it) is accepted (PX4 v1.14 docs:
"the message must have been sent for more than one second")."""
FORCE_MAGIC = 21196
"""``MAV_CMD_COMPONENT_ARM_DISARM`` param2 that skips the checks (disarm in flight)."""

PARAMS: dict[str, tuple[float, int]] = {
    "COM_OF_LOSS_T": (1.0, mavlink.MAV_PARAM_TYPE_REAL32),
    "COM_OBL_RC_ACT": (0.0, mavlink.MAV_PARAM_TYPE_INT32),
    "COM_DISARM_LAND": (2.0, mavlink.MAV_PARAM_TYPE_REAL32),
    "BAT_LOW_THR": (0.15, mavlink.MAV_PARAM_TYPE_REAL32),
    "MPC_LAND_SPEED": (0.7, mavlink.MAV_PARAM_TYPE_REAL32),
    "NAV_DLL_ACT": (0.0, mavlink.MAV_PARAM_TYPE_INT32),
    "COM_DL_LOSS_T": (10.0, mavlink.MAV_PARAM_TYPE_REAL32),
    "NAV_RCL_ACT": (2.0, mavlink.MAV_PARAM_TYPE_INT32),
    "COM_RC_LOSS_T": (0.5, mavlink.MAV_PARAM_TYPE_REAL32),
    "COM_RCL_EXCEPT": (0.0, mavlink.MAV_PARAM_TYPE_INT32),
}
"""The parameters the emulator has: name -> (PX4's default, MAVLink type)."""
PARAM_RANGES: dict[str, tuple[float, float]] = {
    "COM_OF_LOSS_T": (0.0, 60.0), "COM_OBL_RC_ACT": (0, 7), "COM_DISARM_LAND": (-1.0, 20.0),
    "BAT_LOW_THR": (0.12, 0.5), "MPC_LAND_SPEED": (0.6, 4.0), "NAV_DLL_ACT": (0, 6), "COM_DL_LOSS_T": (5.0, 300.0),
    "NAV_RCL_ACT": (0, 6), "COM_RC_LOSS_T": (0.0, 35.0), "COM_RCL_EXCEPT": (0, 31)}
"""PX4's documented min/max; a PARAM_SET outside is refused (the old value is echoed)."""
LOSS_ACTIONS = {0: "AUTO.LAND", 1: "AUTO.LAND", 2: "AUTO.LAND", 3: "AUTO.RTL", 4: "AUTO.LAND",
                5: "AUTO.LOITER", 6: "DISARM", 7: "DISARM"}
"""``COM_OBL_RC_ACT`` -> what the emulator (no RC) does."""
STICK_ACTIONS = {0: "POSCTL", 1: "ALTCTL", 2: "MANUAL"}
"""``COM_OBL_RC_ACT`` -> the pilot's mode, where manual control is there to take over."""
DLL_ACTIONS = {1: "AUTO.LOITER", 2: "AUTO.RTL", 3: "AUTO.LAND", 5: "DISARM", 6: "DISARM"}
"""``NAV_DLL_ACT`` and ``NAV_RCL_ACT`` -> the failsafe (0: none; anything else lands)."""
RCL_EXCEPT_BITS = {"AUTO.MISSION": 1, "AUTO.LOITER": 2, "OFFBOARD": 4}
"""``COM_RCL_EXCEPT``: the modes in which an RC loss is ignored, by bit."""
SEVERITY = {"POSCTL": 0.5, "ALTCTL": 0.5, "MANUAL": 0.5, "AUTO.LOITER": 1, "AUTO.RTL": 2, "AUTO.LAND": 3,
            "DISARM": 4}
"""Failsafe actions from the mildest; a failsafe never replaces a more severe one."""
VERBS = {"AUTO.LAND": "landing", "AUTO.LOITER": "holding", "AUTO.RTL": "returning", "DISARM": "disarming",
         "POSCTL": "position mode", "ALTCTL": "altitude mode", "MANUAL": "manual mode"}

Checks = Callable[[], list[str]]
"""The vehicle's failing pre-arm checks now (empty: all pass), as PX4 words them."""


@dataclass
class Commander:
    checks: Checks
    mode: str = "POSCTL"
    armed: bool = False
    params: dict[str, float] = field(default_factory=lambda: {k: v for k, (v, _) in PARAMS.items()})
    texts: list[tuple[int, str]] = field(default_factory=list)
    """STATUSTEXTs not yet sent: (MAV_SEVERITY, text)."""
    stream_since: float | None = None
    last_setpoint: float = -math.inf
    landed_since: float | None = None
    failsafe: str = ""
    """Why the last failsafe fired (empty: none)."""
    gcs_seen_at: float | None = None
    """When a ground station's HEARTBEAT last arrived (None: never)."""
    data_link_lost: bool = False
    rc_seen_at: float | None = None
    """When the RC receiver last had a signal (None: never: no RC on this vehicle)."""
    rc_lost: bool = False
    counters: dict[str, int] = field(default_factory=dict)

    def _say(self, severity: int, text: str) -> None:
        self.texts.append((severity, text[:50]))

    def _count(self, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1

    # -- the offboard signal ----------------------------------------------------------------
    def setpoint(self, now: float) -> None:
        if self.stream_since is None or now - self.last_setpoint > OFFBOARD_MAX_GAP:
            self.stream_since = now
        self.last_setpoint = now

    def offboard_signal(self, now: float) -> bool:
        return (self.stream_since is not None and now - self.last_setpoint <= OFFBOARD_MAX_GAP
                and now - self.stream_since >= OFFBOARD_MIN_STREAM)

    # -- commands ------------------------------------------------------------------------------
    def set_mode(self, name: str | None, now: float) -> int:
        """``MAV_CMD_DO_SET_MODE`` -> its MAV_RESULT."""
        if name is None or name not in MODES:
            self._count("mode_unsupported")
            return mavlink.MAV_RESULT_UNSUPPORTED
        if name == "OFFBOARD" and not self.offboard_signal(now):
            self._count("offboard_refused")
            self._say(mavlink.MAV_SEVERITY_CRITICAL, "Switching to Offboard is currently not available")
            return mavlink.MAV_RESULT_TEMPORARILY_REJECTED
        self.mode = name
        self.failsafe = ""
        return mavlink.MAV_RESULT_ACCEPTED

    def arm(self, arm: bool, force: bool, now: float) -> int:
        """``MAV_CMD_COMPONENT_ARM_DISARM`` -> its MAV_RESULT."""
        if not arm:
            if self.armed and not force and self.landed_since is None:
                self._say(mavlink.MAV_SEVERITY_CRITICAL, "Disarming denied: not landed")
                return mavlink.MAV_RESULT_DENIED
            self.disarm("forced" if force else "commanded")
            return mavlink.MAV_RESULT_ACCEPTED
        if self.armed:
            return mavlink.MAV_RESULT_ACCEPTED
        failing = [] if force else list(self.checks())
        if not force and self.mode == "OFFBOARD" and not self.offboard_signal(now):
            failing.append("no offboard signal")
        if failing:
            self._count("arm_refused")
            self._say(mavlink.MAV_SEVERITY_CRITICAL, f"Arming denied: {failing[0]}")
            return mavlink.MAV_RESULT_DENIED
        self.armed = True
        self._say(mavlink.MAV_SEVERITY_INFO, "Armed by external command")
        return mavlink.MAV_RESULT_ACCEPTED

    def disarm(self, why: str) -> None:
        if self.armed:
            self.armed = False
            self._say(mavlink.MAV_SEVERITY_INFO, f"Disarmed ({why})")

    # -- once per tick ------------------------------------------------------------------------
    def gcs_heartbeat(self, now: float) -> None:
        """A ground station's HEARTBEAT: the data link is alive."""
        if self.data_link_lost:
            self.data_link_lost = False
            self._say(mavlink.MAV_SEVERITY_INFO, "Data link regained")
        self.gcs_seen_at = now

    def rc_signal(self, now: float) -> None:
        """The RC receiver has a signal now (called each tick while it has)."""
        if self.rc_lost:
            self.rc_lost = False
            self._say(mavlink.MAV_SEVERITY_INFO, "Manual control regained")
        self.rc_seen_at = now

    def manual_control(self) -> bool:
        """A pilot's RC is there to take over."""
        return self.rc_seen_at is not None and not self.rc_lost

    def update(self, now: float, landed: bool) -> None:
        """The offboard-loss, RC-loss and data-link-loss failsafes and the auto-disarm after landing."""
        if (self.rc_seen_at is not None and not self.rc_lost
                and now - self.rc_seen_at > self.params["COM_RC_LOSS_T"]):
            self.rc_lost = True
            action = int(self.params["NAV_RCL_ACT"])
            excepted = int(self.params["COM_RCL_EXCEPT"]) & RCL_EXCEPT_BITS.get(self.mode, 0)
            if action == 0 or excepted or not self.armed or landed:
                self._say(mavlink.MAV_SEVERITY_WARNING, "Manual control lost")
            else:
                self._failsafe("rc_loss", DLL_ACTIONS.get(action, "AUTO.LAND"), "manual control lost")
        if self.mode == "OFFBOARD" and now - self.last_setpoint > self.params["COM_OF_LOSS_T"]:
            choice = int(self.params["COM_OBL_RC_ACT"])
            action = (STICK_ACTIONS[choice] if choice in STICK_ACTIONS and self.manual_control()
                      else LOSS_ACTIONS.get(choice, "AUTO.LAND"))
            self._failsafe("offboard_loss", action, "no offboard signal")
        if (self.gcs_seen_at is not None and not self.data_link_lost
                and now - self.gcs_seen_at > self.params["COM_DL_LOSS_T"]):
            self.data_link_lost = True
            action = int(self.params["NAV_DLL_ACT"])
            if action == 0 or not self.armed or landed:
                self._say(mavlink.MAV_SEVERITY_WARNING, "Connection to ground station lost")
            else:
                self._failsafe("data_link_loss", DLL_ACTIONS.get(action, "AUTO.LAND"), "no ground station link")
        self.landed_since = (now if self.landed_since is None else self.landed_since) if landed else None
        delay = self.params["COM_DISARM_LAND"]
        if (self.armed and self.mode in ("AUTO.LAND", "AUTO.RTL") and self.landed_since is not None and delay >= 0
                and now - self.landed_since >= delay):
            self.disarm("landed")

    def _failsafe(self, why: str, action: str, what: str) -> None:
        if SEVERITY[action] <= SEVERITY.get(self.mode, 0):
            return  # already doing as much (a landing stays a landing)
        self.failsafe = why
        self._count(why)
        if action == "DISARM":
            self.mode = "AUTO.LOITER"
            self.disarm(why.replace("_", " "))
        else:
            self.mode = action
        self._say(mavlink.MAV_SEVERITY_CRITICAL, f"Failsafe: {what}, {VERBS[action]}")

    # -- parameters ---------------------------------------------------------------------------
    def set_param(self, name: str, value: float) -> bool:
        """PARAM_SET: False (unchanged) for an unknown name, a non-finite or out-of-range value."""
        if name not in self.params or not math.isfinite(value):
            self._count("param_rejected")
            return False
        low, high = PARAM_RANGES[name]
        if not low <= value <= high:
            self._count("param_rejected")
            return False
        self.params[name] = float(int(value)) if PARAMS[name][1] == mavlink.MAV_PARAM_TYPE_INT32 else float(value)
        return True
