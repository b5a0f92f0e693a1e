r"""Import a quadruped policy trained elsewhere (Isaac Gym, Isaac Lab) as a sim2real policy.

Reads the foreign files, matches joints by name, builds the observation the policy
expects from our robot's and maps its actions to our joint targets (an affine adapter
around its network), exports one ONNX graph with our metadata (the adapter recorded
under ``adapter``, the policy's servo gains as task options) and verifies it against
TorchScript on observations recorded in our simulator, then runs it there: standing,
walking forward and turning (a policy that falls or does not track is written but
the command exits 1, and a real robot refuses it: the usual sign of a joint-order,
scale, sign or gain mistake in the foreign config). The result runs with ``eval``,
``sim2sim``, ``robustness`` and ``deploy`` like any exported policy.

Formats:
  rl_sar      a policy folder of rl_sar (config.yaml and the TorchScript file, base.yaml
              one level up): its Isaac Gym and Isaac Lab Go2 policies
  legged_gym  legged_gym / unitree_rl_gym: the TorchScript of export_policy_as_jit, with
              --config (the robot's config .py), --base-config (legged_robot_config.py)
              and --urdf (the joint order); the configs are parsed, never executed
  isaac_lab   an Isaac Lab run's exported policy.onnx or policy.pt (or the run folder) with
              the run's params/env.yaml or Hydra dump .hydra/config.yaml (found from the
              policy, or --env-yaml); the
              articulation's joint order is --joint-order (default: the Go2's in Isaac Lab)
  unitree_deploy  unitree_rl_gym's deploy/deploy_mujoco/configs/<robot>.yaml and the
              policy it names (or --policy); --joint-order is the MJCF's (default: the Go2's)

Policies may be TorchScript or ONNX (.onnx: an MLP graph, rebuilt as torch modules).

Examples:
  sim2real import rl_sar rl_sar/policy/go2/robot_lab --out imported/go2_robot_lab
  sim2real import legged_gym logs/rough_go2/exported/policies/policy_1.pt \
      --config legged_gym/envs/go2/go2_config.py --base-config legged_gym/envs/base/legged_robot_config.py \
      --urdf resources/robots/go2/urdf/go2.urdf --out imported/go2_legged_gym
  sim2real import isaac_lab logs/rsl_rl/unitree_go2_flat/2025-12-10_13-14-47/exported/policy.onnx \
      --out imported/go2_isaac_lab
  sim2real import unitree_deploy unitree_rl_gym/deploy/deploy_mujoco/configs/go2.yaml --out imported/go2_deploy
  sim2real sim2sim imported/go2_robot_lab
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sim2real.commands.output import add_json_flag, emit_json, stdout

OPTIONS = ("config", "base_config", "urdf", "env_yaml", "joint_order", "policy")
"""The format-specific flags; each reader takes those its ``FILES`` names."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("format", choices=["rl_sar", "legged_gym", "isaac_lab", "unitree_deploy"],
                        help="the foreign format")
    parser.add_argument("path", type=Path, help="the policy folder (rl_sar), policy file (legged_gym, isaac_lab; "
                                                "or the Isaac Lab run folder) or deploy YAML (unitree_deploy)")
    parser.add_argument("--config", type=Path, help="legged_gym: the robot's config (.py)")
    parser.add_argument("--base-config", type=Path, help="legged_gym: the base config it derives from (.py)")
    parser.add_argument("--urdf", type=Path, help="legged_gym: the robot's URDF (Isaac Gym's joint order)")
    parser.add_argument("--env-yaml", type=Path, help="isaac_lab: the run's params/env.yaml or .hydra/config.yaml "
                                                      "(default: found from the policy, <run>/params/env.yaml, "
                                                      "else <run>/.hydra/config.yaml)")
    parser.add_argument("--joint-order", help="isaac_lab, unitree_deploy: the simulator's joint order, "
                                              "comma-separated names or a file with one per line (default: the Go2's)")
    parser.add_argument("--policy", type=Path, help="unitree_deploy: the TorchScript policy (default: the YAML's "
                                                    "policy_path)")
    parser.add_argument("--out", type=Path, required=True, help="folder for policy.onnx and its metadata")
    parser.add_argument("--no-sim-check", action="store_true",
                        help="skip standing, walking and turning it in our simulator (a few seconds); a policy "
                             "without the check is refused on a real robot")
    add_json_flag(parser)


def run(args: argparse.Namespace) -> int:
    from sim2real.policies.importers import READERS
    from sim2real.policies.importers.sim_check import failure as sim_check_failure
    from sim2real.policies.importers.writer import import_policy
    from sim2real.sim.core.errors import ConfigError

    reader = READERS[args.format]
    given = {name: getattr(args, name) for name in OPTIONS if getattr(args, name)}
    extra = sorted(set(given) - set(reader.FILES))
    if extra:
        raise ConfigError("--" + extra[0].replace("_", "-"), f"is not used by the {args.format} format")
    spec = reader.read(args.path, **given)
    meta = import_policy(spec, args.out, check=not args.no_sim_check)
    check = meta["verification"].get("sim_check")
    report = {"policy": str(args.out / "policy.onnx"), "task": meta["task"], "action_mode": meta["action_mode"],
              "task_options": meta["task_options"], "terms": spec.terms, "joint_order": spec.joint_names,
              "unmeasured_terms": meta["adapter"]["unmeasured_terms"],
              "max_abs_diff": meta["verification"]["max_abs_diff"], "sim_check": check}
    failed = sim_check_failure(meta) if check else ""
    if args.json:
        emit_json(report)
        return _check_failed(failed) if failed else 0
    stdout.print(f"wrote {report['policy']} ({meta['task']}, {meta['action_mode']}; terms {', '.join(spec.terms)}; "
                 f"max diff vs TorchScript {report['max_abs_diff']:.2g})")
    for term, why in report["unmeasured_terms"].items():
        stdout.print(f"note: {term}: {why}")
    if check and not failed:
        stdout.print("sim check passed: " + "; ".join(
            f"{r['command']}: {', '.join(f'{x:+.2f}' for x in r['achieved'])}" for r in check["rows"]))
    if failed:  # the files stay, to be inspected with sim2sim; a real robot refuses them
        return _check_failed(failed)
    return 0


def _check_failed(reason: str) -> int:
    """A failed sim check is a finding, not a usage error: one line on stderr and exit 1,
    as `deploy check` exits on a FAIL (2 stays argparse's and bad input's)."""
    print(f"sim2real import: error: {reason}", file=sys.stderr)
    return 1
