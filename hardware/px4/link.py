"""The host's side of one MAVLink link to a PX4 vehicle, through pymavlink's ``mavutil``.

A reader thread decodes what the vehicle sends (HEARTBEAT: mode, armed, system status;
ATTITUDE_QUATERNION and LOCAL_POSITION_NED into :class:`Measurements` in our frames,
:mod:`.frames`; EXTENDED_SYS_STATE, BATTERY_STATUS, STATUSTEXT, COMMAND_ACK). Sends go
through one lock (``mavutil``'s sequence number and socket are not thread-safe).
:meth:`Px4Link.command` is MAVLink's command protocol: COMMAND_LONG repeated with a rising
``confirmation`` until its COMMAND_ACK arrives or the timeout passes.
"""

from __future__ import annotations

import math
import select
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np
from pymavlink import mavutil
from pymavlink.dialects.v20 import common as mavlink

from sim2real.hardware.px4 import frames, modes
from sim2real.hardware.realtime import WRITER_PRIORITY, realtime_thread
from sim2real.sim.core.deployment import Measurements

OFFBOARD_SYSTEM, OFFBOARD_COMPONENT = 255, mavlink.MAV_COMP_ID_ONBOARD_COMPUTER
ATTITUDE_IGNORED = 1 << 7
"""SET_ATTITUDE_TARGET type_mask: body rates and thrust given, the attitude ignored."""
VELOCITY_ONLY = 0b111 | 0b111 << 6 | 1 << 10
"""SET_POSITION_TARGET_LOCAL_NED type_mask: the position, the acceleration and the yaw
ignored; the velocity and the yaw rate (zero: the heading held) given."""
RESULTS = {v: k.removeprefix("MAV_RESULT_") for k, v in vars(mavlink).items() if k.startswith("MAV_RESULT_")
           and isinstance(v, int) and k != "MAV_RESULT_ENUM_END"}


@dataclass(frozen=True)
class RatesSetpoint:
    """An offboard setpoint of the ``ctbr`` space: body rates (FLU, rad/s) and normalized
    collective thrust (0..1), sent as SET_ATTITUDE_TARGET."""

    thrust: float
    rates: np.ndarray


@dataclass(frozen=True)
class VelocitySetpoint:
    """An offboard setpoint of the ``velocity`` space: a world velocity (ENU, m/s), sent as
    SET_POSITION_TARGET_LOCAL_NED in NED with the yaw rate 0. PX4 also flies attitude and
    position setpoints (the emulator does too), but no command space of our safety
    filter produces them, so nothing here sends them."""

    velocity: np.ndarray


Setpoint = RatesSetpoint | VelocitySetpoint


