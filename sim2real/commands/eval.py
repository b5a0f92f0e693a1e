"""Evaluate a trained policy: success rate with a Wilson confidence interval (95 percent), return, task metrics.

RUN_OR_POLICY is a run folder (its best checkpoint, else its last), a checkpoint
folder, or an exported ONNX policy (file, metadata JSON or export folder), which
runs with onnxruntime and never imports torch.

--workers N splits the episodes over N Ray actors (a local Ray instance, or the
cluster --ray HOST:PORT names), each with its own batched simulation of its share of
the --n-envs environments and its own copy of the policy, loaded from the file. Each
environment runs the same episodes with the same seeds (noise, pushes and commands
inside an episode included) as in one process, so the numbers are identical to one
process with the same --n-envs and --seed. --video is recorded here.

Examples:
  sim2real eval runs/reach-sac --episodes 100 --dr heldout
  sim2real eval runs/reach-sac/export/policy.onnx --video reach.mp4 --json
  sim2real eval runs/maze-lag --passivity-filter          # arm ee_impedance: energy tank filter on
  sim2real eval policies/baselines/ArmReach --episodes 1000 --n-envs 32 --workers 4
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import Any, get_args

from sim2real.commands.base_velocity import add_base_velocity_flag, base_velocity_options
from sim2real.commands.output import add_json_flag, console, emit_json, stdout
from sim2real.policies.common import cluster
from sim2real.policies.common.cluster import add_ray_flag
from sim2real.policies.config import Physics


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="RUN_OR_POLICY", type=Path, help="run folder or exported .onnx policy")
    parser.add_argument("--episodes", type=int, default=50, help="evaluation episodes")
    parser.add_argument("--dr", default="train", metavar="PRESET",
                        help="randomization: train, heldout, none, or a YAML file of field values over the training "
                             "preset (sim2real sysid's fitted.yaml)")
    parser.add_argument("--video", type=Path, help="also write an mp4 from the task camera")
    parser.add_argument("--video-episodes", type=int, default=1, help="episodes in the video")
    parser.add_argument(
        "--deterministic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="use the mean action (default); --no-deterministic samples (checkpoints only)",
    )
    parser.add_argument("--checkpoint", choices=["auto", "best", "last"], default="auto", help="run folders only")
    parser.add_argument("--seed", type=int, default=10_000, help="seed of the evaluation environments")
    parser.add_argument(
        "--passivity-filter",
        action="store_true",
        help="arm ee_impedance policies: evaluate with the energy-tank passivity filter in the controller",
    )
    add_base_velocity_flag(parser)
    parser.add_argument("--n-envs", type=int, default=8,
                        help="environments stepped as one batch (with --workers: in all, split over the workers)")
    parser.add_argument("--backend", choices=list(get_args(Physics)), default="mujoco",
                        help="physics: CPU MuJoCo (default) or MuJoCo Warp (docs/warp_backend.md); --video always "
                             "renders from CPU MuJoCo")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="split the episodes over N Ray actors, each with its own batched simulation "
                             "(default 1: in this process)")
    add_ray_flag(parser, "the --workers (default with --workers: a local Ray instance)")
    add_json_flag(parser)


def is_onnx_source(path: Path) -> bool:
    """An exported policy (file, metadata or export folder, such as a shipped baseline's
    with its config.yaml beside it) rather than a run folder (which has checkpoints)."""
    if path.suffix in (".onnx", ".json"):
        return True
    return path.is_dir() and (path / "policy.onnx").is_file() and not (path / "checkpoints").is_dir()


def load_policy(source: Path, deterministic: bool = True, checkpoint: str = "auto") -> Any:
    """The policy callable alone: what an ``--workers`` actor loads from the file where it runs."""
    namespace = argparse.Namespace(source=source, deterministic=deterministic, checkpoint=checkpoint)
    return load_source(namespace)[0]


def load_source(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The policy callable and a description of where it came from."""
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.errors import ConfigError

    if is_onnx_source(args.source):
        from sim2real.policies.deploy import OnnxPolicy

        if not args.deterministic:
            raise ConfigError("--no-deterministic", "an exported ONNX policy is deterministic; evaluate the run folder")
        policy = OnnxPolicy(args.source)
        m = policy.metadata
        task_cls = REGISTRY.get(m["task"])
        policy.require_robot(task_cls.robot)
        return policy, {
            "source": str(policy.path),
            "kind": "onnx",
            "task_cls": task_cls,
            "action_mode": m["action_mode"],
            "task_options": m.get("task_options") or {},
            "step": m["training"].get("step"),
        }
    from sim2real.policies.loading import load_run

    loaded = load_run(args.source, args.checkpoint)
    return loaded.policy(args.deterministic), {
        "source": str(loaded.folder),
        "kind": f"checkpoint ({loaded.kind})",
        "task_cls": loaded.task_cls,
        "action_mode": loaded.state["action_mode"],
        "task_options": loaded.config.task_options,
        "step": loaded.step,
    }


