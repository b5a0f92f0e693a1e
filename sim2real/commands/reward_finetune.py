"""``sim2real reward finetune-clip``: render captioned frames of tasks (and of a policy's
own states), train a small open_clip model on them, and save it with its metadata."""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.output import console, emit_json, stdout
from sim2real.commands.overrides import parse_overrides


def finetune(args: argparse.Namespace) -> int:
    import numpy as np
    import torch

    from sim2real.errors import ConfigError
    from sim2real.policies.rewards.captions import captioner
    from sim2real.policies.rewards.clip_reward import ClipRewardModel
    from sim2real.policies.rewards.clip_weights import TINY_MODEL
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
    from sim2real.policies.rewards.hard_negatives import decoy_mix
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    torch.set_num_threads(1)
    for task in args.tasks:
        captioner(task)  # fail before rendering anything when a task has no captions
    if args.progress_weight > 0 and len(args.tasks) > 1:
        raise ConfigError("--progress-weight", "orders one task's frames by its progress; give one task")
    # Fine-tuning a folder keeps its architecture, and the metadata must name it.
    model_name = args.model or (_model_of_init(args.init) if args.init else None) or TINY_MODEL
    model_cfg = model_config_of(model_name) if args.init is None else _config_of_init(args.init, model_name)
    decoy_fraction = DECOY_FRACTION if args.decoy_fraction is None else args.decoy_fraction
    task_options = parse_overrides(args.task_options)
    sets, cameras, size = _render_frames(args, model_image_size(model_cfg), decoy_fraction, task_options)
    train_set, held_set = _hold_out_last_episodes(sets)
    if args.hold_out_caption:
        unseen = set(args.hold_out_caption)
        missing = sorted(unseen - set(train_set.captions) - set(held_set.captions))
        if missing:
            raise ConfigError("--hold-out-caption", f"no rendered frame has the caption {missing[0]!r}")
        train_set = train_set.subset(np.array([c not in unseen for c in train_set.captions]))
        held_set = held_set.subset(np.array([c not in unseen for c in held_set.captions]))
    cfg = FinetuneConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        seed=args.seed,
        model=model_name,
        init=args.init,
        ordinal_smoothing=args.ordinal_smoothing,
        progress_weight=args.progress_weight,
        progress_alpha=args.progress_alpha,
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
        "decoy_mix": decoy_mix(args.hard_negatives),
        "balanced_captions": bool(args.balance_captions),
        "task_options": task_options,
        "held_out_captions": list(args.hold_out_caption),
        "policy": None if not args.policy else {"runs": [str(r) for r in args.policy], "frames": args.policy_frames,
                                               "checkpoint": args.policy_checkpoint},
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
            f"caption accuracy {_share(accuracy['train'])} train, {_share(accuracy['heldout'])} held-out; "
            f"saved {args.out}"
        )
    return 0


def _render_frames(args: argparse.Namespace, model_size: int, decoy_fraction: float, task_options: dict):
    """The captioned frames of every task (and of the ``--policy`` run's own states):
    the frame sets, the camera per task id, and the frame size."""
    from sim2real.errors import ConfigError
    from sim2real.policies.rewards.dataset import collect_frames, policy_frames
    from sim2real.policies.rewards.hard_negatives import decoy_mix
    from sim2real.policies.rewards.training import frame_settings
    from sim2real.sim import REGISTRY
    from sim2real.sim.core.registry import gym_id

    sets, cameras, size = [], {}, 0
    mix = decoy_mix(args.hard_negatives)
    for i, task in enumerate(args.tasks):
        # Fine-tuning keeps the camera and frame size the --init model was trained on.
        camera, size = frame_settings(args.init, REGISTRY.get(task), args.camera, args.size, model_size)
        cameras[gym_id(REGISTRY.get(task))] = camera
        console.print(f"rendering {args.frames} frames of {task} ({camera} camera, {size} px)")
        sets.append(collect_frames(task, args.frames, n_envs=args.n_envs, size=size, camera=camera,
                                   seed=args.seed + i, decoy_fraction=decoy_fraction, decoy_mix=mix,
                                   task_options=task_options, balance=args.balance_captions))
    from sim2real.policies.loading import load_run

    for k, path in enumerate(args.policy):
        run = load_run(path, args.policy_checkpoint)
        task_id = gym_id(REGISTRY.get(run.config.task))
        if task_id not in cameras:
            raise ConfigError("policy", f"{path} was trained on {task_id}, not on one of {sorted(cameras)}")
        console.print(f"rendering {args.policy_frames} frames of {task_id} driven by {path} (step {run.step})")
        sets.append(policy_frames(run, args.policy_frames, n_envs=args.n_envs, size=size, camera=cameras[task_id],
                                  seed=args.seed + 1000 + k))
    return sets, cameras, size


def _hold_out_last_episodes(sets: list, keep: float = 0.85):
    """Each set's episodes after its ``keep`` quantile held out for the accuracy check."""
    import numpy as np

    from sim2real.policies.rewards.dataset import FrameSet

    train_parts, held_parts = [], []
    for fs in sets:
        cut = np.quantile(fs.episode, keep)
        train_parts.append(fs.subset(fs.episode <= cut))
        held_parts.append(fs.subset(fs.episode > cut))
    return FrameSet.concat(train_parts), FrameSet.concat(held_parts)


def _model_of_init(init: str) -> str | None:
    """The architecture a ``finetune-clip`` folder was trained as (None for other weights)."""
    from sim2real.policies.rewards.finetune import read_metadata

    folder = Path(init)
    return read_metadata(folder).get("training", {}).get("model") if folder.is_dir() else None


def _config_of_init(init: str, model: str):
    import json

    folder = Path(init)
    if folder.is_dir():
        return json.loads((folder / "open_clip_config.json").read_text())["model_cfg"]
    from sim2real.policies.rewards.finetune import model_config_of

    return model_config_of(model)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"
