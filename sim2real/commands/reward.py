"""Vision-language (CLIP) rewards: train a small local CLIP model on simulator
renders, and measure how well a CLIP reward agrees with the task's ground truth.

Examples:
  sim2real reward finetune-clip ArmReach --out models/clip-reach --steps 1200 --batch-size 96   # ~17 min, 2 CPU cores
  sim2real reward eval ArmReach --clip-weights models/clip-reach --include-untrained --plot reach.png
  sim2real reward eval ArmReach --prompt "the gripper touches the green ball" \\
      --baseline "the gripper is very far from the green ball" --clip-weights models/clip-reach --json
  sim2real reward eval ArmReach --clip-weights models/clip-reach --audit-sheet fooled.png   # quality report
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.output import add_json_flag, console, emit_json, stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ft = sub.add_parser("finetune-clip", help="train a small open_clip model on captioned renders of tasks")
    ft.add_argument("tasks", nargs="+", help="captioned task(s), e.g. ArmReach DroneHover")
    ft.add_argument("--out", type=Path, required=True, help="output folder (open_clip local-dir layout)")
    ft.add_argument("--frames", type=int, default=6000, help="rendered frames per task (default 6000)")
    ft.add_argument(
        "--steps",
        type=int,
        default=1500,
        help="optimizer steps (default 1500; 0 saves the initial model untrained: a control reward model "
        "with the same architecture, camera and frame size)",
    )
    ft.add_argument(
        "--decoy-fraction",
        type=float,
        help="share of the scripted reach episodes driven to a random workspace point instead of the target, "
        "so the model sees the arm everywhere (default 0.3; 0: only toward the target, as models before v9)",
    )
    ft.add_argument("--hard-negatives", action="store_true",
                    help="send decoy episodes where reward models were fooled: 30 %% along a fixed reward camera's "
                         "ray in front of the target, 30 %% 4-8 cm near misses, 40 %% anywhere (default: anywhere)")
    ft.add_argument("--batch-size", type=int, default=128)
    ft.add_argument("--lr", type=float, default=1e-3)
    ft.add_argument(
        "--size",
        type=int,
        help="rendered frame size in pixels (default: the --init model's, else the model's input size)",
    )
    ft.add_argument(
        "--camera",
        help="camera, or several joined by + and stacked in one frame (default: the one the --init model was trained "
        "on, else reach_view+wrist for ArmReach, wrist for other arm tasks, else the task's camera)",
    )
    ft.add_argument("--init", help="local CLIP weights (folder or file) to fine-tune instead of training from scratch")
    ft.add_argument(
        "--policy",
        help="a run folder: also render the states its (stochastic) policy visits, so the reward model learns the "
        "states an RL policy drives it into, not only the scripted controller's",
    )
    ft.add_argument("--policy-frames", type=int, default=4000, help="frames from --policy per task (default 4000)")
    ft.add_argument("--model", default=None, help="open_clip architecture (default sim2real-tiny-vit-96)")
    ft.add_argument(
        "--ordinal-smoothing",
        type=float,
        default=1.0,
        help="soft image-to-caption targets, temperature in caption ranks (0: one-hot; default 1)",
    )
    ft.add_argument("--seed", type=int, default=0)
    ft.add_argument("--n-envs", type=int, default=16)
    add_json_flag(ft)

    ev = sub.add_parser("eval", help="correlation of a CLIP reward with ground-truth success on held-out rollouts")
    ev.add_argument("task")
    ev.add_argument(
        "--prompt", action="append", help="goal prompt (repeat for several; default: the task's goal caption)"
    )
    ev.add_argument("--baseline", action="append", help="baseline prompt (repeat for several)")
    ev.add_argument(
        "--clip-weights", action="append", required=True, help="local weights folder or file (repeat to compare)"
    )
    ev.add_argument("--clip-model", help="open_clip architecture of a weight file")
    ev.add_argument(
        "--include-untrained",
        action="store_true",
        help="also evaluate a randomly initialised model (the state before training)",
    )
    ev.add_argument("--frames", type=int, default=3000, help="held-out frames to render (default 3000)")
    ev.add_argument("--camera")
    ev.add_argument("--seed", type=int, default=12345, help="seed of the held-out rollouts (differs from training's)")
    ev.add_argument(
        "--decoy-fraction", type=float, default=0.0,
        help="share of the held-out scripted reach episodes driven to a random workspace point instead of the "
        "target: failures of every kind for the hacking audit (default 0)",
    )
    ev.add_argument("--hard-negatives", action="store_true",
                    help="the held-out decoys by kind as finetune-clip --hard-negatives draws them")
    ev.add_argument("--plot", type=Path, help="PNG of the reward along held-out episodes")
    ev.add_argument(
        "--policy",
        help="a run folder: also evaluate on the states its (stochastic) policy visits, where RL would exploit "
        "the reward's mistakes (reported as policy_states)",
    )
    ev.add_argument(
        "--quality-alpha", type=float, default=0.5,
        help="alpha of the quality report: value-order correlation, success detection, hacking audit (default 0.5)",
    )
    ev.add_argument(
        "--negative-ratio", type=float, default=3.0,
        help="failed frames kept per success frame in success detection, drawn with --seed (default 3)",
    )
    ev.add_argument(
        "--audit-sheet", type=Path,
        help="PNG of each model's highest-scored failed frames, with their failure kind, distance and score",
    )
    add_json_flag(ev)


def run(args: argparse.Namespace) -> int:
    if args.action == "finetune-clip":
        return _finetune(args)
    return _eval(args)


def _finetune(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from sim2real.policies.rewards.captions import captioner
    from sim2real.policies.rewards.clip_reward import TINY_MODEL, ClipRewardModel
    from sim2real.policies.rewards.dataset import DECOY_FRACTION
    from sim2real.policies.rewards.finetune import (
        FinetuneConfig,
        caption_accuracy,
        describe_config,
        model_config_of,
        model_image_size,
        save_model,
        train_clip,
    )
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    torch.set_num_threads(1)
    for task in args.tasks:
        captioner(task)  # fail before rendering anything when a task has no captions
    model_name = args.model or TINY_MODEL
    model_cfg = model_config_of(model_name) if args.init is None else _config_of_init(args.init, model_name)
    decoy_fraction = DECOY_FRACTION if args.decoy_fraction is None else args.decoy_fraction
    sets, cameras, size = _render_frames(args, model_image_size(model_cfg), decoy_fraction)
    train_set, held_set = _hold_out_last_episodes(sets)
    cfg = FinetuneConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        seed=args.seed,
        model=model_name,
        init=args.init,
        ordinal_smoothing=args.ordinal_smoothing,
    )
    model, tokenizer, stats = train_clip(train_set, cfg, log=console.print)
    captions = stats["captions"]
    probe = ClipRewardModel(model, tokenizer, captions[0], captions[-1], alpha=0.0)
    accuracy = {
        "train": caption_accuracy(probe, train_set.subset(np.arange(len(train_set)) < 2000), captions),
        "heldout": caption_accuracy(probe, held_set, captions),
    }
    metadata = {
        "tasks": [gym_id(REGISTRY.get(t)) for t in args.tasks],
        "cameras": cameras,
        "image_size": size,
        "decoy_fraction": decoy_fraction,
        "decoy_mix": _decoy_mix(args),
        "policy": None if not args.policy else {"run": str(args.policy), "frames": args.policy_frames},
        "frames": {"train": len(train_set), "heldout": len(held_set)},
        "caption_counts": {c: int(sum(1 for x in train_set.captions if x == c)) for c in captions},
        "caption_accuracy": accuracy,
        "training": {**describe_config(cfg), **stats},
    }
    save_model(model, args.out, model_cfg, metadata)
    if args.json:
        emit_json({"out": str(args.out), **metadata})
    else:
        done = (
            f"kept {cfg.init or cfg.model} untrained (a control)"
            if cfg.steps == 0
            else f"trained {cfg.model} for {cfg.steps} steps in {stats['seconds']:.0f} s on {len(train_set)} frames"
        )
        stdout.print(
            f"{done}; "
            f"caption accuracy {accuracy['train']:.0%} train, {accuracy['heldout']:.0%} held-out; saved {args.out}"
        )
    return 0


def _decoy_mix(args: argparse.Namespace) -> dict[str, float] | None:
    """The decoy kinds' shares ``--hard-negatives`` asks for (None: anywhere in the workspace)."""
    from sim2real.policies.rewards.hard_negatives import HARD_MIX

    return dict(HARD_MIX) if args.hard_negatives else None


