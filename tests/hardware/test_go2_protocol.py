"""The Go2's low-level DDS protocol: our message types against Unitree's published
definitions (member names, order, IDL types, array lengths, XTypes identity), the wire
bytes against cyclonedds's own serializer, the C struct against Unitree's CRC packing,
the CRC against its definition, and the emulator's handling of bad frames."""

from __future__ import annotations

import hashlib
import json
import struct
import time
from collections import Counter
from typing import Any

import numpy as np
import pytest
from cyclonedds.core import DDSException
from cyclonedds.idl import IdlStruct
from cyclonedds.topic import Topic

from sim2real.hardware.emulator.faults import StreamFaults
from sim2real.hardware.emulator.go2 import Go2Emulator, Go2EmulatorConfig
from sim2real.hardware.go2 import types as T
from sim2real.hardware.go2.codec import Codec, FrameError
from sim2real.hardware.go2.crc import crc32_mpeg2, crc32_words
from sim2real.hardware.go2.dds import (
    SDK_QOS,
    STREAM_QOS,
    DdsConfig,
    RawReader,
    RawWriter,
    default_domain,
    participant,
)
from sim2real.hardware.go2.motion_switcher import CHECK_MODE, MotionSwitcherClient
from sim2real.hardware.go2.protocol import check_command, fill_command, newest_state, parse_state
from sim2real.hardware.go2.state_machine import MotorTargets
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.quadruped import constants as C

