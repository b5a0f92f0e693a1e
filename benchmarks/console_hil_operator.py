"""HIL-SERL on the arm's peg insertion with a person at the correction console: a scripted
operator drives the real page in Chromium with a gamepad, in place of the scripted Python
operator of `sim2real bench hil`, and the run is compared with that operator's.

    python benchmarks/console_hil_operator.py --steps 6000 --out runs/console-hil [--json]

1. 20 scripted demonstrations (state observations), as `bench hil` records them.
2. `sim2real hil run --console` (learner and actor processes; the actor in real time).
3. The operator: Playwright opens the console; a virtual gamepad (the page's own Gamepad
   API path, `navigator.getGamepads`) is held by a script that sees what the page shows
   (the peg tip relative to the hole, the episode's steps) and follows `bench hil`'s rule
   for when: take over when the tip is more than 5 cm from the hole horizontally, or
   once per episode after 60 steps without success; steer with the sticks (align above
   the hole, then descend), pushing past the pad's dead zone as a person does. It holds
   a takeover for up to 100 steps (5 s) where the Python operator holds 25: a person is
   held to the console's 0.15 m/s and 0.4 s blend, the Python operator moves up to
   0.4 m/s with no blend, so a correction takes longer (the insertion ends the episode).
4. The learner's final weights alone, `--eval-episodes` held-out episodes.
5. The reference in the same run (`--reference`): `bench hil`'s loop with the scripted
   Python operator, same steps and seed.

Reports training success (interventions included) and intervention share per 1000 steps,
the policy's success alone at the end, learner updates, wall-clock; `--json` one object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

LIMIT = 0.15
"""m/s of a full stick (the arm's operator space)."""
DEADZONE = 0.13
"""Fraction a person pushes past the page's 0.12 dead zone to nudge."""
VIRTUAL_PAD = """
window.__pad = {id: "scripted operator (virtual gamepad)", index: 0, connected: true, mapping: "standard",
                timestamp: 0, axes: [0, 0, 0, 0], buttons: Array.from({length: 17}, () => ({pressed: false,
                touched: false, value: 0}))};
navigator.getGamepads = () => [window.__pad];
window.__setPad = (hold, axes, dpad) => {
  const button = (on) => ({pressed: on, touched: on, value: on ? 1 : 0});
  window.__pad.buttons[5] = button(hold);
  dpad.forEach((on, i) => { window.__pad.buttons[12 + i] = button(on); });
  window.__pad.axes = axes; window.__pad.timestamp = performance.now();
};
"""


class GamepadOperator:
    """What `bench hil`'s scripted operator decides, from what the page shows."""

    def __init__(self, drift: float = 0.05, patience: int = 60, takeover: int = 100, gain: float = 4.0,
                 always: bool = False) -> None:
        self.drift, self.patience, self.takeover_steps, self.gain = drift, patience, takeover, gain
        self.always = always
        self.episode, self.left, self.used_patience, self.last_step = -1, 0, False, -1

    def decide(self, state: dict[str, Any]) -> tuple[bool, list[float], list[bool]]:
        """``(hold RB, pad axes, d-pad up/down/left/right)`` for the page's latest state."""
        ep = state["episodes"]
        if ep["episode"] != self.episode:
            self.episode, self.left, self.used_patience, self.last_step = ep["episode"], 0, False, -1
        error = np.asarray(state["state"].get("hole_rel_peg_tip") or [0.0, 0.0, 0.0])
        step = int(ep["steps"])
        if step != self.last_step:  # count the takeover in env steps, as the scripted operator does
            if self.left == 0:
                drifted = float(np.linalg.norm(error[:2])) > self.drift
                stalled = step > self.patience and not self.used_patience
                if drifted or stalled:
                    self.left, self.used_patience = self.takeover_steps, self.used_patience or stalled
            elif step > self.last_step:
                self.left = max(self.left - (step - self.last_step), 0)
            self.last_step = step
        if self.left == 0 and not self.always:
            return False, [0.0, 0.0, 0.0, 0.0], [False] * 4
        aligned = float(np.linalg.norm(error[:2])) < 0.004
        target_z = error[2] - 0.02 if aligned else error[2] + 0.03  # descend into it, or hover 3 cm above
        velocity = self.gain * np.array([error[0], error[1], target_z])
        fraction = np.clip(velocity / LIMIT, -1.0, 1.0)
        nudged = np.where(np.abs(fraction) > 0.02, np.sign(fraction) * np.maximum(np.abs(fraction), DEADZONE), 0.0)
        vx, vy, vz = (float(v) for v in nudged)
        # Re-level the tool on the d-pad (roll, pitch) when it tilts more than 3 degrees.
        tilt = self.tilt(np.asarray(state["state"].get("ee_quat") or [0.0, 1.0, 0.0, 0.0]))
        wx, wy = (float(np.sign(t)) if abs(t) > np.radians(3) else 0.0 for t in tilt[:2])
        dpad = [wy > 0, wy < 0, wx < 0, wx > 0]  # up, down, left, right: the page's wy = up - down, wx = right - left
        return True, [-vy, -vx, 0.0, -vz], dpad  # the page: vx = -axes[1], vy = -axes[0], vz = -axes[3]

    @staticmethod
    def tilt(quat: np.ndarray) -> np.ndarray:
        """World-frame rotation vector that turns the hand back to pointing down."""
        from sim2real.sim.arm.control import REF_QUAT
        from sim2real.sim.arm.rotations import quat_conj, quat_mul, quat_to_rotvec

        return np.asarray(quat_to_rotvec(quat_mul(REF_QUAT, quat_conj(quat / np.linalg.norm(quat)))))


def record_demos(out: Path, seed: int, n: int) -> Path:
    folder = out / "demos"
    subprocess.run([sys.executable, "-m", "sim2real", "hil", "record-demos", "--task", "ArmPegInsert", "--obs-mode",
                    "state", "--n", str(n), "--device", "scripted", "--seed", str(seed), "--out", str(folder)],
                   check=True, stdout=subprocess.DEVNULL)
    return folder


def operate(url: str, proc: subprocess.Popen, log: Any, always: bool = False) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    operator, frames = GamepadOperator(always=always), 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        context = browser.new_context(bypass_csp=True)
        context.add_init_script(VIRTUAL_PAD)
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("window.consoleStats.state !== null", timeout=60000)
        while proc.poll() is None:
            try:
                state = page.evaluate("window.consoleStats.state")
                hold, axes, dpad = operator.decide(state)
                page.evaluate("([h, a, d]) => window.__setPad(h, a, d)", [hold, axes, dpad])
            except Exception as exc:  # the actor finished and its server went away
                log(f"operator stopped: {type(exc).__name__}")
                break
            frames += 1
            time.sleep(0.02)
        browser.close()
    return {"operator_updates": frames}


def steps_bins(run_dir: Path, bin_steps: int) -> list[dict[str, float]]:
    """Training success and operator share per ``bin_steps`` env steps, from the learner's log."""
    rows = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines() if line.strip()]
    out, step, current = [], 0, []
    for row in rows:
        step += int(row["steps"])
        current.append(row)
        if step >= (len(out) + 1) * bin_steps:
            out.append({"steps": step, "episodes": len(current),
                        "success": round(float(np.mean([r["success"] for r in current])), 3),
                        "operator_share": round(sum(r["intervened_steps"] for r in current)
                                                / max(sum(r["steps"] for r in current), 1), 3)})
            current = []
    return out


