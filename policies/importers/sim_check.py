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


def sim_check(policy: Any, seed: int = 0) -> dict[str, Any]:
    """Run :data:`CHECKS` with ``policy`` (an :class:`OnnxPolicy` of QuadrupedVelocity); the
    verdict and each row's figures."""
    from sim2real.policies.studies.tracking import track
    from sim2real.sim.core.registry import REGISTRY

    task_cls = REGISTRY.get(policy.task)
    options = dict(policy.metadata.get("task_options") or {})
    rows, problems = [], []
    for name, command in CHECKS:
        r = track(policy, task_cls, options, command, EPISODES, SECONDS, "none", seed)
        commanded = np.asarray(command)
        relative = [float(r["error"][i] / abs(commanded[i])) for i in np.flatnonzero(commanded)]
        rows.append({"command": name, "falls": r["falls"], "episodes": EPISODES,
                     "achieved": [round(float(x), 4) for x in r["achieved"]],
                     "relative_error": [round(x, 4) for x in relative]})
        if r["falls"]:
            problems.append(f"falls in {r['falls']}/{EPISODES} episodes of {name}")
        elif any(not x <= MAX_RELATIVE_ERROR for x in relative):
            problems.append(f"{name}: achieved {', '.join(f'{x:+.2f}' for x in r['achieved'])} "
                            f"(error {max(relative):.0%} > {MAX_RELATIVE_ERROR:.0%})")
    return {"passed": not problems, "problems": problems, "rows": rows, "seconds": SECONDS,
            "max_relative_error": MAX_RELATIVE_ERROR}


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