# -- Unitree's definitions, transcribed by hand -------------------------------------------
# unitreerobotics/unitree_sdk2_python: unitree_sdk2py/idl/unitree_go/msg/dds_/*.py and
# unitree_sdk2py/idl/unitree_api/msg/dds_/*.py (idlc output of Unitree's IDL): member,
# IDL type (a struct's name for a nested struct), array length (0: scalar).
VENDOR_IDL: dict[str, list[tuple[str, str, int]]] = {
    "unitree_go.msg.dds_.MotorCmd_": [
        ("mode", "uint8", 0), ("q", "float32", 0), ("dq", "float32", 0), ("tau", "float32", 0),
        ("kp", "float32", 0), ("kd", "float32", 0), ("reserve", "uint32", 3)],
    "unitree_go.msg.dds_.BmsCmd_": [("off", "uint8", 0), ("reserve", "uint8", 3)],
    "unitree_go.msg.dds_.LowCmd_": [
        ("head", "uint8", 2), ("level_flag", "uint8", 0), ("frame_reserve", "uint8", 0), ("sn", "uint32", 2),
        ("version", "uint32", 2), ("bandwidth", "uint16", 0), ("motor_cmd", "MotorCmd_", 20),
        ("bms_cmd", "BmsCmd_", 0), ("wireless_remote", "uint8", 40), ("led", "uint8", 12), ("fan", "uint8", 2),
        ("gpio", "uint8", 0), ("reserve", "uint32", 0), ("crc", "uint32", 0)],
    "unitree_go.msg.dds_.IMUState_": [
        ("quaternion", "float32", 4), ("gyroscope", "float32", 3), ("accelerometer", "float32", 3),
        ("rpy", "float32", 3), ("temperature", "uint8", 0)],
    "unitree_go.msg.dds_.MotorState_": [
        ("mode", "uint8", 0), ("q", "float32", 0), ("dq", "float32", 0), ("ddq", "float32", 0),
        ("tau_est", "float32", 0), ("q_raw", "float32", 0), ("dq_raw", "float32", 0), ("ddq_raw", "float32", 0),
        ("temperature", "uint8", 0), ("lost", "uint32", 0), ("reserve", "uint32", 2)],
    "unitree_go.msg.dds_.BmsState_": [
        ("version_high", "uint8", 0), ("version_low", "uint8", 0), ("status", "uint8", 0), ("soc", "uint8", 0),
        ("current", "int32", 0), ("cycle", "uint16", 0), ("bq_ntc", "uint8", 2), ("mcu_ntc", "uint8", 2),
        ("cell_vol", "uint16", 15)],
    "unitree_go.msg.dds_.LowState_": [
        ("head", "uint8", 2), ("level_flag", "uint8", 0), ("frame_reserve", "uint8", 0), ("sn", "uint32", 2),
        ("version", "uint32", 2), ("bandwidth", "uint16", 0), ("imu_state", "IMUState_", 0),
        ("motor_state", "MotorState_", 20), ("bms_state", "BmsState_", 0), ("foot_force", "int16", 4),
        ("foot_force_est", "int16", 4), ("tick", "uint32", 0), ("wireless_remote", "uint8", 40),
        ("bit_flag", "uint8", 0), ("adc_reel", "float32", 0), ("temperature_ntc1", "uint8", 0),
        ("temperature_ntc2", "uint8", 0), ("power_v", "float32", 0), ("power_a", "float32", 0),
        ("fan_frequency", "uint16", 4), ("reserve", "uint32", 0), ("crc", "uint32", 0)],
    "unitree_api.msg.dds_.RequestIdentity_": [("id", "int64", 0), ("api_id", "int64", 0)],
    "unitree_api.msg.dds_.RequestLease_": [("id", "int64", 0)],
    "unitree_api.msg.dds_.RequestPolicy_": [("priority", "int32", 0), ("noreply", "bool", 0)],
    "unitree_api.msg.dds_.RequestHeader_": [
        ("identity", "RequestIdentity_", 0), ("lease", "RequestLease_", 0), ("policy", "RequestPolicy_", 0)],
    "unitree_api.msg.dds_.Request_": [("header", "RequestHeader_", 0), ("parameter", "string", 0),
                                      ("binary", "sequence<uint8>", 0)],
    "unitree_api.msg.dds_.ResponseStatus_": [("code", "int32", 0)],
    "unitree_api.msg.dds_.ResponseHeader_": [("identity", "RequestIdentity_", 0), ("status", "ResponseStatus_", 0)],
    "unitree_api.msg.dds_.Response_": [("header", "ResponseHeader_", 0), ("data", "string", 0),
                                       ("binary", "sequence<uint8>", 0)],
}
# unitree_sdk2py/utils/crc.py: the packed C structs its CRC covers (struct module formats).
VENDOR_PACK = {
    "LowCmd_": "<4B4IH2x" + "B3x5f3I" * 20 + "4B" + "55Bx2I",
    "LowState_": "<4B4IH2x" + "13fb3x" + "B3x7fb3x3I" * 20 + "4BiH4b15H" + "8hI41B3xf2b2x2f4h2I",
}
# XTypes 1.3 type kinds (and the identifiers of strings and of structs by hash). Unitree's
# firmware encodes IDL uint8 as octet: TK_BYTE, never TK_UINT8 (0x0D).
XTYPES_KIND = {"bool": 0x01, "uint8": 0x02, "int16": 0x03, "int32": 0x04, "int64": 0x05, "uint16": 0x06,
               "uint32": 0x07, "float32": 0x09, "string": 0x70}
EK_COMPLETE = 0xF2


def vendor_crc_bitwise(words: list[int]) -> int:
    """The CRC as Unitree's pure-Python fallback (``CRC._crc_py``) computes it, restated."""
    crc, poly = 0xFFFFFFFF, 0x04C11DB7
    for word in words:
        bit = 1 << 31
        for _ in range(32):
            crc = ((crc << 1) & 0xFFFFFFFF) ^ (poly if crc & 0x80000000 else 0)
            if word & bit:
                crc ^= poly
            bit >>= 1
    return crc


OUR_TYPES: list[type[IdlStruct]] = [T.MotorCmd_, T.BmsCmd_, T.LowCmd_, T.IMUState_, T.MotorState_, T.BmsState_,
                                    T.LowState_, T.RequestIdentity_, T.RequestLease_, T.RequestPolicy_,
                                    T.RequestHeader_, T.Request_, T.ResponseStatus_, T.ResponseHeader_, T.Response_]


