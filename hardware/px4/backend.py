"""A PX4 multicopter through MAVLink offboard control (pymavlink): the filtered commands
of the drone's ``ctbr`` space as SET_ATTITUDE_TARGET body rates and normalized thrust, or
of its ``velocity`` space as SET_POSITION_TARGET_LOCAL_NED velocities.

Life cycle (see :mod:`sim2real.hardware.backend`):

* ``connect``: ``mavutil`` on ``url`` (``udpin:127.0.0.1:14540``: where PX4 SITL's offboard
  link sends; ``udpout:HOST:PORT`` to speak first, as to the emulator), our HEARTBEAT at
  2 Hz from then on, until the autopilot's HEARTBEAT (PX4, :mod:`.link`) and a full state
  (ATTITUDE_QUATERNION + LOCAL_POSITION_NED) have arrived;
* ``enable``: setpoints streamed first (zero thrust and rates, or zero velocity) for ``stream_before_s``
  (PX4 accepts OFFBOARD only after a second of them), then OFFBOARD, then ARM, each
  COMMAND_ACK checked (refused: the result and PX4's last STATUSTEXT in the error); an
  e-stop or fault that came while it waited is never overridden (``_still_connected``
  under the lock before each step and before ENABLED);
* ``command``: ``ctbr``: ``[thrust N, roll, pitch, yaw rate rad/s]`` (body FLU) ->
  normalized thrust (``thrust / max_thrust``: the airframe model's four rotors at full
  unless set; clipped to 0..1) and FRD rates; ``velocity``: ``[vx, vy, vz]`` (m/s, world
  ENU) -> NED, the yaw rate 0 (heading held). Sent at once; the stream repeats the newest
  while it is fresh;
* no other setpoint: PX4 also flies attitude and position setpoints, but every motion
  command reaches the robot through the safety filter, whose drone command spaces are
  ``ctbr`` and ``velocity``; a public method sending others would be a way around it;
* ``safe``: PX4's own AUTO.LAND (acked; repeated by the stream thread until the HEARTBEAT
  shows it), also by itself while enabled when no command came for ``stale_after`` s or
  no state for ``state_timeout`` s;
* ``estop``: MAV_CMD_COMPONENT_ARM_DISARM with force (param2 21196): motors off now, in
  flight too; latched here.

If this backend dies, PX4 keeps the last setpoint for ``COM_OF_LOSS_T`` (1 s) and then
applies ``COM_OBL_RC_ACT`` (land, without RC).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np
from pymavlink.dialects.v20 import common as mavlink

from sim2real.hardware.backend import HardwareError, Phase, RobotBackend
from sim2real.hardware.options import load_options
from sim2real.hardware.preflight import Item
from sim2real.hardware.px4.link import Px4Link, RatesSetpoint, Setpoint, VelocitySetpoint, result_name, text_since
from sim2real.hardware.px4.options import Px4Options
from sim2real.hardware.realtime import WRITER_PRIORITY, realtime_thread
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.drone.airframe import airframe

FORCE_DISARM = 21196.0
STATE_NAMES = {value: name.removeprefix("MAV_STATE_") for name, value in vars(mavlink).items()
               if name.startswith("MAV_STATE_") and isinstance(value, int) and name != "MAV_STATE_ENUM_END"}
LANDED_NAMES = {value: name.removeprefix("MAV_LANDED_STATE_") for name, value in vars(mavlink).items()
                if name.startswith("MAV_LANDED_STATE_") and isinstance(value, int) and not name.endswith("ENUM_END")}
STREAM_NAMES = {str(mavlink.MAVLINK_MSG_ID_ATTITUDE_QUATERNION): "ATTITUDE_QUATERNION",
                str(mavlink.MAVLINK_MSG_ID_LOCAL_POSITION_NED): "LOCAL_POSITION_NED"}
STREAM_PERIOD = 0.02
"""s between the stream thread's setpoints and checks (50 Hz, well above PX4's 2 Hz)."""
HEARTBEAT_PERIOD = 0.5
"""s between our HEARTBEATs (2 Hz)."""
HEARTBEAT_LOST = 2.5
"""s without PX4's HEARTBEAT (1 Hz) after which close() stops waiting for its landing."""


