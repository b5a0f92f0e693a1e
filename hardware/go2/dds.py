"""The one place the Go2's DDS network is configured.

Every participant the Go2 backend and its emulator create comes from :func:`participant`
with a :class:`DdsConfig`: ONE network interface, multicast off unless asked for, and
explicit unicast peers. The default is the emulator's: interface ``lo``, peer 127.0.0.1,
so nothing leaves this machine.

For a real robot (Unitree's wiring: the host's Ethernet port straight to the Go2, the
host at 192.168.123.x/24, the robot's motion computer at 192.168.123.161), set the
backend options ``interface`` to that NIC's name (e.g. ``enp3s0``), ``peers`` to
``["192.168.123.161"]`` (or ``multicast: true``, as Unitree's SDK runs) and
``domain_id`` to 0 (the robot's domain). A non-loopback interface is refused while
pytest runs (``PYTEST_CURRENT_TEST``), so no test can ever join a real network.

The 500 Hz streams bypass cyclonedds-python's pure-Python (de)serializer: frames are
encoded by :mod:`.codec` and handed to the C layer as CDR bytes (``ddspy_write`` /
``ddspy_take``, what ``DataWriter.write``/``DataReader.take`` call underneath); the
topics are still created with the IdlStruct types, so discovery sees their identity.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from cyclonedds._clayer import ddspy_take, ddspy_write
from cyclonedds.core import DDSException, InstanceState, ReadCondition, SampleState, ViewState, WaitSet
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

from sim2real.sim.core.errors import ConfigError

LOOPBACK = "lo"


@dataclass(frozen=True)
class DdsConfig:
    """Where the Go2's DDS traffic goes."""

    domain_id: int = 0
    """DDS domain (the robot uses 0; tests take ``ROS_DOMAIN_ID``)."""
    interface: str = LOOPBACK
    """The one network interface DDS may use (``lo``: the emulator; the NIC wired to the robot)."""
    peers: tuple[str, ...] = ("127.0.0.1",)
    """Unicast discovery peers (the robot: 192.168.123.161)."""
    multicast: bool = False
    """Multicast discovery and data (never on loopback)."""

    def validate(self) -> None:
        if not isinstance(self.domain_id, int) or not 0 <= self.domain_id <= 232:
            raise ConfigError("domain_id", f"must be a whole number in 0..232, got {self.domain_id!r}")
        if not self.interface or any(c in self.interface for c in "<>\"'& "):
            raise ConfigError("interface", f"not an interface name: {self.interface!r}")
        if self.interface == LOOPBACK and (self.multicast or any(p not in ("127.0.0.1", "localhost")
                                                                  for p in self.peers)):
            raise ConfigError("peers", "on loopback the only peer is 127.0.0.1 and multicast stays off")
        if self.interface != LOOPBACK and "PYTEST_CURRENT_TEST" in os.environ:
            raise ConfigError("interface", f"tests run on loopback only, not {self.interface!r}")
        for peer in self.peers:
            if any(c in peer for c in "<>\"'& "):
                raise ConfigError("peers", f"not an address: {peer!r}")

    def xml(self) -> str:
        peers = "".join(f'<Peer address="{p}"/>' for p in self.peers)
        multicast = "true" if self.multicast else "false"
        return (
            "<CycloneDDS><Domain Id=\"any\"><General><Interfaces>"
            f'<NetworkInterface name="{self.interface}" multicast="{multicast}"/>'
            f"</Interfaces><AllowMulticast>{multicast}</AllowMulticast></General>"
            f"<Discovery><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>60"
            f"</MaxAutoParticipantIndex><Peers>{peers}</Peers></Discovery></Domain></CycloneDDS>"
        )


_domains: dict[int, tuple[DdsConfig, Domain]] = {}
_domains_lock = threading.Lock()


def participant(config: DdsConfig) -> DomainParticipant:
    """A participant in ``config``'s domain on its one interface. A process configures each
    domain once: a second configuration of the same domain is refused."""
    config.validate()
    with _domains_lock:
        known = _domains.get(config.domain_id)
        if known is None:
            _domains[config.domain_id] = (config, Domain(config.domain_id, config.xml()))
        elif known[0] != config:
            raise ConfigError("domain_id", f"domain {config.domain_id} is already configured as {known[0]}")
    return DomainParticipant(config.domain_id)


STREAM_QOS = Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(1))
"""The 500 Hz streams: the newest frame only, never a resend of an old one."""
SERVICE_QOS = Qos(Policy.Reliability.Reliable(duration(milliseconds=100)), Policy.History.KeepLast(10))
"""Service calls (the motion switcher): every request and answer delivered."""


@dataclass
class RawWriter:
    """A writer of pre-encoded CDR frames of one topic."""

    writer: DataWriter

    @classmethod
    def create(cls, dp: DomainParticipant, name: str, idl: type[IdlStruct], qos: Qos = STREAM_QOS) -> RawWriter:
        return cls(DataWriter(dp, Topic(dp, name, idl), qos))

    def write(self, frame: bytes) -> None:
        """Send one frame (padded to a multiple of 4 bytes as cyclonedds does).

        Raises:
            DDSException: the C layer refused it.
        """
        frame = frame.ljust((len(frame) + 3) & ~3, b"\0")
        ret = ddspy_write(self.writer._ref, frame)
        if ret < 0:
            raise DDSException(ret, "while writing a frame")

    def matched(self) -> int:
        return len(self.writer.get_matched_subscriptions())


@dataclass
class RawReader:
    """A reader handing out the CDR frames of one topic as they arrive."""

    reader: DataReader
    dp: DomainParticipant
    _waitset: WaitSet = field(init=False)
    _condition: ReadCondition = field(init=False)

    def __post_init__(self) -> None:
        self._condition = ReadCondition(self.reader, SampleState.Any | ViewState.Any | InstanceState.Any)
        self._waitset = WaitSet(self.dp)
        self._waitset.attach(self._condition)

    @classmethod
    def create(cls, dp: DomainParticipant, name: str, idl: type[IdlStruct], qos: Qos = STREAM_QOS,
               depth: int = 1) -> RawReader:
        qos = Qos(*[p for p in qos if not isinstance(p, Policy.History.KeepLast)], Policy.History.KeepLast(depth))
        return cls(DataReader(dp, Topic(dp, name, idl), qos), dp)

    def take(self, limit: int = 64) -> list[bytes]:
        """The frames received since the last call (oldest first)."""
        ret = ddspy_take(self.reader._ref, SampleState.Any | ViewState.Any | InstanceState.Any, limit)
        if isinstance(ret, int):
            raise DDSException(ret, "while taking frames")
        return [bytes(data) for data, info in ret if info.valid_data]

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` s for a frame; True when one is there."""
        return self._waitset.wait(duration(seconds=max(timeout, 0.0))) > 0

    def matched(self) -> int:
        return len(self.reader.get_matched_publications())


def default_domain() -> int:
    """``ROS_DOMAIN_ID`` when set (tests set a per-process one), else 0 (the robot's)."""
    try:
        return int(os.environ.get("ROS_DOMAIN_ID", "0"))
    except ValueError:
        return 0


def close_participant(dp: DomainParticipant) -> None:
    """Delete ``dp`` and everything it created now (readers, writers, topics), rather than
    whenever the garbage collector gets to it: a closed backend must leave the network."""
    dp.__del__()