def _kind(identifier) -> tuple[int, tuple[int, ...]]:
    """(element kind, array bounds) of an XTypes TypeIdentifier."""
    value = identifier.value
    element = getattr(value, "element_identifier", None)
    if element is None:
        return identifier.discriminator, ()
    kind, bounds = _kind(element)
    return kind, tuple(getattr(value, "array_bound_seq", ())) + bounds


def _members(seq: Any) -> list[Any]:
    """A type object's member list (cyclonedds types it as its IDL ``sequence`` marker)."""
    return list(seq)


def test_every_vendor_type_is_defined_with_its_name() -> None:
    assert sorted(t.__idl_typename__ for t in OUR_TYPES) == sorted(VENDOR_IDL)
    dp = participant(DdsConfig.loopback(default_domain()))
    assert Topic(dp, "rt/lowcmd", T.LowCmd_).get_type_name() == "unitree_go::msg::dds_::LowCmd_"
    assert Topic(dp, "rt/lowstate", T.LowState_).get_type_name() == "unitree_go::msg::dds_::LowState_"


@pytest.mark.parametrize("cls", OUR_TYPES, ids=lambda c: c.__name__)
def test_xtypes_identity_members_match_the_vendor_idl(cls: type[IdlStruct]) -> None:
    """What discovery compares (the complete XTypes type object cyclonedds announces): a
    final struct, member names in order, each member's type kind (uint8 as TK_BYTE) and
    array bounds, and the minimal object's member name hashes."""
    vendor = VENDOR_IDL[cls.__idl_typename__]
    mapping = cls.__idl__.get_type_mapping()
    type_id = cls.__idl__.get_type_id()
    complete = next(p.type_object.complete.value for p in _members(mapping.identifier_object_pair_complete)
                    if p.type_identifier == type_id)  # the struct itself, not a nested one
    assert complete.struct_flags.IS_FINAL
    assert complete.header.detail.type_name == cls.__idl_typename__.replace(".", "::")
    hashes = {m.detail.name_hash for p in _members(mapping.identifier_object_pair_minimal)
              for m in _members(p.type_object.minimal.value.member_seq)}
    ours = _members(complete.member_seq)
    assert len(ours) == len(vendor)
    for member, (name, idl_type, length) in zip(ours, vendor):
        assert member.detail.name == name
        assert hashlib.md5(name.encode()).digest()[:4] in hashes, name
        kind, bounds = _kind(member.common.member_type_id)
        if idl_type == "sequence<uint8>":
            assert kind == XTYPES_KIND["uint8"] and bounds == (), name
            continue
        expected = XTYPES_KIND.get(idl_type, EK_COMPLETE)
        assert kind == expected, f"{name}: kind {kind:#x}, vendor {idl_type} -> {expected:#x}"
        assert bounds == ((length,) if length else ()), name


def _random_message(codec: Codec, rng: np.random.Generator) -> np.ndarray:
    """Every leaf random (integers 0..127 so the vendor's signed pack codes take them too)."""
    raw = rng.integers(0, 128, codec.dtype.itemsize, dtype=np.uint8)
    msg = raw.view(codec.dtype).reshape(()).copy()

    def fill_floats(arr: np.ndarray) -> None:
        for name in arr.dtype.names or ():
            sub = arr[name]
            if sub.dtype.names:
                fill_floats(sub)
            elif sub.dtype.kind == "f":
                arr[name] = rng.uniform(-100, 100, sub.shape).astype(np.float32)

    fill_floats(msg)
    return msg


def _flatten(sample) -> list:
    out: list = []
    for name in sample.__dataclass_fields__:
        value = getattr(sample, name)
        items = value if isinstance(value, list | tuple | bytes) else [value]
        for item in items:
            out += _flatten(item) if isinstance(item, IdlStruct) else [item]
    return out


