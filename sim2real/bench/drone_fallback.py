"""The drone's fallback in closed loop: odometry, the IMU or both are lost at a random
time during hover, tilted flight or a landing, and the safety chain (the deployed
one, ``make_chain`` with ``config/drone.yaml``'s defaults) flies the drone down in
MuJoCo. Per fault: the vertical speed at touchdown (the requirement: <= 1.5 m/s every
time), the horizontal drift from the fault to the touchdown, the tilt at the fault,
and the height at which the motors stopped.

The harness feeds the chain as the safety-filter node does: each stream writes its
fields with its own arrival time (``odom``: position, attitude, velocities; ``imu``:
attitude and body rates), the state is dated by ``odom`` (the required stream), and a
lost stream simply stops writing. The "policy" before the fault is the cascaded PID
(hover), a tilt manoeuvre (flight: the drone pitched toward a random heading at the
scenario's tilt, accelerating) or nothing (landing: the command stream stopped
earlier, so the fallback is already landing when the state goes).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sim2real.commands.output import add_json_flag, console, emit_json, stdout

if TYPE_CHECKING:
    from sim2real.policies.safety import CommandSpace, SafetyState
    from sim2real.sim.core.engine import Engine
    from sim2real.sim.drone.airframe import Airframe

HELP = "drone fallback in MuJoCo: odometry/IMU lost mid-flight -> touchdown speed and drift"

FAULTS = ("odom", "imu", "both")
PHASES = ("hover", "flight", "landing")
WARMUP_SECONDS = 5.0
"""Hover under the PID before the phase starts."""
TOUCHDOWN_LIMIT = 1.5
"""m/s: the required bound on the vertical speed at touchdown."""


@dataclass
class Scenario:
    fault: str
    """Which stream stops: ``odom``, ``imu`` or ``both``."""
    phase: str
    """``hover``, ``flight`` (tilted, accelerating) or ``landing`` (the fallback already flying)."""
    fault_time: float
    """Seconds into the phase when the stream stops."""
    tilt_deg: float = 0.0
    """``flight``: the tilt the manoeuvre holds (degrees)."""
    height: float = 1.5
    """Start height (m)."""
    dr: str = "none"
    """Domain randomization of the drone (``none``, ``train``, ``heldout``): mass,
    thrust, motors, drag, wind, gusts and latency the fallback's model does not know."""
    seed: int = 0
    robot: str = "drone"
    """The vehicle (a drone-class robot: ``drone``, the Crazyflie; ``x500``)."""


@dataclass
class Outcome:
    scenario: Scenario
    touchdown_speed: float
    """Vertical speed (m/s) at the first ground contact after the fault (``nan``: none)."""
    drift: float
    """Horizontal distance (m) from the position at the fault to the touchdown point."""
    tilt_at_fault_deg: float
    height_at_fault: float
    cut_height: float
    """Height (m) when the commanded thrust first went to zero after the fault (``nan``: never)."""
    max_tilt_after_deg: float
    flipped: bool
    safe_action: bool
    """The chain was in its safe action when the drone touched down (or at the end)."""
    flew_on: bool
    """No touchdown: the policy kept flying on the streams left (IMU lost, odometry alive)
    and the chain stayed nominal for ``fly_on_seconds``."""
    seconds: float
    """From the fault to the touchdown (or to the end of the run)."""
    down_before: bool = False
    """The drone was on the ground (landed already, or crashed: randomized physics can
    beat the PID) or flipped before the fault: nothing to judge."""
    policy_crash: bool = False
    """It touched down or flipped under the policy with the chain nominal (IMU lost,
    odometry alive): a crash of the policy, not of the fallback."""

    @property
    def judged(self) -> bool:
        """The fallback flew this one (else it says nothing about the fallback)."""
        return not (self.down_before or self.policy_crash)

    @property
    def ok(self) -> bool:
        if not self.judged:
            return True
        if self.flipped:
            return False
        if self.flew_on:
            return True
        return bool(np.isfinite(self.touchdown_speed) and self.touchdown_speed <= TOUCHDOWN_LIMIT)


def _tilt(R: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip(R[2, 2], -1.0, 1.0))))


@dataclass
class _Reading:
    """The drone's true state at the start of a control period."""

    pos: np.ndarray
    quat: np.ndarray
    lin_vel: np.ndarray
    ang_vel: np.ndarray
    R: np.ndarray