def _render_frames(args: argparse.Namespace, model_size: int, decoy_fraction: float):
    """The captioned frames of every task (and of the ``--policy`` run's own states):
    the frame sets, the camera per task id, and the frame size."""
    from sim2real.errors import ConfigError
    from sim2real.policies.rewards.dataset import collect_frames, policy_frames
    from sim2real.policies.rewards.training import frame_settings
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    sets, cameras, size = [], {}, 0
    for i, task in enumerate(args.tasks):
        # Fine-tuning keeps the camera and frame size the --init model was trained on.
        camera, size = frame_settings(args.init, REGISTRY.get(task), args.camera, args.size, model_size)
        cameras[gym_id(REGISTRY.get(task))] = camera
        console.print(f"rendering {args.frames} frames of {task} ({camera} camera, {size} px)")
        sets.append(collect_frames(task, args.frames, n_envs=args.n_envs, size=size, camera=camera,
                                   seed=args.seed + i, decoy_fraction=decoy_fraction, decoy_mix=_decoy_mix(args)))
    if args.policy:
        from sim2real.policies.loading import load_run

        run = load_run(args.policy)
        task_id = gym_id(REGISTRY.get(run.config.task))
        if task_id not in cameras:
            raise ConfigError("policy", f"{args.policy} was trained on {task_id}, not on one of {sorted(cameras)}")
        console.print(f"rendering {args.policy_frames} frames of {task_id} driven by {args.policy} (step {run.step})")
        sets.append(policy_frames(run, args.policy_frames, n_envs=args.n_envs, size=size, camera=cameras[task_id],
                                  seed=args.seed + 1000))
    return sets, cameras, size


