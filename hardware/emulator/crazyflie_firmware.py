"""What the Crazyflie firmware does with setpoints, modelled on ``crtp_commander_rpyt.c``,
``supervisor.c``/``supervisor_state_machine.c`` and ``controller_pid.c`` (2026).

Commander: setpoints by priority (``commander.c``): RPYT and the generic STOP at the
CRTP priority; the high-level commander (:mod:`.crazyflie_hl`: take-off, landing, the
null setpoint when idle) below it, taking over after ``notify_setpoint_stop``.

Legacy RPYT setpoints (port 3):
  * the thrust lock: every thrust is applied as 0 until a setpoint with thrust exactly 0
    arrives (once per boot);
  * a thrust command below 1000 gives no power; commands are clamped at 60000;
  * per axis, ``flightmode.stabModeRoll/Pitch/Yaw`` (read when the setpoint is decoded)
    choose RATE (0: deg/s) or ANGLE (1: deg); the wire pitch is compared with the
    legacy inverted pitch and ``-gyro.y``, and the yaw-rate input is inverted.

Supervisor:
  * "flying" while any motor ran within the last 2 s (``IS_FLYING_HYSTERESIS``);
  * commander watchdog, only while flying: no setpoint for 500 ms -> level out (roll and
    pitch angle 0, yaw rate 0, the last thrust kept); for 2000 ms -> motors off and
    Locked (reboot required);
  * the emergency stop (supervisor command or the legacy localization packet), and the
    ``stabilizer.stop`` parameter: motors off; the e-stop latches (Locked);
  * tumble check: the accelerometer's z below 0.5 g (60 deg tilt) for 1 s, or below
    -0.2 g for 0.1 s, outside free fall -> motors off (Crashed; not recoverable here).

Controller: the attitude loop (P, 6 1/s as the firmware's default) feeds the simulated
drone's own body-rate PID and mixer (:class:`~sim2real.sim.drone.rate_control.BodyRateController`,
the ``ctbr`` path of the simulator), so rate-mode flight matches the simulator's. The
high-level commander's position setpoints go through the simulator's cascaded PID
(:class:`~sim2real.sim.drone.position_control.CascadedPID`, its integrator always on as
the firmware's velocity PID's is) on the true state, which stands in for the firmware's
own estimate and ``controller_pid.c``'s position and velocity loops.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from sim2real.hardware.crazyflie.thrust import (
    PWM_CLAMP,
    PWM_FULL,
    PWM_MIN_POWER,
    VBAT_FULL,
    MotorCurve,
    firmware_duty,
    wire_to_attitude,
)
from sim2real.hardware.emulator.crazyflie_hl import (
    PRIORITY_CRTP,
    PRIORITY_DISABLE,
    PRIORITY_HIGHLEVEL,
    HighLevelCommander,
)
from sim2real.hardware.emulator.crazyflie_toc import ParamSubsystem
from sim2real.sim.core.frames import rotation
from sim2real.sim.drone import constants as C
from sim2real.sim.drone.position_control import CascadedPID, CascadedPIDGains
from sim2real.sim.drone.rate_control import BodyRateController

WDT_LEVEL = 0.5
"""s without setpoints after which a flying Crazyflie levels out (``COMMANDER_WDT_TIMEOUT_STABILIZE``)."""
WDT_SHUTDOWN = 2.0
"""s without setpoints after which a flying Crazyflie stops its motors and locks."""
FLYING_HYSTERESIS = 2.0
"""s after the motors last ran during which the supervisor still counts it as flying."""
ATTITUDE_KP = 6.0
"""1/s, angle error -> rate command of the firmware's attitude loop (roll, pitch, yaw)."""
SUPPLY_FILTER = 0.1
"""s, time constant of the battery voltage the compensation divides by (``stabilizer.c``:
``b = 0.01`` per 1 kHz stabilizer tick)."""