def evaluate(run_dir: Path, episodes: int, seed: int) -> dict[str, float]:
    from sim2real.policies.hil.config import HilConfig
    from sim2real.policies.hil.env import HilEnv
    from sim2real.policies.hil.loop import evaluate as rollout
    from sim2real.policies.hil.sac import HilAgent, tensors_from_bytes
    from sim2real.sim.core.schema import from_dict

    cfg = from_dict(HilConfig, json.loads((run_dir / "config.json").read_text()))
    env = HilEnv(cfg.env, seed=seed + 1)
    agent = HilAgent(env.observation_shapes(), env.action_dim, cfg.learner, seed=seed)
    agent.load_full_state(tensors_from_bytes((run_dir / "checkpoint.pt").read_bytes()))
    rate = rollout(agent, env, episodes, seed)
    env.close()
    return {"eval_success": rate, "learner_updates": int(agent.updates)}


def reference(steps: int, seed: int, demos: Path, episodes: int) -> dict[str, Any]:
    """`bench hil`'s hil method: the loop with the scripted Python operator."""
    import torch

    from sim2real.policies.hil import loop
    from sim2real.policies.hil.config import EnvConfig, HilConfig, LearnerConfig
    from sim2real.policies.hil.demos import load_demo_dir
    from sim2real.policies.hil.devices import ScriptedOperator
    from sim2real.policies.hil.env import HilEnv

    torch.set_num_threads(1)
    cfg = HilConfig(env=EnvConfig(obs_mode="state"), learner=LearnerConfig(warmup_steps=500), seed=seed)
    cfg.actor.random_steps = 500
    probe = HilEnv(cfg.env)
    device = ScriptedOperator(probe.obs_layout, probe.action_layout, seed=100 + seed)
    probe.close()
    start = time.perf_counter()
    _, history = loop.train(cfg, steps, demos=load_demo_dir(demos)[0], device=device, eval_every=1000,
                            eval_episodes=episodes, log=lambda s: None)
    return {**history.__dict__, "wall_seconds": round(time.perf_counter() - start, 1)}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--demos", type=int, default=20)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--reference", action=argparse.BooleanOptionalAction, default=True,
                        help="also run bench hil's scripted Python operator, same steps and seed")
    parser.add_argument("--always", action="store_true",
                        help="the operator drives every step (how well it inserts the peg by itself)")
    parser.add_argument("--out", type=Path, default=Path("runs/console-hil"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    demos = record_demos(args.out, args.seed, args.demos)
    from sim2real.policies.hil.transport import free_port_pair

    run_dir, port = args.out / "run", free_port_pair()
    cmd = [sys.executable, "-m", "sim2real", "hil", "run", "--console", "--console-port", "0", "--obs-mode", "state",
           "--demos", str(demos), "--steps", str(args.steps), "--seed", str(args.seed), "--run-dir", str(run_dir),
           "--port", str(port), "--set", "actor.random_steps=500", "--set", "learner.warmup_steps=500", "--json"]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = None
    assert proc.stderr is not None
    while url is None and proc.poll() is None:
        match = re.search(r"console: (http\S+)", proc.stderr.readline())
        url = match.group(1) if match else None
    if url is None:
        raise SystemExit(f"the HIL run did not start its console: {proc.stderr.read()[-2000:]}")
    _log(f"operating {url}")
    try:
        operated = operate(url, proc, _log, args.always)
        stdout, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
    summary = json.loads(stdout.strip().splitlines()[-1])
    result: dict[str, Any] = {
        "console": {"steps": args.steps, "seed": args.seed, "wall_seconds": round(time.monotonic() - start, 1),
                    "train_success": summary["success_rate"], "intervention_rate": summary["intervention_rate"],
                    "per_1000_steps": steps_bins(run_dir, 1000), **operated,
                    **evaluate(run_dir, args.eval_episodes, args.seed)}}
    if args.reference:
        result["reference_scripted_python_operator"] = reference(args.steps, args.seed, demos, args.eval_episodes)
    (args.out / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