def _hold_out_last_episodes(sets: list, keep: float = 0.85):
    """Each set's episodes after its ``keep`` quantile held out for the accuracy check."""
    import numpy as np

    train_parts, held_parts = [], []
    for fs in sets:
        cut = np.quantile(fs.episode, keep)
        train_parts.append(fs.subset(fs.episode <= cut))
        held_parts.append(fs.subset(fs.episode > cut))
    return _concat(train_parts), _concat(held_parts)


def _config_of_init(init: str, model: str):
    import json

    folder = Path(init)
    if folder.is_dir():
        return json.loads((folder / "open_clip_config.json").read_text())["model_cfg"]
    from sim2real.policies.rewards.finetune import model_config_of

    return model_config_of(model)


def _concat(parts):
    import numpy as np

    from sim2real.policies.rewards.dataset import FrameSet

    offset, episodes = 0, []
    for p in parts:  # keep episode ids unique across tasks
        episodes.append(p.episode + offset)
        offset += int(p.episode.max()) + 1 if len(p) else 0
    return FrameSet(
        np.concatenate([p.frames for p in parts]),
        [c for p in parts for c in p.captions],
        np.concatenate([p.success for p in parts]),
        np.concatenate([p.progress for p in parts]),
        np.concatenate(episodes),
        np.concatenate([p.step for p in parts]),
    )


