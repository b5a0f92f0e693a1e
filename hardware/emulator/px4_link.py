"""The PX4 emulator's MAVLink side: decoding what arrives, acking commands, sending what
:mod:`.px4_telemetry` encodes.

System 1, component 1 (MAV_COMP_ID_AUTOPILOT1), MAVLink 2, as PX4 SITL's first vehicle.
"""

from __future__ import annotations

import math
import socket
import struct
from typing import Any

import numpy as np
from pymavlink.dialects.v20 import common as mavlink

from sim2real.hardware.emulator.px4_commander import FORCE_MAGIC, PARAMS
from sim2real.hardware.emulator.px4_control import AttitudeTarget, PositionTarget
from sim2real.hardware.emulator.px4_telemetry import Vehicle, send_telemetry
from sim2real.hardware.px4 import frames, modes

SYSTEM_ID, COMPONENT_ID = 1, 1
IGNORE_POSITION = 0b111
"""SET_POSITION_TARGET_LOCAL_NED type_mask bits 0-2: x, y, z ignored."""
IGNORE_VELOCITY = 0b111 << 3
"""Bits 3-5: vx, vy, vz ignored."""
ATT_IGNORE_RATES = 0b0000_0111
"""SET_ATTITUDE_TARGET type_mask bits 0-2: ignore roll, pitch, yaw rate."""
ATT_IGNORE_THRUST, ATT_IGNORE_ATTITUDE = 1 << 6, 1 << 7
DATAGRAM_MAX = 1400
"""Bytes per telemetry datagram (under the Ethernet MTU, as PX4's)."""


