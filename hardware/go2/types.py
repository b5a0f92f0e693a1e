"""Unitree Go2 low-level DDS message types, written from Unitree's published IDL
(``unitree_sdk2_python/unitree_sdk2py/idl/unitree_go/msg/dds_`` and ``unitree_api``).

Two things decide whether a real Go2 hears these types at all (docs: RESEARCH.md, "DDS
type identity"): the type names (``unitree_go::msg::dds_::LowCmd_`` once cyclonedds
turns the dots into ``::``) and the XTypes identity of every member. Unitree's firmware
and its C++ SDK encode IDL ``uint8`` as ``octet`` (``TK_BYTE``); cyclonedds-python 11
encodes ``types.uint8`` as ``TK_UINT8`` and the two never match, so every ``uint8`` of
the vendor's IDL is declared ``types.byte`` here (same byte on the wire, same CRC).
Members are final with sequential ids, as the vendor's generated code declares them.

Arrays of 20 motors: the Go2 uses the first 12, leg order FR, FL, RR, RL, joints hip,
thigh, calf within a leg (``sim2real.sim.quadruped.constants.JOINT_NAMES``).

The hot paths (500 Hz) do not build these objects: :mod:`.codec` encodes the same bytes
with numpy, and the tests check both agree byte for byte. These classes are what the
DDS topics are created with (their identity is what discovery compares).
"""

# No ``from __future__ import annotations``: cyclonedds resolves string annotations in this
# module's namespace, where builtins such as ``str`` are not attributes.
from dataclasses import dataclass
from typing import Any

import cyclonedds.idl.annotations as annotate
import cyclonedds.idl.types as types
from cyclonedds.idl import IdlStruct

NUM_MOTORS = 20
"""Motor slots in LowCmd_/LowState_ (the Go2 drives 12)."""


@dataclass
@annotate.final
@annotate.autoid("sequential")
class MotorCmd_(IdlStruct, typename="unitree_go.msg.dds_.MotorCmd_"):
    mode: types.byte
    q: types.float32
    dq: types.float32
    tau: types.float32
    kp: types.float32
    kd: types.float32
    reserve: types.array[types.uint32, 3]


@dataclass
@annotate.final
@annotate.autoid("sequential")
class BmsCmd_(IdlStruct, typename="unitree_go.msg.dds_.BmsCmd_"):
    off: types.byte
    reserve: types.array[types.byte, 3]


@dataclass
@annotate.final
@annotate.autoid("sequential")
class LowCmd_(IdlStruct, typename="unitree_go.msg.dds_.LowCmd_"):
    head: types.array[types.byte, 2]
    level_flag: types.byte
    frame_reserve: types.byte
    sn: types.array[types.uint32, 2]
    version: types.array[types.uint32, 2]
    bandwidth: types.uint16
    motor_cmd: types.array[MotorCmd_, 20]
    bms_cmd: BmsCmd_
    wireless_remote: types.array[types.byte, 40]
    led: types.array[types.byte, 12]
    fan: types.array[types.byte, 2]
    gpio: types.byte
    reserve: types.uint32
    crc: types.uint32


@dataclass
@annotate.final
@annotate.autoid("sequential")
class IMUState_(IdlStruct, typename="unitree_go.msg.dds_.IMUState_"):
    quaternion: types.array[types.float32, 4]
    """(w, x, y, z), body to world."""
    gyroscope: types.array[types.float32, 3]
    """Body rates, rad/s."""
    accelerometer: types.array[types.float32, 3]
    """Specific force in the body frame, m/s^2 (reads +9.81 up at rest)."""
    rpy: types.array[types.float32, 3]
    temperature: types.byte


@dataclass
@annotate.final
@annotate.autoid("sequential")
class MotorState_(IdlStruct, typename="unitree_go.msg.dds_.MotorState_"):
    mode: types.byte
    q: types.float32
    dq: types.float32
    ddq: types.float32
    tau_est: types.float32
    q_raw: types.float32
    dq_raw: types.float32
    ddq_raw: types.float32
    temperature: types.byte
    lost: types.uint32
    reserve: types.array[types.uint32, 2]