def _read(d: Any) -> _Reading:
    """Copy position, attitude and velocities out of the MuJoCo data."""
    from sim2real.sim.core.frames import rotation

    pos, quat = d.qpos[0:3].copy(), d.qpos[3:7].copy()
    return _Reading(pos, quat, d.qvel[0:3].copy(), d.qvel[3:6].copy(), rotation(quat))


def _start_engine(sc: Scenario) -> tuple[Engine, int]:
    """A one-drone hover engine (``sc``'s randomization) with the drone level and at rest
    at the start height, and the address of its touch sensor."""
    import mujoco

    from sim2real.sim import REGISTRY, robot_deployment
    from sim2real.sim.core.engine import Engine
    from sim2real.sim.drone.hover import Hover

    task = REGISTRY.get(robot_deployment(sc.robot).task)(num_envs=1, action_mode="ctbr", start="air")
    assert isinstance(task, Hover)
    engine = Engine(task, dr=getattr(task.dr_class, sc.dr)(), seed=sc.seed, backend="step")
    engine.reset()
    d = engine.data
    d.qpos[:3] = [0.0, 0.0, sc.height]
    d.qpos[3:7] = [1.0, 0.0, 0.0, 0.0]
    d.qvel[:] = 0.0
    d.act[:] = task.airframe.hover_command
    model = engine.models[0]
    mujoco.mj_forward(model, d)
    touch = int(model.sensor_adr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, "touch")])
    return engine, touch


def _streams_alive(fault: str, faulted: bool) -> tuple[bool, bool]:
    """Whether ``odom`` and ``imu`` still write: the ``fault``'s streams stop once ``faulted``."""
    return not (faulted and fault in ("odom", "both")), not (faulted and fault in ("imu", "both"))


def _feed_streams(state: SafetyState, t: float, s: _Reading, prev_vel: np.ndarray, dt: float,
                  odom: bool, imu: bool) -> None:
    """Write the live streams' fields into the chain's state, as the safety-filter node does."""
    from sim2real.sim.core.frames import specific_force

    state.now = t
    if odom:
        state.set(t, base_pos=s.pos, base_quat=s.quat, base_lin_vel=s.lin_vel, base_ang_vel=s.ang_vel)
        state.state_stamp = t
    if imu:
        state.set(t, base_quat=s.quat, base_ang_vel=s.ang_vel,
                  base_lin_acc=specific_force(s.quat, s.lin_vel, prev_vel, dt))


class _Pilot:
    """The policy: the cascaded PID holding a point, or (flight, before the fault) the tilt manoeuvre."""

    def __init__(self, sc: Scenario, space: CommandSpace, rng: np.random.Generator, airframe: Airframe) -> None:
        from sim2real.policies.classical.drone import CascadedPID

        self.sc, self.space, self.airframe = sc, space, airframe
        self.pid = CascadedPID(num_envs=1, dt=space.control_dt, mass=airframe.mass,
                               max_collective_thrust=airframe.max_collective_thrust)
        heading = rng.uniform(-np.pi, np.pi)
        tilt_axis = np.array([-np.sin(heading), np.cos(heading), 0.0])  # pitching toward `heading`
        self.tilt = np.radians(sc.tilt_deg)
        self.want_up = (np.cos(self.tilt) * np.array([0.0, 0.0, 1.0])
                        + np.sin(self.tilt) * np.cross(tilt_axis, [0.0, 0.0, 1.0]))
        self.hover_target = np.array([0.0, 0.0, sc.height])
        self.recover_target: np.ndarray | None = None
        self.fault_at = WARMUP_SECONDS + sc.fault_time

    def runs(self, t: float, odom: bool, faulted: bool) -> bool:
        """Whether the policy commands now: before the fault and, with its odometry alive, after it."""
        # Landing: the policy's commands stop after the warm-up, the fallback lands.
        return (self.sc.phase != "landing" or t <= WARMUP_SECONDS) and (odom or not faulted)

    def command(self, t: float, s: _Reading, faulted: bool) -> np.ndarray:
        """The policy's command for this control period."""
        if self.sc.phase == "flight" and WARMUP_SECONDS < t < self.fault_at:
            rates = 5.0 * (s.R.T @ np.cross(s.R[:, 2], self.want_up))
            return np.array([self.airframe.hover_thrust / max(np.cos(self.tilt), 0.5), rates[0], rates[1], 0.0])
        if faulted and self.recover_target is None:  # after the manoeuvre: hold where it is
            self.recover_target = np.array([s.pos[0], s.pos[1], self.sc.height])
        target = self.hover_target if self.recover_target is None else self.recover_target
        obs = np.concatenate([target - s.pos, s.lin_vel, s.R.reshape(9), s.ang_vel, np.zeros(4)])
        return self.space.action_to_command(self.pid.act(obs[None])[0])


