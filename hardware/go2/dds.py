"""The one place the Go2's DDS network is configured.

Every participant the Go2 backend and its emulator create comes from :func:`participant`
with a :class:`DdsConfig`. Its defaults are Unitree's own set-up, what the SDK's
``ChannelFactoryInitialize(0, iface)`` configures: domain 0, one network interface with
multicast discovery on it, no unicast peers. ``interface`` defaults to ``auto``: the
host's interface on Unitree's robot network (192.168.123.0/24: the Go2's motion computer
is 192.168.123.161, the host 192.168.123.x), so ``backend_options: {}`` reaches a robot
wired as Unitree documents it.

Loopback is an explicit choice, ``{"interface": "lo"}`` (the emulator on this machine):
multicast off and the one peer 127.0.0.1, so nothing leaves the machine. A non-loopback
interface is refused while pytest runs (``PYTEST_CURRENT_TEST``) unless the process runs
in a network namespace of its own (a test's private veth pair), so no test can ever join
a real network.

The 500 Hz streams bypass cyclonedds-python's pure-Python (de)serializer: frames are
encoded by :mod:`.codec` and handed to the C layer as CDR bytes (``ddspy_write`` /
``ddspy_take``, what ``DataWriter.write``/``DataReader.take`` call underneath); the
topics are still created with the IdlStruct types, so discovery sees their identity.
"""

from __future__ import annotations

import dataclasses
import fcntl
import ipaddress
import os
import socket
import struct
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
AUTO = "auto"
"""``interface``: the host's interface on :data:`ROBOT_NETWORK`."""
ROBOT_NETWORK = ipaddress.ip_network("192.168.123.0/24")
"""Unitree's robot network: the Go2's motion computer at .161, the host at .x/24."""


def _ipv4(interface: str) -> ipaddress.IPv4Address | None:
    """The interface's IPv4 address (None: it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", interface[:15].encode()))  # SIOCGIFADDR
        except OSError:
            return None
    return ipaddress.IPv4Address(packed[20:24])


def interface_on(network: ipaddress.IPv4Network | ipaddress.IPv6Network = ROBOT_NETWORK) -> str:
    """The name of the host's interface with an address in ``network``.

    Raises:
        ConfigError: none has one (the robot is not wired, or its NIC has another address).
    """
    for _, name in socket.if_nameindex():
        address = _ipv4(name)
        if address is not None and address in network:
            return name
    raise ConfigError("interface", f"no network interface has an address on the robot's network {network} "
                                   "(Unitree's wiring: the host at 192.168.123.x/24); give the NIC wired to the "
                                   "robot, e.g. {\"interface\": \"enp3s0\"}, or \"lo\" for its emulator")


NAMED_NAMESPACES = "/run/netns"
"""Where ``ip netns add`` keeps the network namespaces it makes."""


def private_network_namespace() -> bool:
    """This process runs in a network namespace made with ``ip netns add`` (a test's own
    robot network), not in the machine's."""
    try:
        ours = os.stat("/proc/self/ns/net").st_ino
        return any(os.stat(entry.path).st_ino == ours for entry in os.scandir(NAMED_NAMESPACES))
    except OSError:
        return False


