"""How far a quadruped policy is from equivariant under the robot's left-right mirror:
the mean |policy(mirror(obs)) - mirror(policy(obs))| over the states of its own rollout
(16 environments, 100 control steps, the training randomization), beside the mean |action|.
A symmetric robot's policy that walks straight should be near 0 (docs/transfer.md, "The
student yawed on straight commands").

    python benchmarks/equivariance.py policies/baselines/QuadrupedVelocityStudent policies/baselines/QuadrupedVelocity
"""

from __future__ import annotations

import argparse

import numpy as np

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)
from sim2real.policies.deploy import OnnxPolicy
from sim2real.sim import make_vec


def equivariance_error(path: str, steps: int = 100, n_envs: int = 16, seed: int = 3) -> tuple[float, float]:
    """(mean equivariance error, mean |action|) of the exported policy at ``path``."""
    policy = OnnxPolicy(path)
    env = make_vec(policy.task, n_envs, seed=seed, action_mode=policy.action_mode,
                   **dict(policy.metadata.get("task_options") or {}))
    obs_mirror, action_mirror = env.task.mirror()
    obs, errors, sizes = np.asarray(env.reset()), [], []
    for _ in range(steps):
        seen = obs[:, : policy.obs_size].astype(np.float32)
        action = np.asarray(policy(seen))
        reflected = np.asarray(policy(obs_mirror(seen).astype(np.float32)))
        errors.append(float(np.abs(reflected - action_mirror(action)).mean()))
        sizes.append(float(np.abs(action).mean()))
        obs = np.asarray(env.step(action)[0])
    env.close()
    return float(np.mean(errors)), float(np.mean(sizes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("policies", nargs="+", help="exported quadruped policies (folders or .onnx)")
    for path in parser.parse_args().policies:
        error, size = equivariance_error(path)
        print(f"{path}: equivariance error {error:.3f}, mean |action| {size:.3f}")


if __name__ == "__main__":
    main()