@dataclass(frozen=True)
class Setpoint:
    """One setpoint the commander holds: a decoded RPYT setpoint (wire values), the null
    setpoint (``kind`` "null": motors off) or a high-level position setpoint."""

    roll: float
    pitch: float
    yaw: float
    thrust: int
    """The thrust the firmware applies (0 while locked or below 1000, clamped)."""
    rate: tuple[bool, bool, bool]
    """RATE mode per axis (roll, pitch, yaw) when it was decoded."""
    time: float
    kind: str = "rpyt"
    """rpyt, null, position."""
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)


class Firmware:
    """Commander, supervisor and controller of one Crazyflie over one simulated drone."""

    def __init__(self, params: ParamSubsystem, motor: MotorCurve, inner_dt: float,
                 battery_compensation: bool = True) -> None:
        self.params = params
        self.motor = motor
        self.battery_compensation = battery_compensation
        """``CONFIG_ENABLE_THRUST_BAT_COMPENSATED`` (on in the stock build)."""
        self.supply = VBAT_FULL
        """V, the low-passed battery voltage the compensation divides by."""
        self._inner_dt = inner_dt
        self.rate_controller = BodyRateController(1, inner_dt)
        self.position_controller = CascadedPID(1, dt=inner_dt, gains=CascadedPIDGains(integral_zone=(1.0, 1.5)))
        self.hl = HighLevelCommander()
        self.priority = PRIORITY_DISABLE
        self._now = 0.0
        self.thrust_locked = True
        self.setpoint: Setpoint | None = None
        self.state = "ready"
        """ready, flying, level_out, locked (e-stop or watchdog), crashed (tumbled)."""
        self.lock_reason = ""
        self.motors_last_on = -math.inf
        self.tumble_since: float | None = None
        self.applied_thrust = 0
        self.history: deque[Setpoint] = deque(maxlen=4096)
        """The latest setpoints as decoded (what the tests read back)."""
        self.counters = {"setpoints": 0, "locked_thrust": 0, "level_outs": 0, "watchdog_cutoffs": 0,
                         "emergency_stops": 0, "tumbles": 0}

    # -- from the link ------------------------------------------------------------------
    def rpyt(self, roll: float, pitch: float, yaw: float, thrust: int, now: float) -> None:
        """A legacy setpoint (already checked for size and finiteness)."""
        if thrust == 0:
            self.thrust_locked = False
        if self.thrust_locked and thrust != 0:
            self.counters["locked_thrust"] += 1
        applied = 0 if self.thrust_locked or thrust < PWM_MIN_POWER else min(thrust, PWM_CLAMP)
        rate = tuple(self.params.get(f"flightmode.stabMode{a}") == 0 for a in ("Roll", "Pitch", "Yaw"))
        self._from_crtp(Setpoint(roll, pitch, yaw, applied, (rate[0], rate[1], rate[2]), now))

    def stop_setpoint(self, now: float) -> None:
        """The generic commander's STOP setpoint: motors off (a fresh setpoint)."""
        self._from_crtp(Setpoint(0.0, 0.0, 0.0, 0, (False, False, True), now, kind="null"))

    def _from_crtp(self, sp: Setpoint) -> None:
        """``commanderSetSetpoint`` at the CRTP priority: it wins and stops the planner."""
        self.setpoint, self.priority = sp, PRIORITY_CRTP
        self.hl.stop()
        self.history.append(sp)
        self.counters["setpoints"] += 1

    def notify_setpoint_stop(self) -> None:
        """``commanderRelaxPriority``: any source may take over, the high-level commander
        at its next tick (its null setpoint if it has no trajectory: motors off)."""
        self.priority = PRIORITY_HIGHLEVEL

    def high_level(self, data: bytes, now: float) -> str | None:
        """One high-level commander packet (port 8); None when understood."""
        return self.hl.command(data, now, blocked=self.state in ("locked", "crashed"))

    def emergency_stop(self, reason: str = "emergency stop") -> None:
        """Motors off now, latched until reboot."""
        self.counters["emergency_stops"] += 1
        self._lock(reason)

    def _lock(self, reason: str) -> None:
        if self.state != "locked":
            self.state, self.lock_reason = "locked", reason
        self.rate_controller.reset()

    # -- every control tick ---------------------------------------------------------------
    @property
    def flying(self) -> bool:
        return self.state in ("flying", "level_out")

    def high_level_tick(self, now: float, position: np.ndarray) -> None:
        """The stabilizer's first step: the planner's setpoint offered at its priority
        (while the supervisor lets it fly)."""
        self._now = now
        if self.state in ("locked", "crashed"):
            return
        target = self.hl.setpoint(now, position)
        if self.priority > PRIORITY_HIGHLEVEL:
            return
        self.priority = PRIORITY_HIGHLEVEL
        if target is None:
            self.setpoint = Setpoint(0.0, 0.0, 0.0, 0, (False, False, True), now, kind="null")
        else:
            ref, vel = target
            self.setpoint = Setpoint(0.0, 0.0, 0.0, 0, (False, False, True), now, kind="position",
                                     position=(float(ref[0]), float(ref[1]), float(ref[2])),
                                     velocity=(float(vel[0]), float(vel[1]), float(vel[2])))

    def supervise(self, now: float, acc_z_g: float, acc_norm_g: float) -> None:
        """Update the supervisor's state (watchdog, tumble) at ``now``."""
        if self.state in ("locked", "crashed"):
            return
        age = math.inf if self.setpoint is None else now - self.setpoint.time
        flying = now - self.motors_last_on < FLYING_HYSTERESIS
        if flying and age > WDT_SHUTDOWN:
            self.counters["watchdog_cutoffs"] += 1
            return self._lock("commander watchdog: no setpoint for 2 s")
        if self._tumbled(now, acc_z_g, acc_norm_g) and self.params.get("supervisor.tmblChckEn"):
            self.counters["tumbles"] += 1
            self.state, self.lock_reason = "crashed", "tumbled"
            return None
        if flying and age > WDT_LEVEL:
            if self.state != "level_out":
                self.counters["level_outs"] += 1
            self.state = "level_out"
        else:
            self.state = "flying" if flying else "ready"
        return None

    def _tumbled(self, now: float, acc_z: float, acc_norm: float) -> bool:
        if acc_norm < 0.1 or acc_z >= 0.5:  # free fall is a valid flight mode
            self.tumble_since = None
            return False
        if self.tumble_since is None:
            self.tumble_since = now
        held = now - self.tumble_since
        return (acc_z < -0.2 and held > 0.1) or held > 1.0

    def motor_duties(self, now: float, quat: np.ndarray, gyro: np.ndarray, vbat: float,
                     position: np.ndarray | None = None, velocity: np.ndarray | None = None) -> np.ndarray:
        """The four motors' PWM duties in [0, 1] for this inner period (``vbat``: the
        battery voltage pm reads; ``position`` and ``velocity``: the state estimate, for
        the high-level commander's setpoints). The controller works in the firmware's
        thrust units (command 65535 asks a motor for ``THRUST_MAX``); each motor's command
        then goes through the battery compensation, when built with it."""
        self.supply += (vbat - self.supply) * (1.0 - math.exp(-self._inner_dt / SUPPLY_FILTER))
        return np.array([firmware_duty(n / self.motor.thrust_max * PWM_FULL, self.motor, self.supply,
                                       self.battery_compensation)
                         for n in self._rotor_thrusts(now, quat, gyro, position, velocity)])

    def _rotor_thrusts(self, now: float, quat: np.ndarray, gyro: np.ndarray,
                       position: np.ndarray | None, velocity: np.ndarray | None) -> np.ndarray:
        """The four rotor thrusts (N, firmware units) the controller asks for."""
        sp = self.setpoint
        if sp is not None and sp.kind == "position" and position is not None and velocity is not None:
            return self._track(now, sp, quat, gyro, position, velocity)
        off = (self.state in ("locked", "crashed") or sp is None or sp.thrust == 0 or sp.kind != "rpyt"
               or self.params.get("stabilizer.stop") != 0)
        if off or sp is None:
            self.applied_thrust = 0
            self.rate_controller.reset()
            self.position_controller.reset()
            return np.zeros(4)
        self.applied_thrust = sp.thrust
        self.motors_last_on = now
        roll, pitch, yaw = attitude(quat)
        if self.state == "level_out":  # angle 0, yaw rate 0, the last thrust kept
            rates = np.array([ATTITUDE_KP * -roll, ATTITUDE_KP * -pitch, 0.0])
        else:
            want_roll, want_pitch = wire_to_attitude(sp.roll, sp.pitch)
            rates = np.array([
                math.radians(sp.roll) if sp.rate[0] else ATTITUDE_KP * (want_roll - roll),
                -math.radians(sp.pitch) if sp.rate[1] else ATTITUDE_KP * (want_pitch - pitch),
                -math.radians(sp.yaw) if sp.rate[2] else ATTITUDE_KP * _wrap(math.radians(sp.yaw) - yaw),
            ])
        thrust = np.array([4.0 * sp.thrust / PWM_FULL * self.motor.thrust_max])
        return self.rate_controller(thrust, rates[None], np.asarray(gyro, dtype=np.float64)[None])[0]

    def _track(self, now: float, sp: Setpoint, quat: np.ndarray, gyro: np.ndarray, position: np.ndarray,
               velocity: np.ndarray) -> np.ndarray:
        """A position setpoint: the position controller's thrust and body rates."""
        if self.state in ("locked", "crashed") or self.params.get("stabilizer.stop") != 0:
            self.applied_thrust = 0
            return np.zeros(4)
        R = rotation(quat)
        gains = self.position_controller.gains
        # The trajectory's velocity as feedforward: kp (target - p) + v_ref.
        error = np.asarray(sp.position) - position + np.asarray(sp.velocity) / gains.kp_pos
        obs = np.concatenate([error, velocity, R.reshape(9), gyro, np.zeros(4)])
        action = self.position_controller.act(obs)
        thrust = min((action[0] + 1.0) / 2.0 * C.MAX_COLLECTIVE_THRUST, 4.0 * self.motor.thrust_max)
        self.applied_thrust = int(min(round(thrust / (4.0 * self.motor.thrust_max) * PWM_FULL), PWM_CLAMP))
        self.motors_last_on = now
        rates = action[1:] * C.MAX_BODY_RATE
        return self.rate_controller(np.array([thrust]), rates[None], np.asarray(gyro, dtype=np.float64)[None])[0]

    def info_bits(self) -> int:
        """``supervisor.info``: can be armed, armed, auto-armed, can fly, flying, tumbled,
        locked, crashed (bits 0-7)."""
        bits = 0b0111 if self.state not in ("locked", "crashed") else 0
        bits |= 0b1000 if self.state in ("ready", "flying", "level_out") else 0
        bits |= (1 << 4) if self.flying else 0
        bits |= (1 << 5) if self.state == "crashed" else 0
        bits |= (1 << 6) if self.state == "locked" else 0
        bits |= (1 << 7) if self.state == "crashed" else 0
        bits |= 0x100 if self.hl.state != "idle" else 0  # high-level control active (landing included)
        bits |= 0x200 if self.hl.finished(self._now) else 0  # its trajectory finished
        return bits


def attitude(quat: np.ndarray) -> tuple[float, float, float]:
    """Roll, pitch, yaw (rad; ZYX, right-handed FLU) of a (w, x, y, z) quaternion."""
    w, x, y, z = (float(v) for v in quat)
    roll = math.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = math.asin(max(-1.0, min(1.0, 2.0 * (w * y - z * x))))
    yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return roll, pitch, yaw


def _wrap(angle: float) -> float:
    return (angle + math.pi) % (2.0 * math.pi) - math.pi