@dataclass(frozen=True)
class DdsConfig:
    """Where the Go2's DDS traffic goes (defaults: Unitree's own set-up)."""

    domain_id: int = 0
    """DDS domain (the robot's is 0; tests take ``ROS_DOMAIN_ID``)."""
    interface: str = AUTO
    """The one network interface DDS may use: ``auto`` (the one on 192.168.123.0/24), the
    NIC wired to the robot (``enp3s0``), or ``lo`` (the emulator)."""
    peers: tuple[str, ...] | None = None
    """Unicast discovery peers (None: none on a NIC, as Unitree's SDK; 127.0.0.1 on ``lo``)."""
    multicast: bool | None = None
    """Multicast discovery and data (None: on for a NIC, as Unitree's SDK; never on ``lo``)."""

    @classmethod
    def loopback(cls, domain_id: int) -> DdsConfig:
        """This machine only: the emulator's and the tests' network."""
        return cls(domain_id=domain_id, interface=LOOPBACK)

    def validate(self) -> None:
        if isinstance(self.domain_id, bool) or not isinstance(self.domain_id, int) \
                or not 0 <= self.domain_id <= 232:
            raise ConfigError("domain_id", f"must be a whole number in 0..232, got {self.domain_id!r}")
        if not self.interface or any(c in self.interface for c in "<>\"'& /"):
            raise ConfigError("interface", f"not an interface name: {self.interface!r}")
        if self.interface == LOOPBACK and (self.multicast or any(p not in ("127.0.0.1", "localhost")
                                                                  for p in self.peers or ())):
            raise ConfigError("peers", "on loopback the only peer is 127.0.0.1 and multicast stays off")
        for peer in self.peers or ():
            if not peer or any(c in peer for c in "<>\"'& "):
                raise ConfigError("peers", f"not an address: {peer!r}")
        if self.multicast is False and not self.peers and self.interface != LOOPBACK:
            raise ConfigError("peers", "with multicast off, discovery needs the robot's address as a peer "
                                       "(192.168.123.161)")

    def resolved(self) -> DdsConfig:
        """The concrete set-up: the interface found, multicast and peers decided.

        Raises:
            ConfigError: ``auto`` and no interface on the robot's network; a network other
                than loopback while pytest runs outside a network namespace of its own.
        """
        self.validate()
        if self.interface != LOOPBACK and "PYTEST_CURRENT_TEST" in os.environ and not private_network_namespace():
            raise ConfigError("interface", f"tests run on loopback or in a network namespace of their own, "
                                           f"not on {self.interface!r}")
        interface = interface_on() if self.interface == AUTO else self.interface
        loop = interface == LOOPBACK
        multicast = (not loop) if self.multicast is None else self.multicast
        peers = self.peers if self.peers is not None else (("127.0.0.1",) if loop else ())
        return dataclasses.replace(self, interface=interface, multicast=multicast, peers=tuple(peers))

    def xml(self) -> str:
        """Cyclone's configuration. With multicast it has the shape of Unitree's SDK's own
        (``ChannelConfigHasInterface``: the interface, multicast and priority at their
        defaults); without, multicast is disallowed and the peers are listed."""
        c = self.resolved()
        peers = "".join(f'<Peer address="{p}"/>' for p in c.peers or ())
        discovery = (f"<Discovery><ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>60"
                     f"</MaxAutoParticipantIndex><Peers>{peers}</Peers></Discovery>") if peers else ""
        if c.multicast:
            general = (f'<General><Interfaces><NetworkInterface name="{c.interface}" priority="default" '
                       f'multicast="default"/></Interfaces></General>')
        else:
            general = (f'<General><Interfaces><NetworkInterface name="{c.interface}" multicast="false"/>'
                       f"</Interfaces><AllowMulticast>false</AllowMulticast></General>")
        return f'<CycloneDDS><Domain Id="any">{general}{discovery}</Domain></CycloneDDS>'


_domains: dict[int, tuple[DdsConfig, Domain]] = {}
_domains_lock = threading.Lock()


def participant(config: DdsConfig) -> DomainParticipant:
    """A participant in ``config``'s domain on its one interface. A process configures each
    domain once: a second, different configuration of the same domain is refused."""
    resolved = config.resolved()
    with _domains_lock:
        known = _domains.get(resolved.domain_id)
        if known is None:
            _domains[resolved.domain_id] = (resolved, Domain(resolved.domain_id, resolved.xml()))
        elif known[0] != resolved:
            raise ConfigError("domain_id", f"domain {resolved.domain_id} is already configured as {known[0]}")
    return DomainParticipant(resolved.domain_id)


STREAM_QOS = Qos(Policy.Reliability.BestEffort, Policy.History.KeepLast(1))
"""The 500 Hz state stream we read: the newest frame only, never a resend of an old one."""
SDK_QOS = Qos(Policy.Reliability.Reliable(duration(milliseconds=100)), Policy.History.KeepLast(1))
"""Unitree's SDK's default (its ``ChannelPublisher``/``ChannelSubscriber`` take Cyclone's
defaults: reliable, keep last 1): how we write ``rt/lowcmd`` and how the emulated robot
reads it and writes ``rt/lowstate``. A reader that asks for reliable data never matches a
best-effort writer; keep-last 1 means a write never waits for a resend, and a resend is
only ever of the newest command."""
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

    def writers(self) -> list[dict[str, object]]:
        """The remote writers this reader matched, as discovery announced them: topic, type
        name, XTypes type hash and whether they are ours, reliability. Matching needs
        equal type names and assignable types; the hash shows they are identical."""
        ours = self.reader.topic.data_type.__idl__.get_type_id()
        found: list[dict[str, object]] = []
        for handle in self.reader.get_matched_publications():
            try:
                data = self.reader.get_matched_publication_data(handle)
            except DDSException:
                continue  # it left between the two calls
            if data is None:
                continue
            reliable = any(isinstance(p, Policy.Reliability.Reliable) for p in data.qos)
            found.append({"topic": data.topic_name, "type": data.type_name,
                          "type_hash": _type_hash(data.type_id), "same_type": data.type_id == ours,
                          "reliability": "reliable" if reliable else "best effort"})
        return found


def _type_hash(type_id: object) -> str:
    """The 14-byte XTypes hash of a type identifier as hex ('' when there is none)."""
    value = getattr(type_id, "value", None)
    return value.hex() if isinstance(value, bytes) else ""


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
