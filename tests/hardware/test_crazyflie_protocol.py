"""CRTP framing, the thrust map, the setpoint sign conventions, the timing of the
firmware landing the backend hands over, and the backend's option checks: no sockets,
no simulator."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from cflib.crazyflie.commander import Commander
from cflib.crtp.crtpstack import CRTPPacket

from sim2real.hardware.crazyflie import crtp
from sim2real.hardware.crazyflie.backend import CrazyflieBackend
from sim2real.hardware.crazyflie.landing import DescentConfig, FirmwareLanding
from sim2real.hardware.crazyflie.thrust import PWM_CLAMP, ThrustMap, ctbr_to_setpoint, wire_to_body_rates
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.drone import constants as C


class PacketSink:
    """Stands in for the link under cflib's own Commander: keeps what it would send."""

    def __init__(self) -> None:
        self.packets: list[CRTPPacket] = []

    def send_packet(self, pk: CRTPPacket) -> None:
        self.packets.append(pk)


def test_header_matches_cflib_and_decode_inverts_encode() -> None:
    for port, channel in ((crtp.PORT_COMMANDER, 0), (crtp.PORT_LOG, crtp.LOG_DATA), (crtp.PORT_LINKCTRL, 3)):
        pk = CRTPPacket()
        pk.set_header(port, channel)
        assert crtp.header(port, channel) == pk.header
        assert crtp.decode(crtp.encode(port, channel, b"ab")) == crtp.Packet(port, channel, b"ab")
    assert crtp.decode(b"\xff") == crtp.Packet(crtp.PORT_LINKCTRL, crtp.NULL_CHANNEL, b"")


@pytest.mark.parametrize(("datagram", "reason"), [(b"", "empty"), (bytes(32), "oversize")])
def test_decode_refuses_what_is_no_crtp_packet(datagram: bytes, reason: str) -> None:
    with pytest.raises(crtp.CrtpError) as err:
        crtp.decode(datagram)
    assert err.value.reason == reason
    with pytest.raises(crtp.CrtpError):
        crtp.encode(crtp.PORT_LOG, 0, bytes(31))


@pytest.mark.parametrize("m", [ThrustMap(), ThrustMap(firmware_compensation=False), ThrustMap(thrust_scale=1.3)],
                         ids=["stock-firmware", "host-compensated", "heavier"])
def test_thrust_map_inverts_itself_within_the_firmware_limits(m: ThrustMap) -> None:
    hover = m.to_pwm(C.HOVER_THRUST, 3.9)
    assert 34000 * m.thrust_scale < hover < 39000 * m.thrust_scale  # a CF2.1 hovers near 36000
    assert m.to_newtons(hover, 3.9) == pytest.approx(C.HOVER_THRUST, rel=1e-3)
    assert m.to_pwm(10.0, 3.9) == PWM_CLAMP and m.to_newtons(65535, 3.9) == m.to_newtons(PWM_CLAMP, 3.9)
    assert m.to_pwm(-1.0, 3.9) == 0 and m.to_pwm(math.nan, 3.9) == 0 and m.to_pwm(math.inf, 3.9) == 0
    assert m.to_newtons(999, 3.9) == 0.0 and m.to_newtons(20000, 3.9) > 0.0  # no power below 1000


def test_a_host_compensated_map_refuses_to_guess_the_battery() -> None:
    m = ThrustMap(firmware_compensation=False)
    assert m.to_pwm(C.HOVER_THRUST, 3.5) > m.to_pwm(C.HOVER_THRUST, 4.1)  # a lower battery needs a longer duty
    for vbat in (None, math.nan, 0.0):
        with pytest.raises(ValueError, match="voltage"):
            m.to_pwm(C.HOVER_THRUST, vbat)
    with pytest.raises(ValueError, match="motor curve"):
        ThrustMap(curve="cf3")


