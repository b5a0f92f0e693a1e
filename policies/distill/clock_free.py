"""A clock-free copy of a gait_residual quadruped policy, for runtimes that have no gait clock.

Our walking quadruped policies act around a trot reference: the servo target is
``default + reference(phase, command) + 0.3 * action`` and the observation carries the
phase as ``gait_clock``. rl_sar, unitree_rl_gym's deploy scripts and Isaac Lab's
exports have no such clock: their policies map the measured state (and a few past
frames of it) straight to joint targets. This module distills a teacher of the first
kind into a student of the second, by DART (Laskey et al., 2017: the teacher acts with
injected noise, so its data covers the states a slightly wrong student reaches):

* the student sees what the ``joint_pos`` task shows (no clock; its own last action)
  plus a history of ``history_steps`` whole past frames, from which the gait's phase
  can be read (which legs are swinging);
* the teacher acts in its own simulator (``gait_residual``, its residual range widened
  to 2 rad so no target is cut), its joint target plus noise passed through as the
  residual that produces it, and labels each state with its target in the student's
  action units. Not DAgger on the student's own states: the teacher's clock runs on
  its own, and once a student's legs fall out of step with it the labels contradict
  the state (measured: a DAgger student that stood still at every command);
* the teacher's gait clock waits at phase 0 while the robot stands (a standstill shows
  no phase), so every gait starts the same way and the student can learn to start one.

Latency randomization is off while collecting (the conversion between the two action
forms holds only for the action of the same step); the student is evaluated with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from sim2real.sim.quadruped import constants as c

TEACHER_BLOCKS = 36
"""base_lin_vel, base_ang_vel, projected_gravity, command, joint_pos, joint_vel: the
observation blocks both forms share, in order, before last_action."""
HISTORY_BLOCKS = ["base_lin_vel", "base_ang_vel", "projected_gravity", "command", "joint_pos", "joint_vel",
                  "last_action"]
"""The student's history holds whole frames (what rl_sar and HIMLoco stack)."""
WIDE_RESIDUAL = 2.0
STUDENT_SCALE = 1.0
"""The student's joint_pos action scale (rad): the teacher's targets reach 0.71 rad from
the default pose (13 % of them beyond the task's default 0.5; none beyond 1)."""


@dataclass
class ClockFreeConfig:
    """Settings of :func:`distill_clock_free`."""

    teacher: str
    """The gait_residual QuadrupedVelocity policy to copy (an exported folder)."""
    history_steps: int = 3
    """Past frames the student reads besides the present one."""
    n_envs: int = 64
    """Environments stepped together while collecting."""
    rollout_steps: int = 250
    """Control steps per iteration and environment (5 s)."""
    iterations: int = 12
    """Collection rounds, each followed by training on everything collected so far."""
    epochs: int = 8
    """Passes over the aggregated data per iteration."""
    batch_size: int = 4096
    learning_rate: float = 1e-3
    hidden: tuple[int, ...] = (512, 256, 128)
    """The student MLP's layers (ELU)."""
    noise_std: float = 0.15
    """Largest Gaussian noise on the teacher's actions while collecting (rad; each env
    draws its own level per iteration)."""
    instant_start: bool = True
    """Start and stop the teacher's reference in one control step instead of its 0.25 s
    blend: during a blend the robot barely moves while the labels grow, so a student sees
    the same standstill labelled "stand" and "step"; measured, it then never started."""
    seed: int = 0