def run(args: argparse.Namespace) -> int:
    from sim2real.policies.common.evaluation import Evaluator
    from sim2real.policies.common.video import record_video
    from sim2real.sim.core.errors import ConfigError
    from sim2real.sim.core.registry import gym_id

    if args.episodes < 1 or args.n_envs < 1 or args.workers < 1:
        raise ConfigError("--episodes", "--episodes, --n-envs and --workers must be >= 1")
    policy, src = load_source(args)
    task_cls = src.pop("task_cls")
    options = dict(src["task_options"])
    if args.passivity_filter:
        options["passivity_filter"] = True  # the task refuses it outside ee_impedance
    options.update(base_velocity_options(args) or {})  # another robot's task refuses it
    src["task_options"] = options
    common = {"action_mode": src["action_mode"], "dr": args.dr, "task_options": options}
    video_options = dict(common)  # the video is rendered from one CPU MuJoCo env
    common["physics"] = args.backend
    n_envs = min(args.n_envs, args.episodes)
    distributed = args.workers > 1 or args.ray is not None
    with console.status(f"evaluating {args.episodes} episodes of {gym_id(task_cls)}"
                        + (f" on {min(args.workers, n_envs)} Ray workers" if distributed else "")):
        if distributed:
            from sim2real.policies.common import distributed_eval

            loader = functools.partial(load_policy, Path(src["source"]), args.deterministic, args.checkpoint)
            result = distributed_eval.evaluate(loader, task_cls, args.episodes, n_envs, args.workers,
                                               args.ray or cluster.LOCAL, seed=args.seed, **common)
        else:
            result = Evaluator(task_cls, n_envs=n_envs, seed=args.seed, **common).run(policy, args.episodes)
    video = None
    if args.video:
        with console.status(f"recording {args.video}"):
            record_video(policy, task_cls, args.video, episodes=args.video_episodes, seed=args.seed, **video_options)
        video = str(args.video)
    report = {
        **src,
        "task": gym_id(task_cls),
        "dr": args.dr,
        "backend": args.backend,
        "deterministic": args.deterministic,
        "seed": args.seed,
        "n_envs": n_envs,
        "workers": min(args.workers, n_envs) if distributed else 1,
        **result.to_dict(),
        "video": video,
    }
    if args.json:
        emit_json(report)
        return 0
    _print(report)
    return 0


def _print(r: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"{r['task']} ({r['kind']}, step {r['step']}, dr {r['dr']})")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("success rate", f"{r['success_rate']:.1%} [{r['ci_low']:.1%}, {r['ci_high']:.1%}] (95% Wilson)")
    table.add_row("episodes", f"{r['successes']}/{r['episodes']} successful")
    table.add_row("mean return", f"{r['mean_return']:.4g} ± {r['std_return']:.3g}")
    table.add_row("mean length", f"{r['mean_length']:.1f} steps")
    for k, v in r["metrics_final"].items():
        table.add_row(f"{k} (final)", f"{v:.4g}")
    for k, v in r["metrics_mean"].items():
        table.add_row(f"{k} (episode mean)", f"{v:.4g}")
    if r["video"]:
        table.add_row("video", r["video"])
    stdout.print(table)
