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

from sim2real.commands.output import add_json_flag


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
    ft.add_argument("--balance-captions", action="store_true",
                    help="render as many frames of every caption as of any other (the physics runs on until the "
                         "rare ones, such as the last centimetres of a reach, fill their share; default: the frames "
                         "follow the scripted controller, mostly far from the goal)")
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
        "--policy", action="append", default=[],
        help="a run folder (repeat for several): also render the states its (stochastic) policy visits, so the "
        "reward model learns the states RL policies drive it into, not only the scripted controller's",
    )
    ft.add_argument("--policy-frames", type=int, default=4000, help="frames from each --policy (default 4000)")
    add_policy_checkpoint_flag(ft)
    ft.add_argument("--model", default=None, help="open_clip architecture (default sim2real-tiny-vit-96; "
                    "sim2real-tiny-rn-96 is a small ResNet of the same cost)")
    ft.add_argument(
        "--ordinal-smoothing",
        type=float,
        default=1.0,
        help="soft image-to-caption targets, temperature in caption ranks (0: one-hot; default 1)",
    )
    ft.add_argument(
        "--progress-weight", type=float, default=0.0,
        help="also train the goal-baseline reward to order frames by the simulator's progress (a pairwise "
        "ranking loss with this weight; 0: off, the models before issue 24; one task only)",
    )
    ft.add_argument("--progress-alpha", type=float, default=0.5,
                    help="alpha of the reward the progress loss orders (default 0.5, the training default)")
    ft.add_argument(
        "--hold-out-caption", action="append", default=[], metavar="SENTENCE",
        help="leave the frames with this caption out of training (repeatable): a sentence the model never sees, "
        "to measure training from it (e.g. a new colour-distance combination)",
    )
    add_task_option_flag(ft)
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
    add_task_option_flag(ev)
    ev.add_argument("--plot", type=Path, help="PNG of the reward along held-out episodes")
    ev.add_argument(
        "--policy",
        help="a run folder: also evaluate on the states its (stochastic) policy visits, where RL would exploit "
        "the reward's mistakes (reported as policy_states)",
    )
    add_policy_checkpoint_flag(ev)
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


def add_task_option_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--task-option", dest="task_options", action="append", default=[], metavar="KEY=VALUE",
        help="a task constructor option for the rendered rollouts (repeatable; YAML value), "
        "e.g. --task-option 'target_colors=[green, red, blue]'",
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "finetune-clip":
        from sim2real.commands.reward_finetune import finetune

        return finetune(args)
    from sim2real.commands.reward_eval import evaluate

    return evaluate(args)


def add_policy_checkpoint_flag(parser: argparse.ArgumentParser) -> None:
    """``--policy-checkpoint``: which checkpoint of a ``--policy`` run drives the frames."""
    parser.add_argument(
        "--policy-checkpoint", choices=["auto", "best", "last"], default="auto",
        help="checkpoint of each --policy run (auto: best, else last; as eval --checkpoint); a checkpoint folder "
        "(RUN/checkpoints/step-...) given as --policy is used as it is",
    )