@pytest.mark.parametrize("cls,wire", [(T.LowCmd_, 812), (T.LowState_, 1180)], ids=["LowCmd_", "LowState_"])
def test_codec_bytes_equal_cyclonedds_and_the_vendor_c_struct(cls: type[IdlStruct], wire: int) -> None:
    codec, rng = Codec.of(cls), np.random.default_rng(7)
    assert codec.wire_size == wire  # RESEARCH.md: 812 and 1180 bytes with the encapsulation header
    assert codec.dtype.itemsize == struct.calcsize(VENDOR_PACK[cls.__name__])
    for _ in range(5):
        msg = _random_message(codec, rng)
        frame = codec.encode(msg)
        sample = cls.deserialize(frame)
        assert sample.serialize() == frame  # byte for byte what cyclonedds writes
        assert len(frame) == wire
        assert codec.c_bytes(codec.decode(sample.serialize())).tobytes() == codec.c_bytes(msg).tobytes()
        # the C struct Unitree's CRC packs, field by field in declaration order
        vendor_c = struct.pack(VENDOR_PACK[cls.__name__], *_flatten(sample))
        assert codec.c_bytes(msg).tobytes() == vendor_c
        words = struct.unpack(f"<{len(vendor_c) // 4}I", vendor_c)[:-1]
        assert codec.crc(msg) == vendor_crc_bitwise(list(words))


def test_crc_definition() -> None:
    assert crc32_mpeg2(b"123456789") == 0x0376E6E7  # the CRC catalogue's check value of CRC-32/MPEG-2
    rng = np.random.default_rng(3)
    for n in (1, 2, 50, 202):
        words = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        data = words.astype("<u4").tobytes()
        assert crc32_words(data) == vendor_crc_bitwise([int(w) for w in words])
        assert crc32_words(data) == crc32_mpeg2(words.astype(">u4").tobytes())
    with pytest.raises(ValueError):
        crc32_words(b"abc")


def _command(codec: Codec, q: np.ndarray | None = None) -> np.ndarray:
    msg = codec.new()
    targets = MotorTargets()
    targets.q[:] = C.DEFAULT_POSE if q is None else q
    targets.kp[:], targets.kd[:] = 35.0, 1.0
    fill_command(codec, msg, targets)
    return msg


def test_command_checks_fail_closed() -> None:
    codec = Codec.of(T.LowCmd_)
    msg = _command(codec)
    check_command(codec, msg)
    assert tuple(msg["head"]) == (0xFE, 0xEF) and msg["level_flag"] == 0xFF
    assert list(msg["motor_cmd"]["mode"]) == [1] * 12 + [0] * 8
    cases = {
        "crc": lambda m: m["motor_cmd"]["q"].__setitem__(3, 0.5),
        "head": lambda m: (m.__setitem__("head", (0xFE, 0xEE)), m.__setitem__("crc", codec.crc(m))),
        "level_flag": lambda m: (m.__setitem__("level_flag", 0xEE), m.__setitem__("crc", codec.crc(m))),
        "non_finite": lambda m: (m["motor_cmd"]["kp"].__setitem__(0, np.nan), m.__setitem__("crc", codec.crc(m))),
    }
    for reason, corrupt in cases.items():
        bad = msg.copy()
        corrupt(bad)
        with pytest.raises(FrameError) as err:
            check_command(codec, codec.decode(codec.encode(bad)))
        assert err.value.reason == reason
    frame = codec.encode(msg)
    for reason, cut in (("truncated", frame[:700]), ("oversize", frame + b"\0" * 8),
                        ("encoding", b"\x00\x00\x00\x00" + frame[4:])):
        with pytest.raises(FrameError) as err:
            codec.decode(cut)
        assert err.value.reason == reason