@dataclass
class _Track:
    """What a run records on its way: the state at the fault and what followed it."""

    at_fault: dict[str, Any] = field(default_factory=dict)
    cut_height: float = float("nan")
    max_tilt_after: float = 0.0
    flipped: bool = False
    prev_vz: float = 0.0
    prev_vel: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def note_fault(self, s: _Reading, rest_height: float) -> None:
        """Keep position, tilt and whether the drone was already down, the first time only."""
        if not self.at_fault:
            down = s.pos[2] < rest_height + 0.02 or self.flipped or s.R[2, 2] < 0.0
            self.at_fault = {"pos": s.pos, "tilt": _tilt(s.R), "down": bool(down)}

    def note_after(self, s: _Reading, command: np.ndarray) -> None:
        """Update the largest tilt and the height of the first motor cut after the fault."""
        self.max_tilt_after = max(self.max_tilt_after, _tilt(s.R))
        if command[0] <= 0.0 and not np.isfinite(self.cut_height):
            self.cut_height = float(s.pos[2])

    def outcome(self, sc: Scenario, d: Any, vz: float, touching: bool, mode: str, seconds: float) -> Outcome:
        """The outcome of a run that ended now (``d``: the MuJoCo data after the last step)."""
        at_fault = self.at_fault
        xy = float(np.linalg.norm(d.qpos[:2] - at_fault["pos"][:2]))
        return Outcome(sc, max(-vz, -self.prev_vz, 0.0) if touching else float("nan"), xy, at_fault["tilt"],
                       float(at_fault["pos"][2]), self.cut_height, self.max_tilt_after, self.flipped, mode == "safe",
                       not touching and not self.flipped and mode == "nominal", seconds,
                       down_before=at_fault["down"],
                       policy_crash=(touching or self.flipped) and mode == "nominal")


def run_scenario(sc: Scenario, max_seconds: float = 25.0, fly_on_seconds: float = 5.0,
                 trace: list[dict[str, Any]] | None = None) -> Outcome:
    """Fly one scenario to touchdown (or ``max_seconds`` after the fault; with the policy
    still in control and the chain nominal, ``fly_on_seconds``). ``trace``, if given,
    receives one row per control period (time, position, velocity, tilt, command, mode)."""
    from sim2real.policies.safety import SafetyState, command_space, make_chain
    from sim2real.sim.core.frames import rotation
    from sim2real.sim.drone.base import DroneTask

    rng = np.random.default_rng(sc.seed)
    space = command_space(sc.robot, "ctbr")
    engine, touch = _start_engine(sc)
    assert isinstance(engine.task, DroneTask)
    airframe = engine.task.airframe
    d = engine.data
    dt = space.control_dt
    chain = make_chain(space)
    pilot = _Pilot(sc, space, rng, airframe)
    state = SafetyState(now=0.0)
    track = _Track()
    # Hover first (the fallback learns the thrust it takes meanwhile, as in any flight
    # before a fault); landing: the policy's commands then stop, the fallback lands.
    fault_at = pilot.fault_at
    t = 0.0
    while True:
        t = round(t + dt, 9)
        s = _read(d)
        faulted = t >= fault_at
        if faulted:
            track.note_fault(s, airframe.rest_height)
        odom, imu = _streams_alive(sc.fault, faulted)
        _feed_streams(state, t, s, track.prev_vel, dt, odom, imu)
        policy_runs = pilot.runs(t, odom, faulted)
        if policy_runs:
            chain.accept(pilot.command(t, s, faulted), t)
        out = chain.step(state)
        command = out.command if out.command is not None else np.zeros(4)
        if faulted:
            track.note_after(s, command)
        if trace is not None:
            trace.append({"t": t, "pos": s.pos, "vel": s.lin_vel, "tilt": _tilt(s.R), "command": command.copy(),
                          "mode": out.mode, "faulted": faulted})
        engine.step(space.command_to_action(command)[None])
        vz = float(d.qvel[2])
        track.flipped = track.flipped or rotation(d.qpos[3:7])[2, 2] < 0.0
        touching = d.sensordata[touch] > 0.0 or d.qpos[2] < airframe.rest_height + 0.005
        ended = faulted and (touching or track.flipped or t - fault_at > max_seconds or (
            t - fault_at > fly_on_seconds and out.mode == "nominal" and policy_runs))
        if ended:
            return track.outcome(sc, d, vz, touching, out.mode, t - fault_at)
        track.prev_vz, track.prev_vel = vz, s.lin_vel


