"""The imported policy in our simulator, right after import: does it stand, walk forward
and turn?

A foreign config can parse and still be wrong: legs in another order, a scale off by
twenty, an action sign flipped, gains ten times off. No reader can tell; the policy can.
Measured on the HIMLoco Go2 policy (docs/import.md): each of those mistakes makes it fall
or stop tracking here, while the right config walks. The result goes into the metadata
(``verification.sim_check``); the pre-flight check and ``deploy --backend real`` refuse
a policy that failed it, and ``sim2real import`` exits non-zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

CHECKS: tuple[tuple[str, tuple[float, float, float]], ...] = (
    ("stand still", (0.0, 0.0, 0.0)),
    ("forward 0.5 m/s", (0.5, 0.0, 0.0)),
    ("forward 0.5 m/s, turning 0.5 rad/s", (0.5, 0.0, 0.5)),
)
"""The commands held, one batch of episodes each, without randomization."""
EPISODES = 8
SECONDS = 6.0
MAX_RELATIVE_ERROR = 0.35
"""Largest |achieved - commanded| / |commanded| per commanded component: loose on purpose
(it finds broken conventions, not a weak policy; a sound import of HIMLoco's Go2 policy
is off by 9 % forward and 17 % in yaw without randomization)."""
MAX_UNCOMMANDED = np.array([0.15, 0.15, 0.3])
"""Largest |vx|, |vy| (m/s) and |yaw rate| (rad/s) where the command is zero: a robot that
spins or wanders while told to stand (robot_lab's Go2 policy yaws 0.18 rad/s standing
in our model and passes; Kp and Kd ten times too high made our walking policy spin at
0.65 rad/s)."""


def sim_check(policy: Any, seed: int = 0) -> dict[str, Any]:
    """Run :data:`CHECKS` with ``policy`` (an :class:`OnnxPolicy` of QuadrupedVelocity); the
    verdict and each row's figures. Each row fails on a fall, a commanded component off by
    more than :data:`MAX_RELATIVE_ERROR`, or motion beyond :data:`MAX_UNCOMMANDED` where
    the command is zero."""
    from sim2real.policies.studies.tracking import track
    from sim2real.sim.core.registry import REGISTRY

    task_cls = REGISTRY.get(policy.task)
    options = dict(policy.metadata.get("task_options") or {})
    rows, problems = [], []
    for name, command in CHECKS:
        r = track(policy, task_cls, options, command, EPISODES, SECONDS, "none", seed)
        commanded = np.asarray(command)
        relative = [float(r["error"][i] / abs(commanded[i])) for i in np.flatnonzero(commanded)]
        stray = np.abs(np.asarray(r["achieved"])) * (commanded == 0)
        rows.append({"command": name, "falls": r["falls"], "episodes": EPISODES,
                     "achieved": [round(float(x), 4) for x in r["achieved"]],
                     "relative_error": [round(x, 4) for x in relative]})
        achieved = ", ".join(f"{x:+.2f}" for x in r["achieved"])
        if r["falls"]:
            problems.append(f"falls in {r['falls']}/{EPISODES} episodes of {name}")
        elif any(not x <= MAX_RELATIVE_ERROR for x in relative):
            problems.append(f"{name}: achieved {achieved} (error {max(relative):.0%} > {MAX_RELATIVE_ERROR:.0%})")
        elif np.any(stray > MAX_UNCOMMANDED):
            problems.append(f"{name}: achieved {achieved}, moving where nothing was commanded (limits "
                            f"{', '.join(f'{x:g}' for x in MAX_UNCOMMANDED)})")
    return {"passed": not problems, "problems": problems, "rows": rows, "seconds": SECONDS,
            "max_relative_error": MAX_RELATIVE_ERROR, "max_uncommanded": MAX_UNCOMMANDED.tolist()}


def failure(metadata: dict[str, Any]) -> str:
    """One line saying why an imported policy must not reach a real robot ("" if it may):
    it failed its sim check, or it predates the check."""
    if "adapter" not in metadata:
        return ""
    check = (metadata.get("verification") or {}).get("sim_check")
    if not isinstance(check, dict):
        return "the imported policy has no sim check on record: import it again"
    if not check.get("passed"):
        return ("the imported policy failed its check in our simulator (" + "; ".join(check.get("problems", []))
                + "): check its joint order, observation scales, action signs and gains")
    return ""
