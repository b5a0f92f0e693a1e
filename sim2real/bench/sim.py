"""Simulation throughput: our single and batched envs against the raw physics
limit of the same model (``mujoco.rollout`` on all cores, long open-loop
rollouts, no task logic) and against Gymnasium's ``Ant-v5`` as the peer.

All figures come from one run on one machine; compare them as ratios.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

from sim2real.commands.output import add_json_flag, console, emit_json, stdout
from sim2real.sim.core.physics import PHYSICS

HELP = "env steps/s: single env, batched env, raw rollout limit, Ant-v5 peer"

# The representative task per robot (the first task each robot's RL baseline trains).
BENCH_TASKS = {"arm": "ArmReach", "quadruped": "QuadrupedVelocity", "drone": "DroneHover"}


@dataclass
class RobotFigures:
    task: str
    decimation: int
    num_envs: int
    single_env_steps_per_s: float
    single_physics_steps_per_s: float
    batched_env_steps_per_s: float
    raw_limit_env_steps_per_s: float
    batched_vs_raw: float
    single_vs_ant_per_physics_step: float | None = None


def _timed(fn: Callable[[], int], seconds: float) -> float:
    """Calls ``fn`` (which returns how many steps it did) until ``seconds`` pass; steps/s."""
    fn()  # warm-up: first call pays allocation and thread start-up
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        steps += fn()
    return steps / elapsed


def single_env_rate(task: str, seconds: float, seed: int = 0) -> float:
    from sim2real.sim import make

    env = make(task, dr="train", seed=seed)
    env.reset(seed=seed)
    actions = np.random.default_rng(seed).uniform(-1, 1, (256, env.action_space.shape[0]))

    def chunk() -> int:
        for a in actions:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
        return len(actions)

    return _timed(chunk, seconds)


def batched_env_rate(task: str, num_envs: int, seconds: float, seed: int = 0, physics: str = "mujoco") -> float:
    """Env steps/s of the batched env (the warm-up chunk pays Warp's kernel compilation)."""
    from sim2real.sim import make_vec

    env = make_vec(task, num_envs, dr="train", seed=seed, physics=physics)
    try:
        env.reset()
        actions = np.random.default_rng(seed).uniform(-1, 1, (16, num_envs, env.action_space.shape[0]))

        def chunk() -> int:
            for a in actions:
                env.step(a)
            return len(actions) * num_envs

        return _timed(chunk, seconds)
    finally:
        env.close()


def raw_limit_rate(task: str, num_envs: int, seconds: float, seed: int = 0) -> tuple[float, int]:
    """Control steps/s that bare ``mujoco.rollout`` reaches for the same model,
    decimation and batch size: one rollout call of ``decimation`` physics steps
    per control step, the final state fed back as the next initial state (a
    closed loop with no task logic, no observation, no reward), from the task's
    own initial states, with the actuator controls the task maps random actions to."""
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.engine import Engine

    cls = REGISTRY.get(task)
    engine = Engine(cls(num_envs=num_envs), seed=seed, backend="rollout")
    engine.reset()
    model = engine.nominal
    nthread = os.cpu_count() or 1
    datas = [mujoco.MjData(model) for _ in range(nthread)]
    nstep = engine.decimation
    # Controls in the regime the env runs in: the task's own mapping of random actions
    # (through the inner loop once, for tasks that have one), held for the whole step.
    rng = np.random.default_rng(seed)
    sim_task = engine.task
    actions = rng.uniform(-1, 1, (num_envs, engine.act_size))
    ctrl_now = sim_task.action_to_ctrl(actions, engine.phys)
    if sim_task.inner_dt is not None:
        ctrl_now = sim_task.inner_control(ctrl_now, engine.phys)
    ctrl = np.repeat(np.asarray(ctrl_now, dtype=np.float64)[:, None, :], nstep, axis=1)
    state = engine.state.copy()
    start_state = state.copy()
    pool = mj_rollout.Rollout(nthread=nthread)
    out_state = np.zeros((num_envs, nstep, engine.nstate))
    out_sens = np.zeros((num_envs, nstep, model.nsensordata))
    models = engine.models  # one model copy per env, as the env has (randomization needs them)
    calls_per_chunk = 20

    def chunk() -> int:
        state[:] = start_state  # restart from the initial states so the robots stay in a realistic regime
        for _ in range(calls_per_chunk):
            pool.rollout(
                models, datas, state, ctrl, nstep=nstep, state=out_state, sensordata=out_sens, skip_checks=True
            )
            state[:] = out_state[:, -1]
        return num_envs * calls_per_chunk

    return _timed(chunk, seconds), engine.decimation


def ant_rate(seconds: float, seed: int = 0) -> tuple[float, int]:
    """Gymnasium Ant-v5 env steps/s (and its frame skip) with random actions."""
    import gymnasium as gym
    from gymnasium.envs.mujoco.mujoco_env import MujocoEnv

    env = gym.make("Ant-v5")
    env.reset(seed=seed)
    assert isinstance(env.action_space, gym.spaces.Box)
    actions = np.random.default_rng(seed).uniform(-1, 1, (256, env.action_space.shape[0]))

    def chunk() -> int:
        for a in actions:
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
        return len(actions)

    ant = env.unwrapped
    assert isinstance(ant, MujocoEnv)
    return _timed(chunk, seconds), ant.frame_skip


def run_sim_bench(
    seconds: float = 3.0,
    num_envs: int = 64,
    robots: list[str] | None = None,
    progress: Callable[[str], None] = lambda s: None,
) -> dict:
    """Measure every robot and the peer; returns the JSON-ready report."""
    figures: dict[str, dict] = {}
    progress("Gymnasium Ant-v5 (peer)")
    ant_steps, ant_skip = ant_rate(seconds)
    ant_physics = ant_steps * ant_skip
    for robot in robots or list(BENCH_TASKS):
        task = BENCH_TASKS[robot]
        progress(f"{robot}: raw rollout limit")
        raw, decimation = raw_limit_rate(task, num_envs, seconds)
        progress(f"{robot}: single env")
        single = single_env_rate(task, seconds)
        progress(f"{robot}: batched env x{num_envs}")
        batched = batched_env_rate(task, num_envs, seconds)
        f = RobotFigures(
            task=task,
            decimation=decimation,
            num_envs=num_envs,
            single_env_steps_per_s=round(single, 1),
            single_physics_steps_per_s=round(single * decimation, 1),
            batched_env_steps_per_s=round(batched, 1),
            raw_limit_env_steps_per_s=round(raw, 1),
            batched_vs_raw=round(batched / raw, 3),
            single_vs_ant_per_physics_step=round(single * decimation / ant_physics, 3),
        )
        figures[robot] = asdict(f)
    return {
        "benchmark": "sim",
        "cpu_count": os.cpu_count(),
        "mujoco": mujoco.__version__,
        "seconds_per_measurement": seconds,
        "peer": {
            "env": "Ant-v5",
            "env_steps_per_s": round(ant_steps, 1),
            "frame_skip": ant_skip,
            "physics_steps_per_s": round(ant_physics, 1),
        },
        "robots": figures,
        "targets": {"quadruped_batched_vs_raw": 0.6, "quadruped_single_vs_ant_per_physics_step": 2.0},
    }


# -- command line (`sim2real bench sim`) ---------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=3.0, help="measurement window per figure")
    p.add_argument("--num-envs", type=int, default=64, help="batch size of the batched env and the raw limit")
    p.add_argument(
        "--robot", action="append", choices=["arm", "quadruped", "drone"], help="robot(s) to measure (default: all)"
    )
    p.add_argument("--backend", choices=list(PHYSICS), default="mujoco",
                   help="warp: batched env steps/s of MuJoCo Warp against CPU MuJoCo, in one run")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    from rich.table import Table

    if args.backend != "mujoco":
        return _run_backends(args)
    with console.status("benchmarking") as status:
        report = run_sim_bench(args.seconds, args.num_envs, args.robot, progress=lambda s: status.update(s))
    if args.json:
        emit_json(report)
        return 0
    peer = report["peer"]
    table = Table(title=f"Simulation throughput ({report['cpu_count']} cores, MuJoCo {report['mujoco']})")
    for col in (
        "robot / task",
        "decimation",
        "single env steps/s",
        "batched steps/s",
        "raw limit steps/s",
        "batched / raw",
        "single vs Ant-v5 (per physics step)",
    ):
        table.add_column(col)
    for robot, f in report["robots"].items():
        table.add_row(
            f"{robot} / {f['task']}",
            str(f["decimation"]),
            f"{f['single_env_steps_per_s']:,.0f}",
            f"{f['batched_env_steps_per_s']:,.0f}",
            f"{f['raw_limit_env_steps_per_s']:,.0f}",
            f"{f['batched_vs_raw']:.2f}",
            f"{f['single_vs_ant_per_physics_step']:.2f}x",
        )
    stdout.print(table)
    stdout.print(
        f"peer Ant-v5: {peer['env_steps_per_s']:,.0f} env steps/s = {peer['physics_steps_per_s']:,.0f} physics steps/s"
    )
    return 0


def _run_backends(args: argparse.Namespace) -> int:
    from rich.table import Table

    from sim2real.bench.sim_backends import run_backend_bench

    with console.status("benchmarking") as status:
        report = run_backend_bench(args.seconds, args.num_envs, args.robot, args.backend,
                                   progress=lambda s: status.update(s))
    if args.json:
        emit_json(report)
        return 0
    b = args.backend
    table = Table(title=f"Batched env steps/s: {b} on {report['device']} vs CPU MuJoCo ({report['cpu_count']} cores)")
    for col in ("robot / task", "envs", "CPU MuJoCo", b, f"{b} / CPU MuJoCo"):
        table.add_column(col)
    for robot, f in report["robots"].items():
        table.add_row(f"{robot} / {f['task']}", str(f["num_envs"]), f"{f['mujoco_env_steps_per_s']:,.0f}",
                      f"{f[f'{b}_env_steps_per_s']:,.0f}", f"{f[f'{b}_vs_mujoco']:.3f}")
    stdout.print(table)
    return 0
