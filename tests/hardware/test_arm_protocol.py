"""The arm wire protocol: every packet type round-trips, and every malformed case is
refused with its reason (never decoded into something a robot would apply)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim2real.hardware.arm_protocol import (
    COMMAND_SIZES,
    CRC,
    HEADER,
    MAGIC,
    PACKET_SIZES,
    VERSION,
    Command,
    CommandMode,
    Hello,
    Mission,
    PacketError,
    PacketStats,
    PacketType,
    Release,
    SequenceGate,
    State,
    Status,
    decode,
    encode,
    sequence_newer,
)

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
u32 = st.integers(0, 2**32 - 1)


def arrays(n: int) -> st.SearchStrategy:
    return st.lists(finite, min_size=n, max_size=n).map(np.array)


def state(values: np.ndarray | None = None, status: Status = Status.HOLDING) -> State:
    v = np.arange(41, dtype=np.float64) if values is None else values
    return State(status, 7, CommandMode.EE_DELTA, v[:9], v[9:18], v[18:27], v[27:30], v[30:34], v[34:37], v[37:41])


def command(values: np.ndarray | None = None, mode: CommandMode = CommandMode.EE_DELTA) -> Command:
    return Command(11, 5, mode, np.arange(COMMAND_SIZES[mode], dtype=np.float64) if values is None else values)


def reseal(body: bytes) -> bytes:
    """``body`` (header + payload) with a correct CRC: a well-formed frame around bad content."""
    return body + CRC.pack(zlib.crc32(body))


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from(list(CommandMode)), data=st.data(), seq=u32, stamp=st.integers(0, 2**64 - 1),
       session=u32, state_seq=u32)
def test_command_round_trip(mode: CommandMode, data, seq: int, stamp: int, session: int, state_seq: int) -> None:
    values = data.draw(arrays(COMMAND_SIZES[mode]))
    header, out = decode(encode(Command(session, state_seq, mode, values), seq, stamp))
    assert (header.type, header.sequence, header.stamp_ns) == (PacketType.COMMAND, seq, stamp)
    assert (out.session, out.state_sequence, out.mode) == (session, state_seq, mode)
    np.testing.assert_array_equal(out.values, values)


@settings(max_examples=40, deadline=None)
@given(values=arrays(41), status=st.integers(0, 31), last=u32, seq=u32)
def test_state_round_trip(values: np.ndarray, status: int, last: int, seq: int) -> None:
    sent = State(Status(status), last, CommandMode.EE_IMPEDANCE, values[:9], values[9:18], values[18:27],
                 values[27:30], values[30:34], values[34:37], values[37:41])
    header, out = decode(encode(sent, seq, 1))
    assert header.type == PacketType.STATE and out.status == Status(status) and out.last_command_sequence == last
    for name in ("joint_pos", "joint_vel", "joint_effort", "ee_pos", "ee_quat", "ee_pos_desired", "ee_quat_desired"):
        np.testing.assert_array_equal(getattr(out, name), getattr(sent, name))


@given(goal=arrays(3), episodes=u32, successes=u32, session=u32)
def test_mission_and_hello_round_trip(goal: np.ndarray, episodes: int, successes: int, session: int) -> None:
    _, m = decode(encode(Mission(goal, episodes, successes), 1, 2))
    np.testing.assert_array_equal(m.goal, goal)
    assert (m.episodes, m.successes) == (episodes, successes)
    assert decode(encode(Hello(session), 3, 4))[1] == Hello(session)
    assert decode(encode(Release(session), 5, 6))[1] == Release(session)


def test_packet_sizes_are_fixed_per_type() -> None:
    assert PACKET_SIZES == {PacketType.HELLO: 28, PacketType.COMMAND: 140, PacketType.STATE: 364,
                            PacketType.MISSION: 56, PacketType.RELEASE: 28}
    assert len(encode(state(), 1, 1)) == 364 and len(encode(command(), 1, 1)) == 140


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["state", "command", "hello", "release", "mission"]), data=st.data())
def test_any_single_corrupted_byte_is_refused(kind: str, data) -> None:
    payload = {"state": state(), "command": command(), "hello": Hello(3), "release": Release(3),
               "mission": Mission(np.ones(3), 1, 1)}[kind]
    packet = bytearray(encode(payload, 9, 9))
    index = data.draw(st.integers(0, len(packet) - 1))
    packet[index] ^= data.draw(st.integers(1, 255))
    with pytest.raises(PacketError):
        decode(bytes(packet))


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, 363), extra=st.binary(min_size=1, max_size=16))
def test_truncated_or_extended_packets_are_refused(cut: int, extra: bytes) -> None:
    packet = encode(state(), 1, 1)
    with pytest.raises(PacketError) as short:
        decode(packet[:cut])
    assert short.value.reason in ("length", "crc")
    with pytest.raises(PacketError) as long:
        decode(packet + extra)
    assert long.value.reason == "length"


def test_each_header_check_has_its_reason() -> None:
    body = encode(command(), 1, 1)[: -CRC.size]
    payload = body[HEADER.size:]
    cases = {
        "magic": reseal(HEADER.pack(b"XXXX", VERSION, 2, 1, 1) + payload),
        "version": reseal(HEADER.pack(MAGIC, VERSION + 1, 2, 1, 1) + payload),
        "type": reseal(HEADER.pack(MAGIC, VERSION, 9, 1, 1) + payload),
        "length": reseal(HEADER.pack(MAGIC, VERSION, 3, 1, 1) + payload),  # a STATE type with a COMMAND body
        "crc": body + CRC.pack(zlib.crc32(body) ^ 1),
    }
    for reason, packet in cases.items():
        with pytest.raises(PacketError) as err:
            decode(packet)
        assert err.value.reason == reason, reason


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("kind", ["command", "state", "mission"])
def test_non_finite_values_are_refused_by_both_ends(kind: str, bad: float) -> None:
    good = {"command": command(), "state": state(), "mission": Mission(np.ones(3), 0, 0)}[kind]
    with pytest.raises(ValueError, match="non-finite"):  # a sender refuses to put them on the wire
        if kind == "command":
            encode(command(np.r_[bad, np.zeros(6)]), 1, 1)
        elif kind == "state":
            encode(state(np.r_[np.zeros(20), bad, np.zeros(20)]), 1, 1)
        else:
            encode(Mission(np.array([0.0, bad, 0.0]), 0, 0), 1, 1)
    # ...and a receiver refuses a well-formed frame (valid CRC) that carries them anyway.
    body = bytearray(encode(good, 1, 1)[: -CRC.size])
    offset = {"command": HEADER.size + 12, "state": HEADER.size + 12 + 8 * 20, "mission": HEADER.size + 8}[kind]
    struct.pack_into("<d", body, offset, bad)
    with pytest.raises(PacketError) as err:
        decode(reseal(bytes(body)))
    assert err.value.reason == "non_finite"


def test_command_count_mode_and_padding_are_checked() -> None:
    body = bytearray(encode(command(), 1, 1)[: -CRC.size])
    at = HEADER.size + 8  # mode byte, then count byte
    for patch, reason in (((at, 9), "mode"), ((at + 1, 8), "count")):
        bad = bytearray(body)
        bad[patch[0]] = patch[1]
        with pytest.raises(PacketError) as err:
            decode(reseal(bytes(bad)))
        assert err.value.reason == reason
    bad = bytearray(body)
    struct.pack_into("<d", bad, HEADER.size + 12 + 8 * 10, 1.0)  # a value past the 7 of ee_delta
    with pytest.raises(PacketError) as err:
        decode(reseal(bytes(bad)))
    assert err.value.reason == "count"
    with pytest.raises(ValueError, match="takes 7 values"):
        encode(Command(1, 1, CommandMode.EE_DELTA, np.zeros(8)), 1, 1)


def test_undefined_status_bits_are_refused() -> None:
    body = bytearray(encode(state(), 1, 1)[: -CRC.size])
    struct.pack_into("<I", body, HEADER.size, 1 << 7)
    with pytest.raises(PacketError) as err:
        decode(reseal(bytes(body)))
    assert err.value.reason == "status"


def test_sequence_gate_drops_stale_duplicate_and_out_of_order_packets() -> None:
    gate = SequenceGate()
    assert [gate.accept(s) for s in (5, 6, 6, 4, 8, 7, 9)] == [True, True, False, False, True, False, True]
    gate.reset()
    assert gate.accept(1)
    # The u32 counter may wrap: 0 follows 2**32 - 1, but a packet half the range back is stale.
    wrap = SequenceGate(last=2**32 - 1)
    assert wrap.accept(0) and wrap.accept(1)
    assert not sequence_newer(2**31 + 5, 5) and sequence_newer(6, 5)


def test_packet_stats_flatten_for_diagnostics() -> None:
    stats = PacketStats()
    stats.accept(PacketType.STATE)
    stats.reject("crc")
    stats.reject("crc")
    stats.reject("sequence")
    assert stats.flat() == {"accepted_state": 1, "rejected_crc": 2, "rejected_sequence": 1, "rejected": 3}