@dataclass
@annotate.final
@annotate.autoid("sequential")
class BmsState_(IdlStruct, typename="unitree_go.msg.dds_.BmsState_"):
    version_high: types.byte
    version_low: types.byte
    status: types.byte
    soc: types.byte
    current: types.int32
    cycle: types.uint16
    bq_ntc: types.array[types.byte, 2]
    mcu_ntc: types.array[types.byte, 2]
    cell_vol: types.array[types.uint16, 15]


@dataclass
@annotate.final
@annotate.autoid("sequential")
class LowState_(IdlStruct, typename="unitree_go.msg.dds_.LowState_"):
    head: types.array[types.byte, 2]
    level_flag: types.byte
    frame_reserve: types.byte
    sn: types.array[types.uint32, 2]
    version: types.array[types.uint32, 2]
    bandwidth: types.uint16
    imu_state: IMUState_
    motor_state: types.array[MotorState_, 20]
    bms_state: BmsState_
    foot_force: types.array[types.int16, 4]
    foot_force_est: types.array[types.int16, 4]
    tick: types.uint32
    wireless_remote: types.array[types.byte, 40]
    bit_flag: types.byte
    adc_reel: types.float32
    temperature_ntc1: types.byte
    temperature_ntc2: types.byte
    power_v: types.float32
    power_a: types.float32
    fan_frequency: types.array[types.uint16, 4]
    reserve: types.uint32
    crc: types.uint32


# -- unitree_api: the request/response pair every Unitree service (motion switcher) speaks --
@dataclass
@annotate.final
@annotate.autoid("sequential")
class RequestIdentity_(IdlStruct, typename="unitree_api.msg.dds_.RequestIdentity_"):
    id: types.int64
    """Unique per request (the vendor's client uses a monotonic clock in ns); echoed back."""
    api_id: types.int64


@dataclass
@annotate.final
@annotate.autoid("sequential")
class RequestLease_(IdlStruct, typename="unitree_api.msg.dds_.RequestLease_"):
    id: types.int64


@dataclass
@annotate.final
@annotate.autoid("sequential")
class RequestPolicy_(IdlStruct, typename="unitree_api.msg.dds_.RequestPolicy_"):
    priority: types.int32
    noreply: bool


@dataclass
@annotate.final
@annotate.autoid("sequential")
class RequestHeader_(IdlStruct, typename="unitree_api.msg.dds_.RequestHeader_"):
    identity: RequestIdentity_
    lease: RequestLease_
    policy: RequestPolicy_


@dataclass
@annotate.final
@annotate.autoid("sequential")
class Request_(IdlStruct, typename="unitree_api.msg.dds_.Request_"):
    header: RequestHeader_
    parameter: str
    """JSON text of the call's arguments."""
    binary: types.sequence[types.byte]


@dataclass
@annotate.final
@annotate.autoid("sequential")
class ResponseStatus_(IdlStruct, typename="unitree_api.msg.dds_.ResponseStatus_"):
    code: types.int32
    """0: success."""


@dataclass
@annotate.final
@annotate.autoid("sequential")
class ResponseHeader_(IdlStruct, typename="unitree_api.msg.dds_.ResponseHeader_"):
    identity: RequestIdentity_
    status: ResponseStatus_


@dataclass
@annotate.final
@annotate.autoid("sequential")
class Response_(IdlStruct, typename="unitree_api.msg.dds_.Response_"):
    header: ResponseHeader_
    data: str
    """JSON text of the result."""
    binary: types.sequence[types.byte]


_EMPTY: Any = ()
"""An empty ``binary`` (cyclonedds's ``sequence`` annotation is not a list type to checkers)."""


def request(request_id: int, api_id: int, parameter: str = "{}") -> Request_:
    """A service call as the vendor's client builds it (no lease, priority 0, reply wanted)."""
    header = RequestHeader_(RequestIdentity_(request_id, api_id), RequestLease_(0), RequestPolicy_(0, False))
    return Request_(header, parameter, _EMPTY)


def response(identity: RequestIdentity_, code: int, data: str) -> Response_:
    """The answer to the request with ``identity``."""
    header = ResponseHeader_(RequestIdentity_(identity.id, identity.api_id), ResponseStatus_(code))
    return Response_(header, data, _EMPTY)
