"""``sim2real reward eval``: how well reward models agree with the simulator's ground
truth on held-out rollouts (correlations, the quality report, the hacking audit)."""

from __future__ import annotations

import argparse
from pathlib import Path

from sim2real.commands.output import console, emit_json, stdout
from sim2real.commands.overrides import parse_overrides


def evaluate(args: argparse.Namespace) -> int:
    import torch

    from sim2real.errors import ConfigError
    from sim2real.policies.rewards.captions import GOAL_PROMPTS, captioner
    from sim2real.policies.rewards.dataset import collect_frames, policy_frames
    from sim2real.policies.rewards.hard_negatives import decoy_mix
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
                          decoy_fraction=args.decoy_fraction, decoy_mix=decoy_mix(args.hard_negatives),
                          task_options=parse_overrides(args.task_options))
    results = {name: evaluate_reward(m, data, quality=settings) for name, m in models.items()}
    sheet = {name: (res["quality"], data) for name, res in results.items()}
    if args.policy:
        from sim2real.policies.loading import load_run

        run = load_run(args.policy, args.policy_checkpoint)
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

    from sim2real.policies.rewards.clip_reward import ClipRewardModel
    from sim2real.policies.rewards.clip_weights import TINY_MODEL, register_model_configs
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