def random_scenarios(n: int, seed: int = 0, dr: str = "none", robot: str = "drone") -> list[Scenario]:
    """``n`` scenarios of ``robot`` cycling through every fault x phase, times, tilts
    (flight: 0-30 degrees) and start heights drawn at random."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        fault, phase = FAULTS[i % 3], PHASES[(i // 3) % 3]
        fault_time = {"hover": rng.uniform(0.0, 2.0), "flight": rng.uniform(0.3, 0.8),
                      "landing": rng.uniform(0.0, 7.0)}[phase]
        out.append(Scenario(fault, phase, round(float(fault_time), 3),
                            round(float(rng.uniform(0.0, 30.0)), 1) if phase == "flight" else 0.0,
                            round(float(rng.uniform(0.6, 2.2)), 2), dr, int(rng.integers(1 << 30)), robot))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenarios", type=int, default=270, help="random scenarios (cycling fault x phase)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dr", default="none,train,heldout",
                        help="comma-separated randomization presets, each run over every scenario")
    parser.add_argument("--robot", default="drone", help="a drone-class robot: drone (the Crazyflie) or x500")
    add_json_flag(parser)


def summarize(outcomes: list[Outcome]) -> list[dict[str, Any]]:
    """One row per preset x phase x fault: runs the fallback flew, failures among them,
    runs excluded (crashed before the fault, or by the policy), worst and median
    touchdown speed, drift."""
    rows = []
    for dr, phase, fault in ((d, p, f) for d in dict.fromkeys(o.scenario.dr for o in outcomes)
                             for p in PHASES for f in FAULTS):
        every = [o for o in outcomes if (o.scenario.dr, o.scenario.phase, o.scenario.fault) == (dr, phase, fault)]
        group = [o for o in every if o.judged]
        if group:
            speed = np.array([o.touchdown_speed for o in group])
            drift = np.array([o.drift for o in group])
            rows.append({
                "dr": dr, "phase": phase, "fault": fault, "runs": len(group), "failures": sum(not o.ok for o in group),
                "excluded": len(every) - len(group), "flew_on": sum(o.flew_on for o in group),
                "max_tilt_at_fault_deg": round(max(o.tilt_at_fault_deg for o in group), 1),
                "touchdown_median": round(float(np.nanmedian(speed)), 3) if np.isfinite(speed).any() else None,
                "touchdown_max": round(float(np.nanmax(speed)), 3) if np.isfinite(speed).any() else None,
                "drift_median": round(float(np.median(drift)), 2), "drift_max": round(float(np.max(drift)), 2),
            })
    return rows


def run(args: argparse.Namespace) -> int:
    from rich.progress import track

    from sim2real.errors import ConfigError
    from sim2real.sim import robot_deployment
    from sim2real.sim.drone.deployment import DroneDeployment

    if not isinstance(robot_deployment(args.robot), DroneDeployment):
        raise ConfigError("--robot", f"{args.robot} is not a drone")
    presets = [d.strip() for d in args.dr.split(",") if d.strip()]
    scenarios = [sc for dr in presets for sc in random_scenarios(args.scenarios, args.seed, dr, args.robot)]
    outcomes = [run_scenario(sc) for sc in track(scenarios, description="drone fallback", console=console)]
    rows = summarize(outcomes)
    failures = [asdict(o.scenario) | {"touchdown_speed": o.touchdown_speed, "flipped": bool(o.flipped)}
                for o in outcomes if not o.ok]
    if args.json:
        emit_json({"rows": rows, "failures": failures, "limit": TOUCHDOWN_LIMIT})
        return 0
    from rich.table import Table

    table = Table(title=f"{args.robot} fallback: touchdown speed (limit {TOUCHDOWN_LIMIT} m/s) and drift")
    for col in ("dr", "phase", "fault", "runs", "failures", "excluded", "flew on", "max tilt at fault (deg)",
                "touchdown median / max (m/s)", "drift median / max (m)"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["dr"], r["phase"], r["fault"], str(r["runs"]), str(r["failures"]), str(r["excluded"]),
                      str(r["flew_on"]), str(r["max_tilt_at_fault_deg"]),
                      f"{r['touchdown_median']} / {r['touchdown_max']}", f"{r['drift_median']} / {r['drift_max']}")
    stdout.print(table)
    for f in failures:
        stdout.print(f"FAILED {f}")
    return 0