def test_lowstate_checks() -> None:
    codec = Codec.of(T.LowState_)
    msg = codec.new()
    msg["imu_state"]["quaternion"] = (1.0, 0.0, 0.0, 0.0)
    msg["crc"] = codec.crc(msg)
    assert parse_state(codec, codec.encode(msg)).quat.tolist() == [1.0, 0.0, 0.0, 0.0]
    corrupted = bytearray(codec.encode(msg))
    corrupted[100] ^= 0x01
    with pytest.raises(FrameError, match="crc"):
        parse_state(codec, bytes(corrupted))
    msg["imu_state"]["quaternion"] = (2.0, 0.0, 0.0, 0.0)
    msg["crc"] = codec.crc(msg)
    with pytest.raises(FrameError, match="quaternion"):
        parse_state(codec, codec.encode(msg))


def test_a_backlog_of_states_yields_the_newest_valid_one() -> None:
    """A reader that fell behind uses the newest frame that passes the checks: a corrupt
    newest frame is refused and counted, the valid one before it is used, and the older
    ones are counted as superseded."""
    codec = Codec.of(T.LowState_)

    def frame(tick: int) -> bytes:
        msg = codec.new()
        msg["imu_state"]["quaternion"] = (1.0, 0.0, 0.0, 0.0)
        msg["tick"] = tick
        msg["crc"] = codec.crc(msg)
        return codec.encode(msg)

    corrupt = bytearray(frame(4))
    corrupt[100] ^= 0x01
    counts: Counter[str] = Counter()
    state = newest_state(codec, [frame(1), frame(2), frame(3), bytes(corrupt)], counts)
    assert state is not None and state.tick == 3
    assert counts == {"state_rejected_crc": 1, "states_superseded": 2}
    counts.clear()
    assert newest_state(codec, [bytes(corrupt)], counts) is None and counts == {"state_rejected_crc": 1}
    assert newest_state(codec, [], counts) is None


def test_network_stays_on_loopback() -> None:
    """The defaults are Unitree's network (refused while tests run on the machine's own
    network namespace); loopback is explicit, multicast off, its one peer 127.0.0.1."""
    assert (DdsConfig().domain_id, DdsConfig().interface) == (0, "auto")
    for config in (DdsConfig(), DdsConfig(interface="eth0"), DdsConfig(domain_id=default_domain())):
        with pytest.raises(ConfigError, match="tests run on loopback"):
            config.resolved()
    with pytest.raises(ConfigError):
        DdsConfig(interface="lo", peers=("192.168.123.161",)).validate()
    with pytest.raises(ConfigError):
        DdsConfig(interface="lo", multicast=True).validate()
    loop = DdsConfig.loopback(default_domain()).resolved()
    assert (loop.peers, loop.multicast) == (("127.0.0.1",), False)
    xml = loop.xml()
    assert 'name="lo"' in xml and "<AllowMulticast>false</AllowMulticast>" in xml and "127.0.0.1" in xml


@pytest.fixture(scope="module")
def emulator():
    """An emulator already in low-level mode, ticked by the tests' own clock."""
    emu = Go2Emulator(Go2EmulatorConfig(sport_mode=False), StreamFaults(quat_order="xyzw"))
    yield emu
    emu.close()


def _tick_until(emu: Go2Emulator, done, timeout: float = 2.0) -> bool:
    end = time.monotonic() + timeout
    while not done() and time.monotonic() < end:
        emu.tick(time.monotonic())
        time.sleep(0.002)
    return bool(done())


def test_the_robot_reads_lowcmd_as_unitrees_sdk_does_reliably() -> None:
    """Unitree's SDK reads and writes with Cyclone's defaults (reliable, keep last 1): a
    best-effort ``rt/lowcmd`` writer never matches the robot's reader, the SDK's does."""
    robot = RawReader.create(participant(DdsConfig.loopback(default_domain())), "rt/lowcmd", T.LowCmd_, SDK_QOS)
    dp = participant(DdsConfig.loopback(default_domain()))
    best_effort = RawWriter.create(dp, "rt/lowcmd", T.LowCmd_, STREAM_QOS)
    ours = RawWriter.create(dp, "rt/lowcmd", T.LowCmd_, SDK_QOS)
    end = time.monotonic() + 3.0
    while ours.matched() == 0 and time.monotonic() < end:
        time.sleep(0.01)
    assert ours.matched() == 1 and best_effort.matched() == 0 and robot.matched() == 1