def _eval(args: argparse.Namespace) -> int:
    import torch

    from sim2real.errors import ConfigError
    from sim2real.policies.rewards.captions import GOAL_PROMPTS, captioner
    from sim2real.policies.rewards.dataset import collect_frames, policy_frames
    from sim2real.policies.rewards.reward_eval import QualitySettings, audit_sheet, evaluate_reward, plot_episodes
    from sim2real.policies.rewards.training import frame_settings
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    torch.set_num_threads(1)
    if not args.negative_ratio > 0:
        raise ConfigError("negative_ratio", f"must be > 0, got {args.negative_ratio}")
    settings = QualitySettings(alpha=args.quality_alpha, negative_ratio=args.negative_ratio, seed=args.seed)
    task_id = gym_id(REGISTRY.get(args.task))
    captioner(task_id)
    goal_default, baseline_default = GOAL_PROMPTS[task_id]
    goal = args.prompt or [goal_default]
    baseline = args.baseline or [baseline_default]
    models = _reward_models(args, goal, baseline)
    first = next(iter(models.values()))
    folder = next((w for w in args.clip_weights if Path(w).is_dir()), None)  # the first model folder's settings
    camera, size = frame_settings(folder, REGISTRY.get(task_id), args.camera, model_size=first.image_size[0])
    console.print(
        f"rendering {args.frames} held-out frames of {task_id} ({camera} camera, {size} px, seed {args.seed})"
    )
    data = collect_frames(task_id, args.frames, size=size, camera=camera, seed=args.seed,
                          decoy_fraction=args.decoy_fraction, decoy_mix=_decoy_mix(args))
    results = {name: evaluate_reward(m, data, quality=settings) for name, m in models.items()}
    sheet = {name: (res["quality"], data) for name, res in results.items()}
    if args.policy:
        from sim2real.policies.loading import load_run

        run = load_run(args.policy)
        console.print(f"rendering {args.frames} frames driven by {args.policy} (step {run.step})")
        visited = policy_frames(run, args.frames, size=size, camera=camera, seed=args.seed)
        for name, m in models.items():
            # Fooled on the policy's states means scored like the scripted successes.
            threshold = results[name]["quality"]["audit"]["threshold"]
            results[name]["policy_states"] = {
                "run": str(args.policy),
                "step": run.step,
                **evaluate_reward(m, visited, need_success=False, quality=settings, audit_threshold=threshold),
            }
            sheet[f"{name} (policy states)"] = (results[name]["policy_states"]["quality"], visited)
    out = {"task": task_id, "goal": goal, "baseline": baseline, "camera": camera, "image_size": size, "models": results}
    if args.plot:
        out["plot"] = str(plot_episodes(models, data, args.plot))
    if args.audit_sheet:
        out["audit_sheet"] = str(audit_sheet({Path(k).name: v for k, v in sheet.items()}, args.audit_sheet))
    if args.json:
        emit_json(out)
        return 0
    from sim2real.policies.rewards.report import eval_lines

    for line in eval_lines(results):
        stdout.print(line)
    if args.plot:
        stdout.print(f"plot: {out['plot']}")
    if args.audit_sheet:
        stdout.print(f"audit sheet: {out['audit_sheet']}")
    return 0


def _reward_models(args: argparse.Namespace, goal: list[str], baseline: list[str]) -> dict:
    """The reward models to compare, by name: each ``--clip-weights``, and with
    ``--include-untrained`` the first one's architecture untrained (the "before")."""
    import torch

    from sim2real.policies.rewards.clip_reward import TINY_MODEL, ClipRewardModel, register_model_configs
    from sim2real.policies.rewards.finetune import read_metadata

    models: dict[str, ClipRewardModel] = {}
    meta = {}
    for weights in args.clip_weights:
        models[str(weights)] = ClipRewardModel.load(args.clip_model, weights, goal, baseline, alpha=0.5)
        if not meta and Path(weights).is_dir():  # the first model folder's architecture
            meta = read_metadata(weights)
    if args.include_untrained:
        import open_clip

        register_model_configs()
        torch.manual_seed(0)
        name = args.clip_model or meta.get("training", {}).get("model") or TINY_MODEL
        untrained = open_clip.create_model(name, pretrained=None).eval()
        models[f"untrained {name}"] = ClipRewardModel(
            untrained, open_clip.get_tokenizer(name), goal, baseline, alpha=0.5, name=name
        )
    return models