def test_body_rates_survive_cflib_and_the_firmware_sign_flips() -> None:
    """Body rates -> send_setpoint arguments -> cflib's packet -> what the firmware tracks."""
    sink = PacketSink()
    commander = Commander(sink)
    for rates in ([0.7, 0.0, 0.0], [0.0, -1.1, 0.0], [0.0, 0.0, 0.4], [0.3, 0.5, -0.9]):
        roll, pitch, yawrate, thrust = ctbr_to_setpoint(np.r_[C.HOVER_THRUST, rates], ThrustMap())
        commander.send_setpoint(roll, pitch, yawrate, thrust)
        pk = sink.packets[-1]
        assert pk.port == crtp.PORT_COMMANDER and len(pk.data) == crtp.RPYT_FORMAT.size
        w_roll, w_pitch, w_yaw, w_thrust = struct.unpack("<fffH", pk.data)
        assert w_pitch == pytest.approx(-pitch, abs=1e-4)  # cflib negates pitch on the wire
        assert wire_to_body_rates(w_roll, w_pitch, w_yaw) == pytest.approx(rates, abs=1e-5)
        assert w_thrust == thrust


def test_firmware_landing_is_timed_from_the_last_height_and_repeated_until_confirmed() -> None:
    cfg = DescentConfig()
    period = C.CONTROL_DT
    landing = FirmwareLanding(cfg, start=10.0, z=None, vz=None, last_z=1.2, reason="state stale")
    assert not landing.on_ground and landing.duration == pytest.approx((1.2 + cfg.height_margin) / cfg.descent_rate)
    assert landing.due(10.0, period)
    landing.sent.append(10.0)
    assert not landing.due(10.01, period) and landing.due(10.02, period)  # once a control period
    landing.confirm(0x0010)  # flying, but the high-level commander not (yet) active
    assert not landing.confirmed and landing.due(11.9, period) and not landing.due(12.01, period)  # 2 s at most
    landing.sent.append(10.5)
    landing.confirm(0x0110)
    assert landing.confirmed and landing.stage == "landing" and not landing.due(10.6, period)
    assert landing.ends() == pytest.approx(10.5 + landing.duration + cfg.settle)  # the last one sent counts
    assert not landing.done(landing.ends() - 0.01) and landing.done(landing.ends())
    never = FirmwareLanding(cfg, start=0.0, z=None, vz=None, last_z=None, reason="never had a state")
    assert never.duration == pytest.approx((cfg.unknown_height + cfg.height_margin) / cfg.descent_rate)
    never.sent.append(0.0)
    assert not never.done(never.ends() - 0.01) and never.done(never.ends())  # unconfirmed: watched just as long


def test_a_drone_on_the_ground_only_gets_the_notify() -> None:
    cfg = DescentConfig()
    landing = FirmwareLanding(cfg, start=0.0, z=0.02, vz=0.0, last_z=0.02, reason="closing")
    assert landing.on_ground and landing.duration == 0.0 and landing.stage == "ground"
    for k in range(3):
        assert landing.due(0.02 * k, C.CONTROL_DT) and not landing.done(0.02 * k)
        landing.sent.append(0.02 * k)
    assert landing.done(0.05) and not landing.due(0.1, C.CONTROL_DT)
    assert not FirmwareLanding(cfg, 0.0, z=0.02, vz=-0.5, last_z=0.02, reason="falling").on_ground


def test_backend_options_are_checked() -> None:
    with pytest.raises(ConfigError):
        CrazyflieBackend("ctbr", {"url": "udp://127.0.0.1:1"})
    with pytest.raises(ConfigError):
        CrazyflieBackend("ctbr", {"stale_after": 0.0})
    with pytest.raises(ConfigError):
        CrazyflieBackend("joint_pos")
    with pytest.raises(ValueError):
        CrazyflieBackend("ctbr", {"descent_descent_rate": -1.0})
    with pytest.raises(ConfigError):
        CrazyflieBackend("ctbr", {"hover_thrust": 0.3})  # the host flies no descent: no thrust to give it
    backend = CrazyflieBackend("ctbr", {"uri": "udp://127.0.0.1:1", "descent_settle": 1.5})
    assert backend.descent_config.settle == 1.5 and backend.cfg.stale_after == pytest.approx(0.15)
    with pytest.raises(ValueError):
        backend.command(np.array([0.3, 0.0, np.nan, 0.0]))
    with pytest.raises(ValueError):
        backend.command(np.zeros(3))
    backend.command(np.zeros(4))  # not enabled: ignored, nothing to send it to
    assert backend.counters()["commands_rejected"] == 2 and backend.counters()["commands_ignored"] == 1