class Px4Link:
    """One ``mavutil`` connection and its reader thread."""

    def __init__(self, url: str, home: np.ndarray, on_state: Any) -> None:
        self.conn: Any = mavutil.mavlink_connection(url, source_system=OFFBOARD_SYSTEM,
                                                    source_component=OFFBOARD_COMPONENT, dialect="common")
        self.home = np.asarray(home, dtype=np.float64)
        self._on_state = on_state
        self._send_lock = threading.Lock()
        self._acks = threading.Condition()
        self.acks: dict[int, tuple[int, float]] = {}
        """command -> (result, arrival) of its newest COMMAND_ACK."""
        self.target = (1, 1)
        """(system, component) of the autopilot, from its HEARTBEAT."""
        self.mode: str | None = None
        self.armed = False
        self.system_status = 0
        self.heartbeat_at = -math.inf
        self.heartbeats: deque[float] = deque(maxlen=8)
        self.landed_state = mavlink.MAV_LANDED_STATE_UNDEFINED
        self.battery_remaining: int | None = None
        self.texts: deque[tuple[float, str]] = deque(maxlen=16)
        """(arrival, text) of the newest STATUSTEXTs."""
        self.last_frame = -math.inf
        self.counters: dict[str, int] = {"received": 0, "bad_data": 0, "sent": 0}
        self._attitude: tuple[np.ndarray, np.ndarray, float] | None = None
        self.realtime: dict[str, Any] = {}
        """The reader's scheduling (:class:`~sim2real.hardware.realtime.RealtimeStatus`)."""
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name="px4-mavlink-reader", daemon=True)
        self._reader.start()

    # -- sending ------------------------------------------------------------------------------
    def send(self, encode: str, *args: Any) -> None:
        with self._send_lock:
            msg = getattr(self.conn.mav, f"{encode}_encode")(*args)
            self.conn.mav.send(msg)
            self.counters["sent"] += 1

    def heartbeat(self) -> None:
        self.send("heartbeat", mavlink.MAV_TYPE_ONBOARD_CONTROLLER, mavlink.MAV_AUTOPILOT_INVALID, 0, 0,
                  mavlink.MAV_STATE_ACTIVE)

    def setpoint(self, setpoint: Setpoint) -> None:
        """SET_ATTITUDE_TARGET with body rates (ours FLU, sent FRD) and normalized thrust,
        the attitude ignored; or SET_POSITION_TARGET_LOCAL_NED with a velocity alone."""
        ms = int(time.monotonic() * 1000) & 0xFFFFFFFF
        if isinstance(setpoint, VelocitySetpoint):
            vx, vy, vz = (float(v) for v in frames.enu_to_ned(setpoint.velocity))
            self.send("set_position_target_local_ned", ms, *self.target, mavlink.MAV_FRAME_LOCAL_NED, VELOCITY_ONLY,
                      0.0, 0.0, 0.0, vx, vy, vz, 0.0, 0.0, 0.0, 0.0, 0.0)
            return
        p, q, r = (float(x) for x in frames.flu_to_frd(setpoint.rates))
        self.send("set_attitude_target", ms, *self.target, ATTITUDE_IGNORED, [1.0, 0.0, 0.0, 0.0], p, q, r,
                  float(setpoint.thrust))

    def command(self, command: int, params: list[float], timeout: float) -> int | None:
        """COMMAND_LONG until acked: its MAV_RESULT, or None when no ack came in ``timeout`` s."""
        deadline, confirmation = time.monotonic() + timeout, 0
        with self._acks:
            self.acks.pop(command, None)
        p = (list(params) + [0.0] * 7)[:7]
        while True:  # at least once: timeout 0 sends without waiting
            self.send("command_long", *self.target, command, confirmation, *p)
            with self._acks:
                self._acks.wait_for(lambda: command in self.acks, timeout=min(0.3, max(deadline - time.monotonic(), 0)))
                if command in self.acks:
                    return self.acks[command][0]
            if time.monotonic() >= deadline:
                return None
            confirmation = min(confirmation + 1, 255)

    def set_mode(self, name: str, timeout: float) -> int | None:
        main, sub = modes.MODES[name]
        return self.command(mavlink.MAV_CMD_DO_SET_MODE,
                            [float(mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED), float(main), float(sub)], timeout)

    # -- receiving ------------------------------------------------------------------------------
    def heartbeat_rate(self, now: float, window: float = 3.0) -> float:
        """HEARTBEATs per second from the autopilot over the last ``window`` s."""
        return sum(1 for t in self.heartbeats if now - t <= window) / window

    def _read_loop(self) -> None:
        # Every datagram waiting is read and parsed in one go (not mavutil's recv_match, one
        # message per call): in a process running the whole graph each wake-up may wait
        # for the GIL, and at one wake-up per message the reader fell seconds behind.
        with realtime_thread("px4 mavlink reader", WRITER_PRIORITY - 1) as status:
            self.realtime = status.as_dict()
            self._read_all()

    def _read_all(self) -> None:
        port = self.conn.port
        while not self._stop.is_set():
            try:
                select.select([port], [], [], 0.05)
                while not self._stop.is_set():
                    data = self.conn.recv()
                    if not data:
                        break
                    self._parse(bytes(data), time.monotonic())
            except (OSError, ValueError):
                if self._stop.is_set():
                    return
                self.counters["bad_data"] += 1

    def _parse(self, data: bytes, now: float) -> None:
        try:
            msgs = self.conn.mav.parse_buffer(data) or []
        except mavlink.MAVError:
            self.counters["bad_data"] += 1
            return
        for msg in msgs:
            self._handle(msg, now)

    def _handle(self, msg: Any, now: float) -> None:
        kind = msg.get_type()
        if kind == "BAD_DATA":
            self.counters["bad_data"] += 1
            return
        self.counters["received"] += 1
        if kind == "HEARTBEAT" and msg.autopilot == mavlink.MAV_AUTOPILOT_PX4:
            self.target = (msg.get_srcSystem(), msg.get_srcComponent())
            self.mode = modes.mode_name(msg.custom_mode)
            self.armed = bool(msg.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
            self.system_status = int(msg.system_status)
            self.heartbeat_at = now
            self.heartbeats.append(now)
        elif kind == "COMMAND_ACK":
            with self._acks:
                self.acks[int(msg.command)] = (int(msg.result), now)
                self._acks.notify_all()
        elif kind == "STATUSTEXT":
            self.texts.append((now, str(msg.text)))
        elif kind == "EXTENDED_SYS_STATE":
            self.landed_state = int(msg.landed_state)
        elif kind == "BATTERY_STATUS":
            self.battery_remaining = int(msg.battery_remaining)
        elif kind == "ATTITUDE_QUATERNION":
            q = np.array([msg.q1, msg.q2, msg.q3, msg.q4], dtype=np.float64)
            rates = np.array([msg.rollspeed, msg.pitchspeed, msg.yawspeed], dtype=np.float64)
            if np.all(np.isfinite(q)) and np.all(np.isfinite(rates)) and abs(np.linalg.norm(q) - 1.0) < 0.01:
                self._attitude = (frames.quat_ned_frd_to_enu_flu(q), frames.frd_to_flu(rates), now)
        elif kind == "LOCAL_POSITION_NED":
            pos = np.array([msg.x, msg.y, msg.z], dtype=np.float64)
            vel = np.array([msg.vx, msg.vy, msg.vz], dtype=np.float64)
            att = self._attitude
            if att is not None and np.all(np.isfinite(pos)) and np.all(np.isfinite(vel)):
                self.last_frame = now
                self._on_state(Measurements(base_pos=frames.ned_to_enu(pos) + self.home,
                                            base_quat=att[0].copy(), base_lin_vel=frames.ned_to_enu(vel),
                                            base_ang_vel=att[1].copy(), stamps={"odom": now, "imu": att[2]}))

    def close(self) -> None:
        self._stop.set()
        if self._reader is not threading.current_thread():
            self._reader.join(timeout=1.0)
        self.conn.close()


def text_since(link: Px4Link, since: float, wait: float) -> str:
    """The newest STATUSTEXT that arrived after ``since``, waiting up to ``wait`` s for one
    (PX4 sends its reason next to the COMMAND_ACK, not always before it); empty: none."""
    end = time.monotonic() + wait
    while True:
        texts = [text for at, text in list(link.texts) if at >= since]
        if texts or time.monotonic() >= end:
            return texts[-1] if texts else ""
        time.sleep(0.01)


def result_name(result: int | None) -> str:
    return "no COMMAND_ACK" if result is None else RESULTS.get(result, str(result))