class ClockFreeStudent(nn.Module):
    """Normalized observation -> MLP -> action in [-1, 1]."""

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, obs_size: int, hidden: tuple[int, ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        size = obs_size
        for width in hidden:
            layers += [nn.Linear(size, width), nn.ELU()]
            size = width
        self.net = nn.Sequential(*layers, nn.Linear(size, c.NUM_JOINTS))
        self.register_buffer("mean", torch.zeros(obs_size))
        self.register_buffer("std", torch.ones(obs_size))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp(self.net((obs - self.mean) / self.std), -1.0, 1.0)


def student_options(teacher_options: dict[str, Any], history_steps: int) -> dict[str, Any]:
    """The student's task options: the teacher's, with the student's action scale and a
    history of whole frames."""
    options = {k: v for k, v in teacher_options.items() if k != "action_scale"}
    return {**options, "action_scale": STUDENT_SCALE, "history_steps": history_steps,
            "history_blocks": list(HISTORY_BLOCKS)}


def distill_clock_free(cfg: ClockFreeConfig, log: Any = print) -> tuple[ClockFreeStudent, dict[str, Any]]:
    """Train the student; returns it and its task options."""
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.sim.core.engine import Engine
    from sim2real.sim.core.env import resolve_dr
    from sim2real.sim.core.registry import REGISTRY
    from sim2real.sim.quadruped.base import QuadrupedTask

    teacher = OnnxPolicy(cfg.teacher)
    if teacher.action_mode != "gait_residual" or "QuadrupedVelocity" not in teacher.task:
        raise ValueError(f"{cfg.teacher} is a {teacher.task} {teacher.action_mode} policy, not a gait_residual "
                         "QuadrupedVelocity one")
    t_opts = dict(teacher.metadata.get("task_options") or {})
    t_scale = float(t_opts.get("action_scale", c.ACTION_SCALE))
    task_cls = REGISTRY.get(teacher.task)
    task = task_cls(num_envs=cfg.n_envs, action_mode="gait_residual",
                    **{**t_opts, "action_scale": WIDE_RESIDUAL})
    assert isinstance(task, QuadrupedTask)
    dr = resolve_dr(task_cls, "train")
    dr.latency_steps = (0, 0)
    eng = Engine(task, dr, seed=cfg.seed)
    assert task.gait is not None  # the gait_residual mode keeps the reference
    if cfg.instant_start:
        task.gait.blend_rate = 1.0 / task_cls.control_dt
    rng = np.random.default_rng(cfg.seed)
    torch.manual_seed(cfg.seed)
    n, h, frame = cfg.n_envs, cfg.history_steps, TEACHER_BLOCKS + c.NUM_JOINTS
    student = ClockFreeStudent(frame * (h + 1), cfg.hidden)
    optimizer = torch.optim.Adam(student.parameters(), lr=cfg.learning_rate)
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    eng.reset()
    obs = eng.observe()
    last_action = np.zeros((n, c.NUM_JOINTS))  # the student's, in joint_pos units (0 after a reset)
    last_residual = np.zeros((n, c.NUM_JOINTS))  # the same target as the teacher's residual
    history = np.repeat(np.concatenate([obs[:, :TEACHER_BLOCKS], last_action], 1)[:, None], h, axis=1)
    for it in range(cfg.iterations):
        falls = 0
        noise_std = rng.uniform(0.0, cfg.noise_std, n)  # per env: near and far from the teacher's own states
        for _ in range(cfg.rollout_steps):
            gait = task.gait
            assert gait is not None  # the gait_residual mode keeps the reference
            # A standing robot shows no phase: the clock waits at 0 until stepping starts, so
            # the student can learn how the teacher starts a gait from a standstill.
            gait.phase[gait.amplitude == 0.0] = 0.0
            offsets = gait.joint_offsets(task.reference_twist(), task.reference_crouch())
            present = np.concatenate([obs[:, :TEACHER_BLOCKS], last_action], 1)
            x = np.concatenate([present, history.reshape(n, -1)], 1).astype(np.float32)
            t_in = np.concatenate([obs[:, :TEACHER_BLOCKS], last_residual, gait.clock()], 1).astype(np.float32)
            target = t_scale * np.asarray(teacher(t_in)) + offsets  # relative to the default pose
            label = np.clip(target / STUDENT_SCALE, -1.0, 1.0)
            xs.append(x)
            ys.append(label.astype(np.float32))
            action = np.clip(label + noise_std[:, None] * rng.standard_normal(label.shape), -1.0, 1.0)
            out = eng.step((STUDENT_SCALE * action - offsets) / WIDE_RESIDUAL)
            last_action = action
            last_residual = np.clip((STUDENT_SCALE * action - offsets) / t_scale, -1.0, 1.0)
            history = np.concatenate([present[:, None], history[:, :-1]], 1)
            obs = out.obs
            done = np.flatnonzero(out.result.terminated | out.truncated)
            falls += int(out.result.terminated.sum())
            if len(done):
                eng.reset(done)
                obs = eng.observe()
                last_action[done] = 0.0
                last_residual[done] = 0.0
                fresh = np.concatenate([obs[done, :TEACHER_BLOCKS], last_action[done]], 1)
                history[done] = fresh[:, None]
        loss = _fit(student, optimizer, np.concatenate(xs), np.concatenate(ys), cfg, refresh_stats=it == 0)
        log(f"iteration {it + 1}/{cfg.iterations}: {falls} falls, {sum(len(x) for x in xs)} labelled states, "
            f"loss {loss:.4f}")
    return student.eval(), student_options(t_opts, h)


def _fit(student: ClockFreeStudent, optimizer: torch.optim.Optimizer, x: np.ndarray, y: np.ndarray,
         cfg: ClockFreeConfig, refresh_stats: bool) -> float:
    if refresh_stats:  # normalization from the teacher's own states, fixed afterwards
        student.mean.copy_(torch.as_tensor(x.mean(0)))
        student.std.copy_(torch.as_tensor(x.std(0) + 1e-3))
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    losses = []
    for _ in range(cfg.epochs):
        order = torch.randperm(len(xt))
        for start in range(0, len(order), cfg.batch_size):
            idx = order[start:start + cfg.batch_size]
            loss = nn.functional.mse_loss(student(xt[idx]), yt[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
    return float(np.mean(losses[-20:]))


def export_student(student: ClockFreeStudent, options: dict[str, Any], out: Path, training: dict[str, Any]
                   ) -> Path:
    """``out/policy.onnx`` and its metadata: a QuadrupedVelocity joint_pos policy."""
    import json

    from sim2real.policies.common.checkpoint import sha256_file
    from sim2real.policies.common.envs import task_class, task_description
    from sim2real.policies.export.metadata import build_metadata
    from sim2real.policies.export.onnx import export_onnx, parity
    from sim2real.policies.importers.writer import recorded_observations
    from sim2real.sim.quadruped.base import QuadrupedTask

    task_cls = task_class("QuadrupedVelocity")
    state = {**task_description(task_cls, "joint_pos", options), "algo": "distill:clock_free"}
    out.mkdir(parents=True, exist_ok=True)
    path = out / "policy.onnx"
    export_onnx(student, int(state["obs_size"]), path)
    def act(obs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return student(torch.as_tensor(obs)).numpy()

    obs = recorded_observations(act, options, steps=50)  # QuadrupedVelocity, joint_pos, the train preset
    diff = parity(student, path, obs)
    task = task_cls(num_envs=1, action_mode="joint_pos", **options)
    assert isinstance(task, QuadrupedTask)
    meta = build_metadata(
        fmt="onnx", file=path.name, sha256=sha256_file(path), state=state,
        normalization={"enabled": True, "formula": "(obs - mean) / sqrt(var + epsilon), from the teacher's states",
                       "mean": student.mean.tolist(), "var": (student.std ** 2).tolist(), "epsilon": 0.0},
        action_scaling=task.action_scaling(), training=training,
        verification={"max_abs_diff": diff, "samples": int(len(obs))}, task_options=options)
    (out / "policy.onnx.json").write_text(json.dumps(meta, indent=1))
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m sim2real.policies.distill.clock_free --out FOLDER``: distill, export,
    and evaluate the student (100 paired episodes on the training and held-out presets,
    next to its teacher) into FOLDER/metrics.json."""
    import argparse
    import dataclasses
    import json
    import time

    from sim2real.policies import BASELINES_DIR
    from sim2real.policies.common.evaluation import Evaluator
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.sim.core.registry import REGISTRY

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", default=str(BASELINES_DIR / "QuadrupedVelocity"))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--iterations", type=int, default=ClockFreeConfig.iterations)
    parser.add_argument("--history-steps", type=int, default=ClockFreeConfig.history_steps)
    parser.add_argument("--noise-std", type=float, default=ClockFreeConfig.noise_std)
    parser.add_argument("--blend", action="store_true", help="keep the reference's 0.25 s start and stop blend")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episodes", type=int, default=100, help="evaluation episodes per preset")
    args = parser.parse_args(argv)
    cfg = ClockFreeConfig(teacher=args.teacher, iterations=args.iterations, history_steps=args.history_steps,
                          noise_std=args.noise_std, instant_start=not args.blend, seed=args.seed)
    t0 = time.perf_counter()
    student, options = distill_clock_free(cfg)
    wall = time.perf_counter() - t0
    export_student(student, options, args.out, {"config": dataclasses.asdict(cfg), "train_wall_s": round(wall, 1)})
    policy, teacher = OnnxPolicy(args.out), OnnxPolicy(cfg.teacher)
    task_cls = REGISTRY.get(policy.task)
    import sys

    command = "python -m sim2real.policies.distill.clock_free " + " ".join(sys.argv[1:] if argv is None else argv)
    metrics: dict[str, Any] = {"command": command, "train_wall_s": round(wall, 1), "config": dataclasses.asdict(cfg)}
    for preset in ("train", "heldout"):
        for name, pol in (("student", policy), ("teacher", teacher)):
            ev = Evaluator(task_cls, 25, pol.action_mode, preset, seed=10_000,
                           task_options=dict(pol.metadata.get("task_options") or {}))
            r = ev.run(pol, args.episodes)
            metrics[f"{name}_{preset}"] = {"success_rate": r.success_rate, "ci": [r.ci_low, r.ci_high],
                                           "metrics_final": r.metrics_final}
            print(f"{name} on {preset}: {r.success_rate:.0%} [{r.ci_low:.2f}, {r.ci_high:.2f}]")
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
