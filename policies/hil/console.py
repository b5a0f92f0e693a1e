"""The correction console attached to a HIL-SERL actor: the person's takeovers are the
interventions (flagged, into both buffers), their labels the classifier's data.

One object plays three parts for :class:`~.actor.Actor`: its intervention device
(:meth:`poll`), its monitor (pause while the e-stop is latched or the operator's dead
man holds, reset on request, real-time pace) and the camera source (renders of the
arm's cameras, drawn or taken in the actor's thread, which owns the GL context).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from sim2real.policies.hil.demos import next_episode_index, write_episode
from sim2real.policies.hil.env import ArmHilEnv
from sim2real.policies.safety.guards import EStop
from sim2real.policies.safety.spaces import command_space
from sim2real.policies.teleop.operator import HOLD, POLICY, OperatorSettings
from sim2real.policies.teleop.target import ConsoleTarget
from sim2real.sim.arm import constants as ARM
from sim2real.sim.core.layout import layout_slices

SCENE_BLOCKS = ("target_rel_ee", "hole_rel_peg_tip", "cube_rel_ee", "goal_rel_cube")
"""Observation blocks the page shows as the scene: where the goal is relative to the tool."""


class HilConsoleTarget(ConsoleTarget):
    """Args:
        env: The actor's environment (the simulated arm, or a real arm's graph).
        cameras: Cameras shown on the page.
        size: ``(width, height)`` of the shown frames.
        fps: Frames per second per camera (rendered after the steps, at most this often).
        labels_dir: Where labelled episodes go (the classifier's dataset), or ``None``.
        success_tail: Frames at the end of an episode labelled ``success`` that count
            as positives (the success state the person saw).
        real_time: Step at the task's control rate (a person cannot follow faster).
    """

    def __init__(self, env: ArmHilEnv, cameras: tuple[str, ...] = ("front", "wrist"),
                 size: tuple[int, int] = (320, 240), fps: float = 20.0, labels_dir: Path | None = None,
                 success_tail: int = 5, real_time: bool = True, settings: OperatorSettings | None = None) -> None:
        super().__init__("arm", "hil", settings)
        self.env, self.cameras, self.size, self.fps = env, cameras, size, fps
        self.labels_dir, self.success_tail, self.real_time = labels_dir, success_tail, real_time
        space = command_space("arm", "ee_delta")
        self._scale_lin, self._scale_ang, self._scale_grip = space.scale[0], space.scale[3], space.scale[6]
        self._grip_offset = space.offset[6]
        slices = layout_slices(env.action_layout)
        self._pos, self._rot, self._grip = slices["ee_delta_pos"], slices["ee_delta_rot"], slices.get("gripper")
        obs_slices = layout_slices(env.obs_layout)
        self._scene_blocks = {n: obs_slices[n] for n in SCENE_BLOCKS if n in obs_slices}
        self.estop_guard = EStop()
        self._policy_action = np.zeros(env.action_dim)
        self._reset_requested = False
        self._width = ARM.GRIP_WIDTH_MAX
        self._last_render = 0.0
        self._last_info: dict[str, Any] = {}
        self._record: dict[str, list[Any]] = {}
        self._label_pending = ""
        self._robot_state: dict[str, Any] = {}
        """The arm's state as the page shows it, read in the actor's thread after each step
        (the web thread never reads MuJoCo's data while it is being stepped)."""

    # -- the monitor (ActorMonitor) --------------------------------------------------------
    def control_period(self) -> float:
        # A real arm's environment takes its control period itself.
        return self.env.control_dt if self.real_time and not self.env.paces_itself else 0.0

    def paused(self) -> bool:
        with self.lock:
            if self.estop_guard.tripped or self.control.mode == HOLD:
                self.control.output(time.monotonic())  # keep the dead man's clock running
                held = True
            else:
                held = False
        self._render()  # the page keeps its live view while nothing moves
        return held

    def take_reset_request(self) -> bool:
        with self.lock:
            requested, self._reset_requested = self._reset_requested, False
            return requested

    def observe_policy(self, action: np.ndarray) -> None:
        with self.lock:
            self._policy_action = np.asarray(action, dtype=float)

    def episode_started(self, obs: dict[str, np.ndarray]) -> None:
        with self.lock:
            self._record = {"obs": [obs], "action": [], "reward": [], "terminated": [], "truncated": [],
                            "intervened": []}
        self._render(force=True)

    def stepped(self, next_obs: dict[str, np.ndarray], info: dict[str, Any], reward: float, intervened: bool) -> None:
        with self.lock:
            self.episodes.step(reward, intervened)
            self._last_info = info
            rec = self._record
            if rec:
                for key, value in (("action", info["action"]), ("reward", reward), ("intervened", intervened),
                                   ("terminated", False), ("truncated", False)):
                    rec[key].append(value)
                rec["obs"].append(next_obs)
        self._render()

    def episode_ended(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.episodes.end(bool(row["success"]))
            label, self._label_pending = self._label_pending, ""
            if label in ("success", "failure"):
                self._write_label(label)
            self.log(f"episode {row['episode']}: {'success' if row['success'] else 'failure'}, "
                     f"operator {row['intervened_steps']}/{row['steps']} steps"
                     + (f", labelled {label}" if label else ""))

    # -- the intervention device -------------------------------------------------------------
    def reset(self) -> None:
        with self.lock:
            self._width = ARM.GRIP_WIDTH_MAX  # episodes start with the gripper open

    def poll(self, obs: Any, full_obs: Any) -> np.ndarray | None:
        with self.lock:
            policy = self._policy_action
            out = self.control.output(time.monotonic(), self._to_operator(policy))
            if out.mode == POLICY or out.command is None:
                if self._grip is not None:  # the width the arm receives is the policy's
                    width = policy[self._grip][0] * self._scale_grip + self._grip_offset
                    self._width = float(np.clip(width, 0.0, ARM.GRIP_WIDTH_MAX))
                return None
            return np.clip(self._to_action(out.command), -1.0, 1.0).astype(np.float32)

    def _to_action(self, command: np.ndarray) -> np.ndarray:
        """Operator space (vx, vy, vz, wx, wy, wz, gripper speed) -> the arm's ee_delta
        action: units only (the blend is the operator control's); the gripper's speed
        moves the width from the last one the arm received."""
        action = np.zeros(self.env.action_dim)
        action[self._pos] = command[:3] / self._scale_lin
        action[self._rot] = command[3:6] / self._scale_ang
        if self._grip is not None:
            self._width = float(np.clip(self._width + command[6] * self.env.control_dt, 0.0,
                                        ARM.GRIP_WIDTH_MAX))
            action[self._grip] = (self._width - self._grip_offset) / self._scale_grip
        return action

    def _to_operator(self, action: np.ndarray) -> np.ndarray:
        return np.r_[action[self._pos] * self._scale_lin, action[self._rot] * self._scale_ang, 0.0]

    # -- the console's operations --------------------------------------------------------------
    def camera_names(self) -> list[str]:
        return list(self.cameras)

    def resets_enabled(self) -> bool:
        return True

    def labels_enabled(self) -> bool:
        return self.labels_dir is not None and bool(self.env.cameras)

    def estop(self, reason: str) -> str:
        with self.lock:
            self.estop_guard.trip(reason)
            self.control.estop_latched(time.monotonic(), reason)
            self.log(f"e-stop latched: {reason}")
        return ""

    def reset_estop(self) -> str:
        with self.lock:
            self.estop_guard.reset()
            self.control.estop_reset(time.monotonic())
            self.log("e-stop reset by the operator")
        return ""

    def label(self, kind: str) -> str:
        with self.lock:
            if kind not in ("success", "failure", "rerecord"):
                return f"unknown label {kind!r}"
            if kind != "rerecord" and not self.labels_enabled():
                return "labels need --labels DIR and pixel observations (cameras)"
            self._label_pending = "" if kind == "rerecord" else kind
            self._reset_requested = True  # the labelled (or discarded) episode ends here
            self.log(f"episode {self.episodes.episode} {'re-recorded' if kind == 'rerecord' else 'labelled ' + kind}")
        return ""

    def reset_episode(self) -> str:
        with self.lock:
            self._reset_requested = True
        return ""

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            info, safety = self._last_info, self._last_info.get("safety")
            detector = getattr(self.env.success_fn, "last_probability", None)
            return {
                "state": self._robot_state,
                "control": self.control.status(time.monotonic()),
                "safety": {"estop": self.estop_guard.latched_reason,
                           "acting": [k for k in ("clipped", "motion_limited", "workspace_blocked", "non_finite")
                                      if safety is not None and getattr(safety, k)],
                           "watchdog": "", "paused": self.estop_guard.tripped or self.control.mode == HOLD},
                "success_probability": detector if detector is not None else float(bool(info.get("success", 0))),
                "success_source": "classifier" if detector is not None else "simulator",
                "episodes": self.episodes.summary(),
            }

    # -- internals ------------------------------------------------------------------------------
    def _read_robot(self) -> None:
        m = self.env.measurements()
        state = {"joint_pos": _round(m.joint_pos), "ee_pos": _round(m.ee_pos), "ee_quat": _round(m.ee_quat),
                 "gripper_width": round(self._width, 4), "goal": _round(m.goal)}
        # What a person sees in the scene: where the goal is relative to the tool.
        full = self.env.full_obs
        if self.env.knows_scene:  # a real arm's scene is in its cameras only
            state.update({name: _round(full[s]) for name, s in self._scene_blocks.items() if len(full)})
        with self.lock:
            self._robot_state = state

    def _render(self, force: bool = False) -> None:
        self._read_robot()
        now = time.monotonic()
        if not force and now - self._last_render < 0.9 / self.fps:  # slack: steps arrive with jitter
            return
        self._last_render = now
        for cam, frame in self.env.views(self.cameras, self.size).items():
            self.frames.put(cam, frame)

    def _write_label(self, label: str) -> None:
        rec, folder = self._record, self.labels_dir
        if folder is None or not rec.get("action"):
            return
        steps = len(rec["action"])
        success = np.zeros(steps, dtype=bool)
        if label == "success":
            success[-self.success_tail:] = True
        truncated = [False] * (steps - 1) + [True]
        path = folder / f"episode_{next_episode_index(folder):06d}.h5"
        attrs = {"task": self.env.config.task, "obs_mode": self.env.config.obs_mode, "success": label == "success",
                 "steps": steps, "device": "console", "label": label}
        write_episode(path, rec["obs"], {**rec, "truncated": truncated, "success": success}, attrs)
        self.log(f"label {label} written to {path}")


def _round(values: np.ndarray | None) -> list[float] | None:
    return None if values is None else [round(float(v), 4) for v in values]