def test_emulator_drops_bad_frames_and_keeps_the_last_valid_command(emulator: Go2Emulator) -> None:
    codec = Codec.of(T.LowCmd_)
    writer = RawWriter.create(emulator.dp, "rt/lowcmd", T.LowCmd_, SDK_QOS)
    _tick_until(emulator, lambda: writer.matched() > 0)
    good = _command(codec, C.DEFAULT_POSE + 0.1)
    writer.write(codec.encode(good))
    _tick_until(emulator, lambda: emulator.accepted >= 1)
    assert emulator.command is not None
    assert np.allclose(emulator.command["motor_cmd"]["q"][:12], C.DEFAULT_POSE + 0.1, atol=1e-6)
    bad = _command(codec, C.DEFAULT_POSE - 0.5)
    bad["crc"] ^= 1
    wrong_head = _command(codec, C.DEFAULT_POSE - 0.5)
    wrong_head["head"] = (0x00, 0x00)
    wrong_head["crc"] = codec.crc(wrong_head)
    before = dict(emulator.rejected)
    for frame in (bad, wrong_head):
        writer.write(codec.encode(frame))
        time.sleep(0.01)
    _tick_until(emulator, lambda: sum(emulator.rejected.values()) >= sum(before.values()) + 2)
    assert emulator.rejected["crc"] == before.get("crc", 0) + 1
    assert emulator.rejected["head"] == before.get("head", 0) + 1
    assert np.allclose(emulator.command["motor_cmd"]["q"][:12], C.DEFAULT_POSE + 0.1, atol=1e-6)  # last valid
    # A truncated frame: cyclonedds refuses to write it (and drops malformed samples it
    # receives); the emulator refuses one handed to it all the same.
    with pytest.raises(DDSException):
        writer.write(codec.encode(good)[:700])
    assert not emulator.handle(codec.encode(good)[:700])
    assert emulator.rejected["truncated"] >= 1


def test_emulator_state_frames_carry_the_faults(emulator: Go2Emulator) -> None:
    codec = Codec.of(T.LowState_)
    reader = RawReader.create(participant(DdsConfig.loopback(default_domain())), "rt/lowstate", T.LowState_)
    _tick_until(emulator, lambda: reader.matched() > 0)
    frames: list[bytes] = []
    _tick_until(emulator, lambda: bool(frames.extend(reader.take()) or len(frames) >= 3))
    state = parse_state(codec, frames[-1])
    truth = emulator.truth()
    assert truth.base_quat is not None and truth.joint_pos is not None
    assert np.allclose(state.quat, np.roll(truth.base_quat, -1), atol=0.05)  # xyzw injected
    assert np.allclose(state.q, truth.joint_pos, atol=0.05)


def test_motion_switcher_releases_sport_mode() -> None:
    emu = Go2Emulator(Go2EmulatorConfig())
    try:
        codec = Codec.of(T.LowCmd_)
        assert emu.handle(codec.encode(_command(codec))) is False
        assert emu.rejected["sport_mode"] == 1
        client = MotionSwitcherClient(participant(DdsConfig.loopback(default_domain())))
        import threading

        stop = threading.Event()
        thread = threading.Thread(target=lambda: emu.serve(should_stop=stop.is_set), daemon=True)
        thread.start()
        try:
            code, data = client.call(CHECK_MODE, 3.0)
            assert code == 0 and json.loads(data)["name"] == "normal"
            assert client.release_mode(3.0) == 0
        finally:
            stop.set()
            thread.join(2.0)
        assert emu.switcher.mode == ""
        assert emu.handle(codec.encode(_command(codec))) is True
    finally:
        emu.close()
