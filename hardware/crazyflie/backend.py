"""The Crazyflie 2.x through Bitcraze's cflib: CTBR commands as legacy setpoints in rate mode.

Life cycle (see :mod:`sim2real.hardware.backend`):

* ``connect``: cflib's ``open_link`` (which has no timeout of its own: this one waits
  at most ``timeout``), the TOCs and parameter values, then three log blocks
  (:mod:`.logs`) until the first full state arrives;
* ``enable``: roll, pitch and yaw switched to RATE mode (``flightmode.stabMode*`` = 0,
  confirmed by the firmware's answers), the supervisor asked whether it can fly (a
  locked or crashed Crazyflie needs a reboot), then the zero-thrust setpoint that
  releases the firmware's thrust lock;
* ``command``: ``[thrust N, roll, pitch, yaw rate rad/s]`` -> the newest setpoint (deg/s,
  yaw rate negated, thrust through :class:`~.thrust.ThrustMap` at the latest ``pm.vbat``:
  the identified ``thrust_scale``, the battery compensated by the firmware or here), which the backend's
  setpoint stream sends at once: a real-time thread of its own
  (:mod:`sim2real.hardware.realtime`), so the bridge's executor never waits on cflib or
  the radio, and the stream never waits on the policy (the firmware keeps the last
  setpoint; its watchdog acts at 0.5 s, after this backend's own at ``stale_after``);
* ``safe``: the firmware's own landing (:mod:`.landing`: the high-level commander's
  ``land``, then ``notify_setpoint_stop`` so it takes over), handed over and watched by
  this backend's own thread; the backend goes there by itself while enabled when no
  command came for ``stale_after`` s or no log data for ``state_timeout`` s (both
  0.15 s: the state is lost, the link may still carry the hand-over), and when the
  link is lost (cflib's callbacks, or no log data for ``link_timeout`` s: then
  DISCONNECTED; the hand-over is still sent, in case the drone still hears);
* ``estop``: the firmware's emergency stop (supervisor command, and the legacy
  localization packet for older firmware): motors off now, Locked until rebooted.

Low battery: the firmware only warns (``pm.state`` lowPower after 5 s under
``pm.lowVoltage``, 3.2 V; it flies on until the motors can no longer lift it), so the
backend lands (``safe``) when it reports lowPower and refuses to enable on one.

Thrust identification: while enabled the backend keeps its flight as a hover log
(:meth:`CrazyflieBackend.hover_log`: the commands it sent, the state estimate, ``pm.vbat``);
:func:`~.identify.identify_hover` fits the real drone's thrust scale and hover command
from it, for the ``thrust_scale`` option of the next flight.

What the real robot does when this backend cannot act (process killed, link gone both
ways before the hand-over): the firmware levels out after 0.5 s keeping its last thrust
and cuts the motors after 2 s, then locks: a fall from the flight height. Once handed
over, the landing goes on without the link.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim2real.hardware.backend import HardwareError, Phase, RobotBackend
from sim2real.hardware.crazyflie import crtp
from sim2real.hardware.crazyflie.identify import HoverLog
from sim2real.hardware.crazyflie.landing import CURRENT_YAW, DescentConfig, FirmwareLanding
from sim2real.hardware.crazyflie.logs import PM_LOW_POWER, StateAssembler, log_configs
from sim2real.hardware.crazyflie.thrust import CURVES, ThrustMap, ctbr_to_setpoint
from sim2real.hardware.options import load_options
from sim2real.hardware.realtime import WRITER_PRIORITY, realtime_thread
from sim2real.hardware.timing import PeriodicSchedule, TimingRecord
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.schema import Positive, PositiveInt
from sim2real.sim.drone import constants as C

RATE = 0
STREAM_PERIOD = 0.004
"""s between the setpoint stream's watchdog checks (a new command is sent at once, between them)."""
HOVER_LOG_SAMPLES = 6000
"""State frames the hover log keeps (60 s at 100 Hz)."""
DETAIL_WINDOW = 10.0
"""s of the stream's timing :meth:`CrazyflieBackend.detail` summarises."""
LOCKED_BIT, CRASHED_BIT, CAN_FLY_BIT = 1 << 6, 1 << 7, 1 << 3
_drivers_ready = False
_drivers_lock = threading.Lock()