class Px4Link:
    """One UDP socket; replies and telemetry go to the last valid sender."""

    def __init__(self, vehicle: Vehicle, host: str, port: int, gcs_port: int) -> None:
        self.vehicle = vehicle
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, port))
        self.sock.setblocking(False)
        self.address: tuple[str, int] = self.sock.getsockname()
        self.peer: tuple[str, int] = (host, gcs_port)
        self.mav = mavlink.MAVLink(None, srcSystem=SYSTEM_ID, srcComponent=COMPONENT_ID)
        self.mav.robust_parsing = True
        self.accepted: dict[str, int] = {}
        self.rejected: dict[str, int] = {}
        self.sent = 0
        self.gcs_heartbeat = -math.inf
        """When the last HEARTBEAT from the ground station / offboard computer arrived."""
        self._next: dict[str, float] = {}
        self._batch: bytearray | None = None
        """The datagram being filled (None: each message goes out at once)."""
        self.rates: dict[str, float] = dict(vehicle.config.rates_hz)
        """Hz of each stream now (MAV_CMD_SET_MESSAGE_INTERVAL changes them)."""
        self.link_up = True
        self.downlink_up = True
        """False: nothing reaches the host while the vehicle still hears it."""

    def _reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    # -- receiving ---------------------------------------------------------------------------------
    def receive(self, now: float) -> None:
        while True:
            try:
                data, addr = self.sock.recvfrom(4096)
            except (BlockingIOError, ConnectionRefusedError):
                return
            if not self.link_up:
                self._reject("link_down")
                continue
            try:
                msgs = self.mav.parse_buffer(data) or []
            except (mavlink.MAVError, struct.error, ValueError, IndexError):
                self._reject("unparsable")
                self.mav.buf, self.mav.buf_index = bytearray(), 0
                continue
            if not msgs:
                self._reject("unparsable")
            for msg in msgs:
                self.handle(msg, addr, now)

    def handle(self, msg: Any, addr: tuple[str, int], now: float) -> None:
        kind = msg.get_type()
        if kind == "BAD_DATA":
            return self._reject("bad_data")
        target = getattr(msg, "target_system", 0)
        if target not in (0, SYSTEM_ID):
            return self._reject("other_system")
        self.peer = addr
        handler = getattr(self, f"_on_{kind.lower()}", None)
        if handler is None:
            return self._reject(f"unhandled_{kind}")
        reason = handler(msg, now)
        if reason:
            return self._reject(reason)
        self.accepted[kind] = self.accepted.get(kind, 0) + 1
        return None

    def _on_heartbeat(self, msg: Any, now: float) -> str | None:
        self.gcs_heartbeat = now
        if msg.type == mavlink.MAV_TYPE_GCS:  # PX4's data link is the ground station's, not an onboard computer's
            self.vehicle.commander.gcs_heartbeat(now)
        return None

    def _on_command_long(self, msg: Any, now: float) -> str | None:
        params = [msg.param1, msg.param2, msg.param3, msg.param4, msg.param5, msg.param6, msg.param7]
        c = self.vehicle.commander
        if msg.command == mavlink.MAV_CMD_DO_SET_MODE:
            if not int(msg.param1) & mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED:
                result = mavlink.MAV_RESULT_UNSUPPORTED
            else:
                result = c.set_mode(modes.from_command(params[1], params[2]), now)
        elif msg.command == mavlink.MAV_CMD_COMPONENT_ARM_DISARM:
            if not all(math.isfinite(p) for p in params[:2]):
                result = mavlink.MAV_RESULT_DENIED
            else:
                result = c.arm(params[0] > 0.5, int(params[1]) == FORCE_MAGIC, now)
        elif msg.command == mavlink.MAV_CMD_SET_MESSAGE_INTERVAL:
            result = self._set_interval(params[0], params[1])
        else:
            result = mavlink.MAV_RESULT_UNSUPPORTED
        self.send(self.mav.command_ack_encode(msg.command, result, 0, 0, msg.get_srcSystem(), msg.get_srcComponent()))
        return None

    def _set_interval(self, message: float, interval_us: float) -> int:
        """MAV_CMD_SET_MESSAGE_INTERVAL: -1 stops a stream, 0 restores its default, else its
        period in us (at most one message per tick)."""
        name = next((n for n in self.rates if math.isfinite(message)
                     and getattr(mavlink, f"MAVLINK_MSG_ID_{n}") == int(message)), None)
        if name is None or not math.isfinite(interval_us):
            return mavlink.MAV_RESULT_DENIED
        if interval_us < 0:
            self.rates[name] = 0.0
        elif interval_us == 0:
            self.rates[name] = self.vehicle.config.rates_hz.get(name, 0.0)
        else:
            self.rates[name] = min(1e6 / interval_us, 1.0 / self.vehicle.config.tick)
        self._next.pop(name, None)
        return mavlink.MAV_RESULT_ACCEPTED

    def _on_set_attitude_target(self, msg: Any, now: float) -> str | None:
        mask = int(msg.type_mask)
        rates = np.array([msg.body_roll_rate, msg.body_pitch_rate, msg.body_yaw_rate], dtype=np.float64)
        if not (np.all(np.isfinite(rates)) and math.isfinite(msg.thrust)):
            return "non_finite"
        attitude = None
        if not mask & ATT_IGNORE_ATTITUDE:  # the attitude wins; its rate fields are not used
            q = np.array(msg.q, dtype=np.float64)
            if not (np.all(np.isfinite(q)) and abs(np.linalg.norm(q) - 1.0) < 1e-3):
                return "bad_quaternion"
            attitude = frames.quat_ned_frd_to_enu_flu(q)
        rates[[bool(mask & (1 << i)) for i in range(3)]] = 0.0
        thrust = 0.0 if mask & ATT_IGNORE_THRUST else float(msg.thrust)
        self.vehicle.commander.setpoint(now)
        self.vehicle.target = AttitudeTarget(frames.frd_to_flu(rates), thrust, attitude)
        return None

    def _on_set_position_target_local_ned(self, msg: Any, now: float) -> str | None:
        mask = int(msg.type_mask)
        use_position, use_velocity = not mask & IGNORE_POSITION, not mask & IGNORE_VELOCITY
        if msg.coordinate_frame != mavlink.MAV_FRAME_LOCAL_NED or not (use_position or use_velocity):
            return "position_setpoint_unsupported"  # position and/or velocity in LOCAL_NED only
        pos = np.array([msg.x, msg.y, msg.z], dtype=np.float64) if use_position else None
        vel = np.array([msg.vx, msg.vy, msg.vz], dtype=np.float64) if use_velocity else None
        if not all(np.all(np.isfinite(v)) for v in (pos, vel) if v is not None):
            return "non_finite"
        self.vehicle.commander.setpoint(now)
        self.vehicle.target = PositionTarget(None if pos is None else frames.ned_to_enu(pos) + self.vehicle.origin,
                                             np.zeros(3) if vel is None else frames.ned_to_enu(vel))
        return None

    def _on_param_request_read(self, msg: Any, now: float) -> str | None:
        name = _param_name(msg.param_id)
        if name not in PARAMS:
            return "unknown_param"
        self._param_value(name)
        return None

    def _on_param_request_list(self, msg: Any, now: float) -> str | None:
        for name in PARAMS:
            self._param_value(name)
        return None

    def _on_param_set(self, msg: Any, now: float) -> str | None:
        name = _param_name(msg.param_id)
        if name not in PARAMS:
            return "unknown_param"
        self.vehicle.commander.set_param(name, float(msg.param_value))
        self._param_value(name)  # the value now (unchanged when refused), as PX4 answers
        return None

    def _param_value(self, name: str) -> None:
        names = list(PARAMS)
        value, kind = self.vehicle.commander.params[name], PARAMS[name][1]
        if kind == mavlink.MAV_PARAM_TYPE_INT32:  # PX4 sends an int's bytes in the float field
            wire = float(np.array([int(value)], dtype=np.int32).view(np.float32)[0])
        else:
            wire = value
        self.send(self.mav.param_value_encode(name.encode(), wire, kind, len(names), names.index(name)))

    # -- sending -------------------------------------------------------------------------------------
    def send(self, msg: Any) -> None:
        """One message, in the datagram being batched when a tick's telemetry is, else now."""
        if not (self.link_up and self.downlink_up):
            return
        data = msg.pack(self.mav)
        self.sent += 1
        if self._batch is None:
            return self._sendto(data)
        if len(self._batch) + len(data) > DATAGRAM_MAX:
            self._flush()
            self._batch = bytearray()
        self._batch += data
        return None

    def _sendto(self, data: bytes | bytearray) -> None:
        try:
            self.sock.sendto(data, self.peer)
        except OSError:  # nobody listening (ICMP refused): PX4 keeps streaming
            self._reject("send_failed")

    def _flush(self) -> None:
        if self._batch:
            self._sendto(self._batch)
        self._batch = None

    def due(self, name: str, now: float) -> bool:
        """Whether stream ``name``'s next message is due at ``now`` (and count it sent)."""
        rate = self.rates.get(name, 0.0)
        if rate <= 0 or now < self._next.get(name, -math.inf):
            return False
        self._next[name] = max(self._next.get(name, now) + 1.0 / rate, now)
        return True

    def stream(self, now: float) -> None:
        """The telemetry due at ``now`` and any STATUSTEXT the commander queued."""
        self._batch = bytearray()  # one datagram per tick, as PX4's UDP transport packs them
        try:
            send_telemetry(self, now)
        finally:
            self._flush()

    def close(self) -> None:
        self.sock.close()


def _param_name(raw: Any) -> str:
    text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else str(raw)
    return text.split("\x00", 1)[0]



