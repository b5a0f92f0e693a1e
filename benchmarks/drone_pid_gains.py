"""Is the drones' held-out gap a tuning problem? The cascaded PID alone (``ctbr_residual``
with a zero residual) under the training and the held-out randomization, once with its
default gains and once per ``--case`` with some gains changed, on the same episodes.

    python benchmarks/drone_pid_gains.py DroneHover --episodes 100 \\
        --case "kp_vel=8,8,5" --case "k_att=15,15,3" \\
        --case "kp_pos=3,3,2 kp_vel=8,8,5 k_att=15,15,3 max_tilt=0.785"

A case is space-separated ``FIELD=VALUE`` pairs over :class:`CascadedPIDGains` (vectors
as comma-separated numbers). Prints one line per case and preset (successes, crashes,
final position error), and with ``--json`` one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

import numpy as np

from sim2real.policies.common.evaluation import Evaluator
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.drone.base import DroneTask
from sim2real.sim.drone.position_control import CascadedPIDGains


def parse_case(text: str) -> dict[str, Any]:
    """``"kp_vel=8,8,5 max_tilt=0.785"`` -> gain overrides, checked against the dataclass."""
    fields = {f.name for f in dataclasses.fields(CascadedPIDGains)}
    out: dict[str, Any] = {}
    for pair in text.split():
        name, sep, value = pair.partition("=")
        if not sep or name not in fields:
            raise SystemExit(f"--case: {pair!r} is not FIELD=VALUE with FIELD one of {sorted(fields)}")
        numbers = [float(v) for v in value.split(",")]
        default = getattr(CascadedPIDGains(), name)
        out[name] = np.array(numbers) if isinstance(default, np.ndarray) else (
            tuple(numbers) if isinstance(default, tuple) else numbers[0])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=["DroneHover", "DroneWaypoints"])
    parser.add_argument("--episodes", type=int, default=100, help="episodes per case and preset")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--start", default="mixed", help="the task's start option (the baselines use mixed)")
    parser.add_argument("--case", action="append", default=[], help="gain overrides, e.g. 'kp_vel=8,8,5'")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    task_cls = REGISTRY.get(f"sim2real/{args.task}-v0")
    cases = {"default gains": {}} | {text: parse_case(text) for text in args.case}
    out: dict[str, dict[str, dict]] = {}
    for label, overrides in cases.items():
        for dr in ("train", "heldout"):
            ev = Evaluator(task_cls, n_envs=args.n_envs, action_mode="ctbr_residual", dr=dr,
                           task_options={"start": args.start})
            drone = ev.task
            if not isinstance(drone, DroneTask) or drone.reference is None:
                raise SystemExit(f"{args.task} has no cascaded PID reference (the ctbr_residual mode of a drone task)")
            drone.reference.gains = CascadedPIDGains(**overrides)
            zero = np.zeros(ev.act_size)
            result = ev.run(lambda obs, zero=zero: np.tile(zero, (len(obs), 1)), args.episodes).to_dict()
            final = result["metrics_final"]
            out.setdefault(label, {})[dr] = {k: result[k] for k in ("successes", "episodes", "metrics_final")}
            print(f"{label:40s} {dr:8s} {result['successes']:3d}/{result['episodes']}  "
                  f"crashed {final['crashed']:.2f}  position error {final['position_error']:.3f} m", flush=True)
    if args.json:
        json.dump({"task": args.task, "results": out}, sys.stdout)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