@dataclass
class CrazyflieOptions:
    uri: str = "udp://127.0.0.1:19850"
    """cflib link URI (``udp://host:port`` for the emulator, ``radio://0/80/2M/E7E7E7E7E7`` for a real one)."""
    state_period_ms: PositiveInt = 10
    """Period of the odom and imu log blocks (multiples of 10 ms)."""
    battery_period_ms: PositiveInt = 100
    """Period of the battery/supervisor log block."""
    control_dt: Positive = C.CONTROL_DT
    """s, the deployment's control period."""
    stale_after: Positive = 0.15
    """s without a command while enabled after which the backend hands the landing to the firmware.
    Not 3 control periods (60 ms): a shared host stalled the whole in-process graph for
    ~100 ms in about one flight in three (the demo's emulated hover), and a drone that
    aborts its flight on a host hiccup is no safer. Still well inside the firmware's own
    watchdog (it levels the drone at 0.5 s)."""
    state_timeout: Positive = 0.15
    """s without any log packet after which an enabled backend hands the landing over (the
    policy has no state to act on); the same reasoning as ``stale_after``."""
    link_timeout: Positive = 0.5
    """s without any log packet after which the link counts as lost (phase DISCONNECTED).
    Longer than ``state_timeout``: a landed drone is not disconnected by one late packet
    (a shared host's scheduler or garbage collector can delay cflib's threads ~70 ms)."""
    thrust_scale: Positive = 1.0
    """The real drone's hover thrust over the description's (27 g): identify it from a
    hover log (:func:`~sim2real.hardware.crazyflie.identify.identify_hover`)."""
    propellers: str = "cf21"
    """Bitcraze's motor curve for the propellers (cf21: the Crazyflie 2.0/2.1's; cf21_plus)."""
    firmware_compensation: bool = True
    """The firmware compensates the battery (stock builds); False for a firmware built
    without ``CONFIG_ENABLE_THRUST_BAT_COMPENSATED``: the backend then scales each
    command by the logged ``pm.vbat``."""
    enable_timeout: Positive = 1.0
    """s to wait for the firmware to confirm rate mode and report it can fly."""

    def validate(self) -> None:
        if not str(self.uri).startswith(("udp://", "radio://", "usb://", "tcp://")):
            raise ConfigError("uri", f"not a cflib URI: {self.uri!r}")
        if self.propellers not in CURVES:
            raise ConfigError("propellers", f"one of {', '.join(CURVES)}, got {self.propellers!r}")


def _close_in_background(cf: Any) -> None:
    """Close a cflib link without waiting: cflib joins its link threads (~1-2 s on UDP),
    which would stretch a connect timeout past what the caller asked for."""
    threading.Thread(target=cf.close_link, name="crazyflie-close", daemon=True).start()


