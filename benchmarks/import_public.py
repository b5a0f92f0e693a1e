"""Import a public rl_sar Go2 policy folder and measure it in our MuJoCo Go2: the
tracking table with and without our training randomization, and the imported graph's
inference time per step against our shipped QuadrupedVelocity policy's in the same run.

Not in CI (other projects' policy files are not committed; fetch them first):

    git clone https://github.com/fan-ziqi/rl_sar /tmp/rl_sar   # the commit is printed below
    python benchmarks/import_public.py /tmp/rl_sar/policy/go2/robot_lab --out runs/imported/go2_robot_lab
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="an rl_sar policy folder (policy/go2/robot_lab)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--commit", help="the source's commit, where the folder is not a git checkout")
    args = parser.parse_args(argv)
    from sim2real.bench.imported import per_step_ms, resized
    from sim2real.policies import BASELINES_DIR
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.importers import READERS
    from sim2real.policies.importers.writer import import_policy, recorded_observations
    from sim2real.policies.studies.tracking import as_dicts, tracking_table

    commit = subprocess.run(["git", "-C", str(args.folder), "rev-parse", "HEAD"], capture_output=True, text=True)
    meta = import_policy(READERS["rl_sar"].read(args.folder), args.out)
    imported, ours = OnnxPolicy(args.out), OnnxPolicy(BASELINES_DIR / "QuadrupedVelocity")
    report = {"source": str(args.folder), "commit": commit.stdout.strip() or args.commit,
              "verification": meta["verification"],
              "tracking": {dr: as_dicts(tracking_table(imported, args.episodes, 10.0, dr)) for dr in ("none", "train")}}
    obs = recorded_observations(imported, meta["task_options"], steps=100, n_envs=4)
    ours_obs = resized(obs, ours.obs_size)
    a, b = per_step_ms(imported, obs, 2000), per_step_ms(ours, ours_obs, 2000)
    report["inference_ms_per_step"] = {"imported": a, "shipped_QuadrupedVelocity": b,
                                       "ratio": round(a["mean"] / b["mean"], 3)}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