class Px4Backend(RobotBackend):
    protocol = ("MAVLink 2 via pymavlink: OFFBOARD, SET_ATTITUDE_TARGET body rates + thrust or "
                "SET_POSITION_TARGET_LOCAL_NED velocities, COMMAND_ACK checked")
    state_rate = 100.0  # asked for on connect (Px4Options.state_hz)
    close_seconds = 10.0

    def __init__(self, action_mode: str = "ctbr", options: dict[str, Any] | None = None) -> None:
        super().__init__(action_mode, options)
        if action_mode not in ("ctbr", "ctbr_residual", "velocity"):
            raise ConfigError("action_mode", f"the PX4 backend takes ctbr or velocity commands, got {action_mode!r}")
        self.velocity_mode = action_mode == "velocity"
        (self.cfg,) = load_options(self.options, [(Px4Options, "")], "PX4")
        self.max_thrust = self.cfg.max_thrust or airframe(self.cfg.airframe).max_collective_thrust
        """N at normalized thrust 1."""
        self.link: Px4Link | None = None
        self._io = threading.RLock()
        """Orders phase changes and what goes out: nothing is sent after safe() or estop()."""
        self._setpoint: Setpoint | None = None
        """What the stream repeats; None: no stream."""
        self._last_command = self._enabled_at = self._land_sent = -math.inf
        self._landing = False
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.realtime: dict[str, Any] = {}
        """The stream thread's scheduling (:class:`~sim2real.hardware.realtime.RealtimeStatus`)."""
        self._stream_results: dict[str, str] = {}
        """MAVLink message id -> the result of asking for it at ``state_hz``."""
        self._counts = {"setpoints_sent": 0, "commands_rejected": 0, "commands_ignored": 0, "landings": 0,
                        "estops_sent": 0, "link_lost": 0}

    # -- life cycle --------------------------------------------------------------------------------
    def connect(self, timeout: float) -> None:
        if self._phase in (Phase.CONNECTED, Phase.ENABLED):
            return
        if self.link is not None:
            self.close()
        deadline = time.monotonic() + timeout
        with self._lock:
            self._latest = None
        link = Px4Link(self.cfg.url, np.array(self.cfg.home, dtype=np.float64), self._publish)
        self.link = link
        self._stop.clear()
        self._thread = threading.Thread(target=self._stream_loop, name="px4-stream", daemon=True)
        self._thread.start()
        while time.monotonic() < deadline and link.mode is None:  # set by PX4's first HEARTBEAT
            time.sleep(0.01)
        if link.mode is not None:
            self._request_streams(link, deadline)
        while time.monotonic() < deadline and self.state() is None:
            time.sleep(0.01)
        if link.mode is None or self.state() is None:
            why = "no PX4 HEARTBEAT" if link.mode is None else "no state (ATTITUDE_QUATERNION + LOCAL_POSITION_NED)"
            self.close()
            raise HardwareError(f"PX4 at {self.cfg.url}: {why} within {timeout:.1f} s")
        with self._io:
            self._set_phase(Phase.CONNECTED, "")

    def _request_streams(self, link: Px4Link, deadline: float) -> None:
        """The state streams at ``state_hz`` (MAV_CMD_SET_MESSAGE_INTERVAL; PX4's defaults
        are slower than the filter's watchdog wants). A refusal is not fatal: it shows in
        :meth:`detail` and in the pre-flight check's measured rate."""
        for message in (mavlink.MAVLINK_MSG_ID_ATTITUDE_QUATERNION, mavlink.MAVLINK_MSG_ID_LOCAL_POSITION_NED):
            left = max(min(self.cfg.ack_timeout, deadline - time.monotonic()), 0.0)
            result = link.command(mavlink.MAV_CMD_SET_MESSAGE_INTERVAL, [float(message), 1e6 / self.cfg.state_hz],
                                  left)
            self._stream_results[str(message)] = result_name(result)

    def enable(self) -> None:
        link = self._checked_link()
        if self.health().state_age > self.cfg.state_timeout:
            raise HardwareError("cannot enable: no fresh state")
        if link.armed:
            raise HardwareError(f"cannot enable: the vehicle is already armed ({link.mode})")
        if self._battery_low(link):
            raise HardwareError(f"cannot enable: the battery is low ({link.battery_remaining} %): charge it")
        with self._io:
            self._still_connected()
            self._setpoint = self._zero_setpoint()  # PX4 wants the stream before OFFBOARD
        try:
            time.sleep(self.cfg.stream_before_s)
            self._step(link, "OFFBOARD", lambda: link.set_mode("OFFBOARD", self.cfg.ack_timeout))
            self._step(link, "ARM", lambda: link.command(mavlink.MAV_CMD_COMPONENT_ARM_DISARM, [1.0],
                                                         self.cfg.ack_timeout))
        except HardwareError:
            with self._io:
                if self._phase is not Phase.ENABLED:
                    self._setpoint = None
            raise
        with self._io:
            self._still_connected()
            self._last_command = self._enabled_at = time.monotonic()
            self._landing = False
            self._set_phase(Phase.ENABLED, "")

    def _step(self, link: Px4Link, what: str, send: Any) -> None:
        with self._io:
            self._still_connected()
        sent = time.monotonic()
        result = send()
        if result != mavlink.MAV_RESULT_ACCEPTED:
            text = text_since(link, sent, 0.3)
            said = f"; PX4 said: {text}" if text else ""
            raise HardwareError(f"cannot enable: {what} refused ({result_name(result)}){said}")

    def _zero_setpoint(self) -> Setpoint:
        """Zero thrust and rates (on the ground: motors at idle once armed), or zero velocity
        (on the ground: idle, by PX4's land detector)."""
        return VelocitySetpoint(np.zeros(3)) if self.velocity_mode else RatesSetpoint(0.0, np.zeros(3))

    def command(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.float64)
        size, what = (3, "[vx, vy, vz] m/s") if self.velocity_mode else (4, "[thrust N, p, q, r]")
        if v.shape != (size,) or not np.all(np.isfinite(v)):
            self._counts["commands_rejected"] += 1
            raise ValueError(f"a PX4 command is {size} finite numbers {what}, got {values!r}")
        if self.velocity_mode:
            self._stream_while_enabled(VelocitySetpoint(v.copy()))
        else:
            self._stream_while_enabled(RatesSetpoint(float(np.clip(v[0] / self.max_thrust, 0.0, 1.0)), v[1:].copy()))

    def _stream_while_enabled(self, setpoint: Setpoint) -> None:
        """The stream's setpoint from now on, sent at once; ignored (counted) unless enabled."""
        if self._phase is not Phase.ENABLED:
            self._counts["commands_ignored"] += 1
            return
        with self._io:
            if self._phase is not Phase.ENABLED:
                self._counts["commands_ignored"] += 1
                return
            self._setpoint = setpoint
            self._last_command = time.monotonic()
        self._wake.set()

    def safe(self, reason: str) -> None:
        with self._io:
            if self._phase is Phase.ENABLED:
                self._setpoint = None
                self._landing = True
                self._counts["landings"] += 1
                self._set_phase(Phase.CONNECTED, reason)
                if self.link is not None:  # once now; the stream thread repeats it until the HEARTBEAT shows it
                    self.link.set_mode("AUTO.LAND", 0.0)
                    self._land_sent = time.monotonic()
            elif self._phase is Phase.CONNECTED and not self._landing:
                self._reason = reason

    def estop(self, reason: str) -> None:
        with self._io:
            self._setpoint, self._landing = None, False
            if self.link is not None:
                for _ in range(3):  # UDP: repeat; the ack is not waited for
                    self.link.send("command_long", *self.link.target, mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0,
                                   0.0, FORCE_DISARM, 0.0, 0.0, 0.0, 0.0, 0.0)
                    self._counts["estops_sent"] += 1
            self._set_phase(Phase.ESTOPPED, reason)

    def close(self) -> None:
        self.safe("closing")
        deadline = time.monotonic() + self.close_seconds
        while (self._landing and self.link is not None and self.link.armed and time.monotonic() < deadline
               and time.monotonic() - self.link.heartbeat_at < HEARTBEAT_LOST):  # a lost link: nothing to wait for
            time.sleep(0.05)
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        with self._io:
            link, self.link = self.link, None
            if self._phase is not Phase.ESTOPPED:
                self._set_phase(Phase.DISCONNECTED, self._reason)
        if link is not None:
            link.close()

    def _battery_low(self, link: Px4Link) -> bool:
        remaining = link.battery_remaining
        return remaining is not None and 0 <= remaining < 100 * self.cfg.battery_land  # -1: not reported

    def _checked_link(self) -> Px4Link:
        with self._io:
            self._still_connected()
            if self.link is None:
                raise HardwareError("cannot enable: not connected")
            if self._landing:
                raise HardwareError("cannot enable: PX4 is still landing (the safe state)")
            return self.link

    # -- the stream thread: heartbeats, setpoints, watchdogs, the landing ------------------------------
    def _stream_loop(self) -> None:
        # At real-time priority where permitted, as the reader (:mod:`.link`): on a loaded
        # host a normal-priority thread missed the 0.15 s state deadline within a minute.
        with realtime_thread("px4 setpoint stream", WRITER_PRIORITY) as status:
            self.realtime = status.as_dict()
            self._stream()

    def _stream(self) -> None:
        next_heartbeat = 0.0
        while not self._stop.is_set():
            self._wake.wait(STREAM_PERIOD)
            self._wake.clear()
            now = time.monotonic()
            with self._io:
                link = self.link
                if link is None:
                    return
                if now >= next_heartbeat:
                    link.heartbeat()
                    next_heartbeat = now + HEARTBEAT_PERIOD
                self._watch(link, now)
                if self._setpoint is not None:
                    link.setpoint(self._setpoint)
                    self._counts["setpoints_sent"] += 1

    def _watch(self, link: Px4Link, now: float) -> None:
        if self._phase is Phase.ENABLED and now - self._last_command > self.cfg.stale_after:
            self.safe(f"stale command: none for {now - self._last_command:.3f} s")
        silent = now - link.last_frame
        if self._phase is Phase.ENABLED and self._battery_low(link):
            self.safe(f"battery low: {link.battery_remaining} % (BATTERY_STATUS)")
        if self._phase is Phase.ENABLED and silent > self.cfg.state_timeout:
            self.safe(f"state stale: none for {silent:.3f} s")
        if self._phase is Phase.ENABLED and link.heartbeat_at > self._enabled_at and link.mode != "OFFBOARD":
            self.safe(f"PX4 left OFFBOARD by itself ({link.mode})")  # its failsafe, RC, or a GCS took over
        if self._landing:
            if not link.armed or (link.mode == "AUTO.LAND" and link.heartbeat_at > self._land_sent):
                self._landing = link.armed  # PX4 lands it now; landing until it disarms
            elif now - self._land_sent >= 0.5:  # again until PX4's HEARTBEAT shows it
                link.set_mode("AUTO.LAND", 0.0)
                self._land_sent = now
        if self._phase in (Phase.CONNECTED, Phase.ENABLED) and silent > self.cfg.link_timeout:
            self._counts["link_lost"] += 1
            if self._phase is Phase.ENABLED:
                self.safe(f"link lost: no state for {silent:.3f} s")
            self._set_phase(Phase.DISCONNECTED, f"link lost: no state for {silent:.3f} s")

    # -- health -----------------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        link = self.link
        return {**self._counts, **(link.counters if link is not None else {})}

    def driver_items(self) -> list[Item]:
        """What PX4 shows before an enable: its HEARTBEAT and status (a running failsafe is
        ``MAV_STATE_CRITICAL``), disarmed, on the ground, the battery above ``battery_land``
        and the state streams at the rate asked."""
        link = self.link
        if link is None:
            return [Item("autopilot", "FAIL", "not connected", "PX4's HEARTBEAT")]
        age = time.monotonic() - link.heartbeat_at
        status = STATE_NAMES.get(link.system_status, str(link.system_status))
        critical = link.system_status in (mavlink.MAV_STATE_CRITICAL, mavlink.MAV_STATE_EMERGENCY)
        silent = age > HEARTBEAT_LOST
        items = [Item("autopilot", "FAIL" if critical or silent else "PASS",
                      f"PX4 {link.mode}, {status}, last HEARTBEAT {age:.1f} s ago",
                      f"STANDBY, a HEARTBEAT within {HEARTBEAT_LOST:g} s",
                      "a failsafe is running: see its STATUSTEXT" if critical else
                      "PX4's HEARTBEAT stopped: check the link" if silent else "")]
        armed = link.armed
        items.append(Item("armed", "FAIL" if armed else "PASS", "armed" if armed else "disarmed", "disarmed",
                          "someone else armed the vehicle: disarm it; enable arms it" if armed else ""))
        landed = LANDED_NAMES.get(link.landed_state, str(link.landed_state))
        items.append(Item("landed state", "PASS" if link.landed_state == mavlink.MAV_LANDED_STATE_ON_GROUND else "WARN",
                          landed, "ON_GROUND", "" if link.landed_state == mavlink.MAV_LANDED_STATE_ON_GROUND
                          else "EXTENDED_SYS_STATE says it is not on the ground (or never came)"))
        floor = f">= {100 * self.cfg.battery_land:g} % (battery_land)"
        remaining = link.battery_remaining
        if remaining is None or remaining < 0:
            items.append(Item("battery", "WARN", "not reported", floor, "no BATTERY_STATUS: the backend cannot land "
                              "on a low battery; PX4's own BAT_LOW_THR still applies"))
        else:
            low = self._battery_low(link)
            items.append(Item("battery", "FAIL" if low else "PASS", f"{remaining} %", floor,
                              "charge it" if low else ""))
        refused = {k: v for k, v in self._stream_results.items() if v != "ACCEPTED"}
        items.append(Item("state streams", "WARN" if refused else "PASS",
                          ", ".join(f"{STREAM_NAMES.get(k, k)} {v}" for k, v in self._stream_results.items())
                          or "not asked", f"{self.cfg.state_hz:g} Hz accepted",
                          "PX4 refused MAV_CMD_SET_MESSAGE_INTERVAL: the state comes at its default rate"
                          if refused else ""))
        return items

    def detail(self) -> dict[str, Any]:
        link = self.link
        if link is None:
            return {"url": self.cfg.url, "link": "closed"}
        now = time.monotonic()
        return {"url": self.cfg.url, "airframe": self.cfg.airframe, "max_thrust_n": round(self.max_thrust, 4),
                "realtime": {"stream": dict(self.realtime), "reader": dict(link.realtime)},
                "mode": link.mode, "armed": link.armed, "landing": self._landing,
                "heartbeat_hz": round(link.heartbeat_rate(now), 2), "landed_state": link.landed_state,
                "battery_remaining": link.battery_remaining,
                "stream_requests": dict(self._stream_results),
                "statustext": [text for _, text in list(link.texts)[-3:]]}