class CrazyflieBackend(RobotBackend):
    protocol = "CRTP via cflib 0.1.34: RPYT setpoints in rate mode, log blocks, params, supervisor e-stop"
    close_seconds = 12.0  # close() waits for the firmware's landing: 6-10 s from 1.5-2.5 m
    state_rate = 100.0  # the log blocks run at 10 ms (the firmware's fastest useful period over the radio)

    def __init__(self, action_mode: str = "ctbr", options: dict[str, Any] | None = None) -> None:
        super().__init__(action_mode, options)
        if action_mode not in ("ctbr", "ctbr_residual"):
            raise ConfigError("action_mode", f"the Crazyflie backend takes ctbr commands, got {action_mode!r}")
        self.cfg, self.descent_config = load_options(self.options, [(CrazyflieOptions, ""),
                                                                    (DescentConfig, "descent_")], "Crazyflie")
        self.thrust_map = ThrustMap(self.cfg.propellers, self.cfg.thrust_scale, self.cfg.firmware_compensation)
        self._flight: deque[tuple[float, ...]] = deque(maxlen=HOVER_LOG_SAMPLES)
        """(time, thrust N, z, vz, R22, vbat) per state frame while enabled: the hover log."""
        self._thrust_sent = 0.0
        self._io = threading.RLock()
        """Orders phase changes and sends: no command goes out after safe() or estop()."""
        self._cf: Any = None
        self._state = StateAssembler(self._on_state)
        self._landing: FirmwareLanding | None = None
        self._last_command = -math.inf
        self._setpoint: tuple[float, float, float, int] | None = None
        """The newest command as a setpoint (roll, pitch, yaw rate, thrust); the stream sends it."""
        self._setpoint_new = False
        self._slot = threading.Lock()
        """Guards the newest setpoint only: command() never takes ``_io`` (held while cflib sends)."""
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pilot: threading.Thread | None = None
        self.stream_timing = TimingRecord(STREAM_PERIOD, capacity=16384)
        """The setpoint stream's ticks (rate, lateness, jitter)."""
        self.realtime: dict[str, Any] = {}
        """The stream's scheduling (:class:`~sim2real.hardware.realtime.RealtimeStatus`)."""
        self._counts: dict[str, int] = {"setpoints_sent": 0, "commands_rejected": 0, "commands_ignored": 0,
                                        "landings": 0, "landing_packets": 0, "link_lost": 0,
                                        "log_truncated": 0, "estops_sent": 0}
        self.link_lost_reason = ""
        self._log_sizes: dict[int, int] = {}
        """Log block id -> bytes of a complete data packet (id, timestamp, values)."""

    # -- life cycle -----------------------------------------------------------------------
    def connect(self, timeout: float) -> None:
        if self._phase in (Phase.CONNECTED, Phase.ENABLED):
            return
        if self._cf is not None:  # a link lost earlier: finish with it first
            self.close()
        import cflib.crtp
        from cflib.crazyflie import Crazyflie
        from cflib.crazyflie.log import LogTocElement

        global _drivers_ready
        with _drivers_lock:
            if not _drivers_ready:
                cflib.crtp.init_drivers()
                _drivers_ready = True
        deadline = time.monotonic() + timeout
        ready, failed = threading.Event(), []
        cf = Crazyflie(rw_cache=None)
        cf.fully_connected.add_callback(lambda uri: ready.set())
        cf.connection_failed.add_callback(lambda uri, msg: (failed.append(str(msg)), ready.set()))
        cf.connection_lost.add_callback(lambda uri, msg: self._link_lost(f"cflib: connection lost ({msg})"))
        cf.add_port_callback(crtp.PORT_LOG, self._check_log_size)
        self._state = StateAssembler(self._on_state)
        self.link_lost_reason = ""
        with self._lock:
            self._latest = None  # the state this connection reads, not the last one's
        cf.open_link(self.cfg.uri)
        if not ready.wait(max(deadline - time.monotonic(), 0.0)) or failed:
            _close_in_background(cf)
            why = failed[0].splitlines()[0] if failed else f"no answer within {timeout:.1f} s"
            raise HardwareError(f"Crazyflie at {self.cfg.uri}: {why}")
        if cf.platform.get_protocol_version() < 4:
            _close_in_background(cf)
            raise HardwareError(f"Crazyflie at {self.cfg.uri}: CRTP protocol {cf.platform.get_protocol_version()} "
                                "is too old (needs >= 4: update the firmware)")
        self._configs = log_configs(self.cfg.state_period_ms, self.cfg.battery_period_ms)
        try:
            for config in self._configs:
                cf.log.add_config(config)
                config.data_received_cb.add_callback(self._state.on_data)
                self._log_sizes[config.id] = 4 + sum(LogTocElement.get_size_from_id(v.fetch_as)
                                                     for v in config.variables)
                config.start()
        except (KeyError, AttributeError) as exc:
            _close_in_background(cf)
            raise HardwareError(f"Crazyflie at {self.cfg.uri}: log setup refused: {exc}") from None
        while self.state() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if self.state() is None:
            _close_in_background(cf)
            raise HardwareError(f"Crazyflie at {self.cfg.uri}: no state estimate within {timeout:.1f} s")
        with self._io:
            self._cf = cf
            self._set_phase(Phase.CONNECTED, "")
        self._stop.clear()
        self._pilot = threading.Thread(target=self._stream_loop, name="crazyflie-setpoints", daemon=True)
        self._pilot.start()

    def enable(self) -> None:
        with self._io:
            self._still_connected()
            if self._cf is None:
                raise HardwareError("cannot enable: not connected")
            if self._landing is not None:
                raise HardwareError("cannot enable: the firmware is still landing (the safe state)")
        if self.health().state_age > self.cfg.state_timeout:
            raise HardwareError("cannot enable: no fresh state estimate")
        cf = self._cf
        self._set_modes(RATE)
        deadline = time.monotonic() + self.cfg.enable_timeout
        while not self._modes_are(RATE) and time.monotonic() < deadline:
            time.sleep(0.005)
        if not self._modes_are(RATE):
            raise HardwareError("cannot enable: the firmware did not confirm rate mode (flightmode.stabMode*)")
        bits = self._supervisor_bits(deadline)
        if bits & (LOCKED_BIT | CRASHED_BIT):
            raise HardwareError("cannot enable: the Crazyflie is locked or crashed (watchdog or e-stop): reboot it")
        if not bits & CAN_FLY_BIT:
            raise HardwareError("cannot enable: the supervisor does not report it can fly")
        if self._state.pm_state == PM_LOW_POWER:
            raise HardwareError(f"cannot enable: the battery is low ({self._state.battery_v:.2f} V): charge it")
        if not self.cfg.firmware_compensation and not math.isfinite(self._state.battery_v):
            raise HardwareError("cannot enable: no battery voltage yet (the thrust map compensates it)")
        with self._io:
            self._still_connected()
            cf.commander.send_setpoint(0.0, 0.0, 0.0, 0)  # the zero-thrust setpoint: releases the thrust lock
            self._counts["setpoints_sent"] += 1
            with self._slot:
                self._last_command = time.monotonic()
                self._setpoint, self._setpoint_new = None, False
            self._set_phase(Phase.ENABLED, "")

    def command(self, values: np.ndarray) -> None:
        v = np.asarray(values, dtype=np.float64)
        if v.shape != (4,) or not np.all(np.isfinite(v)):
            self._counts["commands_rejected"] += 1
            raise ValueError(f"a Crazyflie command is 4 finite numbers [thrust N, p, q, r], got {values!r}")
        setpoint = ctbr_to_setpoint(v, self.thrust_map, self._state.battery_v)
        if self._phase is not Phase.ENABLED or self._cf is None:  # the stream checks again before it sends
            self._counts["commands_ignored"] += 1
            return
        with self._slot:
            self._setpoint, self._setpoint_new = setpoint, True
            self._last_command = time.monotonic()
            self._thrust_sent = float(v[0])
        self._wake.set()  # the stream sends it now; this thread never waits on cflib or the radio

    def safe(self, reason: str) -> None:
        with self._io:
            if self._phase is Phase.ENABLED:
                self._begin_landing(reason)
                self._set_phase(Phase.CONNECTED, reason)
            elif self._phase is Phase.CONNECTED and self._landing is None:
                self._reason = reason

    def estop(self, reason: str) -> None:
        with self._io:
            self._landing = None
            cf = self._cf
            if cf is not None and cf.link is not None:
                from cflib.crtp.crtpstack import CRTPPacket

                for _ in range(3):  # no acknowledgement on UDP: repeat
                    cf.supervisor.send_emergency_stop()
                    legacy = CRTPPacket()
                    legacy.set_header(crtp.PORT_LOCALIZATION, crtp.LOCALIZATION_GENERIC)
                    legacy.data = bytes((crtp.LOCALIZATION_EMERGENCY_STOP,))
                    cf.send_packet(legacy)
                    self._counts["estops_sent"] += 1
            self._set_phase(Phase.ESTOPPED, reason)

    def close(self) -> None:
        """Safe state, then the link closes once the firmware's landing must have ended
        (cflib's close sends a zero setpoint, which would stop the landing mid-air)."""
        self.safe("closing")
        landing = self._landing
        deadline = time.monotonic() + (landing.ends() + 3.0 - landing.start if landing is not None else 0.0)
        while self._landing is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        self._stop.set()
        self._wake.set()
        if self._pilot is not None and self._pilot is not threading.current_thread():
            self._pilot.join(timeout=1.0)
        with self._io:
            cf, self._cf, self._landing = self._cf, None, None
            if self._phase is not Phase.ESTOPPED:
                self._set_phase(Phase.DISCONNECTED, self._reason)
        if cf is not None:
            cf.close_link()  # cflib sends a zero setpoint here: harmless once landed or e-stopped

    # -- the backend's own thread: the setpoint stream, stale commands, lost link, the landing --
    def _stream_loop(self) -> None:
        # cflib's own threads (the UDP or radio receiver, the packet dispatcher that runs
        # the log callbacks, the parameter updater) carry every state and every reply the
        # stream and the graph wait on: at normal priority a loaded host starves them (the
        # state went 40-50 ms stale, rate mode went unconfirmed for 1 s).
        with realtime_thread("crazyflie setpoint stream", WRITER_PRIORITY, helpers=("py:cflib",)) as status:
            self.realtime = status.as_dict()
            schedule = PeriodicSchedule(STREAM_PERIOD, self.stream_timing)
            schedule.start(time.monotonic() + STREAM_PERIOD)
            last_tick = schedule.next
            while not self._stop.is_set():
                self._wake.wait(max(schedule.remaining(), 0.0))
                self._wake.clear()
                now = time.monotonic()
                with self._io:
                    self._send_newest(now)
                    if now < schedule.next:
                        continue
                    # How long this thread itself went unscheduled: a stale command with a stalled
                    # stream points at the host (the whole process paused), not at the command source.
                    paused, last_tick = now - last_tick, now
                    self._watch(now, paused)
                schedule.tick(now)

    def _send_newest(self, now: float) -> None:
        """The newest setpoint once, while enabled and fresh (``_io`` held: nothing goes
        out after safe() or estop())."""
        with self._slot:
            setpoint, fresh = self._setpoint, self._setpoint_new and now - self._last_command <= self.cfg.stale_after
            self._setpoint_new = False
        if fresh and setpoint is not None and self._phase is Phase.ENABLED and self._cf is not None:
            self._cf.commander.send_setpoint(*setpoint)
            self._counts["setpoints_sent"] += 1

    def _watch(self, now: float, paused: float) -> None:
        """Stale commands, a silent log stream, a lost link, the landing (the lock held)."""
        if self._phase is Phase.ENABLED and now - self._last_command > self.cfg.stale_after:
            self.safe(f"stale command: none for {now - self._last_command:.3f} s "
                      f"(this check last ran {paused:.3f} s before)")
        silent = now - self._state.last_frame
        if self._phase is Phase.ENABLED and self._state.pm_state == PM_LOW_POWER:
            self.safe(f"battery low: the firmware reports lowPower ({self._state.battery_v:.2f} V)")
        if self._phase is Phase.ENABLED and silent > self.cfg.state_timeout:
            self.safe(f"state stale: no log data for {silent:.3f} s")
        if not self.link_lost_reason and self._cf is not None and silent > self.cfg.link_timeout:
            self._link_lost(f"no state for {silent:.3f} s")
        if self._landing is not None:
            self._watch_landing(now)

    def _begin_landing(self, reason: str) -> None:
        m = self.state()
        last_z = None if m is None or m.base_pos is None else float(m.base_pos[2])
        fresh = m is not None and m.base_lin_vel is not None and self._state_age(m) <= self.cfg.state_timeout
        z, vz = (last_z, float(m.base_lin_vel[2])) if fresh and m is not None and m.base_lin_vel is not None \
            else (None, None)
        self._landing = FirmwareLanding(self.descent_config, time.monotonic(), z, vz, last_z, reason)
        self._counts["landings"] += 1
        self._watch_landing(time.monotonic())  # the first hand-over now, not a loop period later

    def _watch_landing(self, now: float) -> None:
        """Send the hand-over while it is due, read the firmware's answer, end the watch."""
        landing, cf = self._landing, self._cf
        if landing is None or cf is None:
            return
        if self._state.supervisor_info is not None and self._state.supervisor_info_time > landing.start:
            landing.confirm(self._state.supervisor_info)
        if landing.due(now, self.cfg.control_dt) and cf.link is not None:
            if not landing.on_ground:  # first the landing, then the priority: an idle planner is motors off
                cf.high_level_commander.land(0.0, landing.duration, yaw=CURRENT_YAW)
            cf.commander.send_notify_setpoint_stop()
            landing.sent.append(now)
            self._counts["landing_packets"] += 1
        if landing.done(now):
            self._landing = None

    def _supervisor_bits(self, deadline: float) -> int:
        """The supervisor's bits: asked until it answers (cflib waits 0.2 s and returns 0 on
        a lost reply, which a loaded host or radio sees), else the logged ``supervisor.info``."""
        while True:
            bits = int(self._cf.supervisor.read_bitfield())
            if bits or time.monotonic() >= deadline + 0.5:
                break
        if not bits and self._state.supervisor_info is not None \
                and time.monotonic() - self._state.supervisor_info_time < 4 * self.cfg.battery_period_ms / 1000:
            bits = self._state.supervisor_info
        return bits

    def _set_modes(self, mode: int) -> None:
        for axis in ("Roll", "Pitch", "Yaw"):
            self._cf.param.set_value(f"flightmode.stabMode{axis}", mode)

    def _modes_are(self, mode: int) -> bool:
        values = self._cf.param.values.get("flightmode", {}) if self._cf is not None else {}
        return all(str(values.get(f"stabMode{a}")) == str(mode) for a in ("Roll", "Pitch", "Yaw"))

    def _link_lost(self, reason: str) -> None:
        with self._io:
            if self.link_lost_reason:
                return
            self.link_lost_reason = f"link lost: {reason}"
            self._counts["link_lost"] += 1
            if self._phase is Phase.ENABLED:
                self._begin_landing(self.link_lost_reason)  # best effort: the drone may still hear us
            if self._phase is not Phase.ESTOPPED:
                self._set_phase(Phase.DISCONNECTED, self.link_lost_reason)

    def _check_log_size(self, pk: Any) -> None:
        """Counts log data packets shorter than their block (cflib drops them, logging an error)."""
        if pk.channel == crtp.LOG_DATA and len(pk.data) < self._log_sizes.get(pk.data[0] if pk.data else -1, 0):
            self._counts["log_truncated"] += 1

    # -- health -------------------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        return {**self._counts, **self._state.counters}

    def detail(self) -> dict[str, Any]:
        d = self._landing
        stream = self.stream_timing.summary(since=time.monotonic() - DETAIL_WINDOW)
        return {"realtime": dict(self.realtime), "setpoint_stream": stream,
                "uri": self.cfg.uri, "battery_v": self._state.battery_v, "supervisor_info": self._state.supervisor_info,
                "landing": None if d is None else {"stage": d.stage, "reason": d.reason, "duration_s": d.duration},
                "link": self.link_lost_reason or "up", "thrust_scale": self.cfg.thrust_scale,
                "firmware_compensation": self.cfg.firmware_compensation, "pm_state": self._state.pm_state,
                "hover_command": self._hover_command()}

    def _on_state(self, m: Measurements) -> None:
        """Each full state (cflib's thread): into the hover log while flying, then published."""
        stamp = m.stamps.get("odom", math.nan)
        if self._phase is Phase.ENABLED and m.base_quat is not None and m.base_pos is not None \
                and m.base_lin_vel is not None and (not self._flight or stamp > self._flight[-1][0]):
            _, x, y, _ = (float(q) for q in m.base_quat)  # one sample per odometry frame, at its arrival
            self._flight.append((stamp, self._thrust_sent, float(m.base_pos[2]), float(m.base_lin_vel[2]),
                                 1.0 - 2.0 * (x * x + y * y), self._state.battery_v))
        self._publish(m)

    def _hover_command(self) -> int | None:
        try:
            return self.thrust_map.hover_command(self._state.battery_v)
        except ValueError:  # no battery voltage yet, and the map compensates it
            return None

    def hover_log(self) -> HoverLog:
        """The samples of the flights while enabled (the newest ``HOVER_LOG_SAMPLES``)."""
        rows = np.array(list(self._flight), dtype=np.float64).reshape(-1, 6)
        return HoverLog(times=rows[:, 0], thrust=rows[:, 1], height=rows[:, 2], vz=rows[:, 3], tilt=rows[:, 4],
                        vbat=rows[:, 5])
