"""Peg insertion: a square peg held in the gripper goes into a hole with 3 mm clearance.

Contact-rich: the peg (25 mm square, 100 mm long) starts 3-6 cm above the hole with a
few cm of lateral offset and a small yaw error; the hole (28 mm square, 40 mm deep)
sits in a fixture whose position changes every episode. The gripper holds the peg
with its full 70 N for the whole episode, so this task has no gripper action.
"""

from __future__ import annotations

from typing import Any, ClassVar

import mujoco
import numpy as np

from sim2real.sim.arm import constants as C
from sim2real.sim.arm.base import ArmTask, add_net_contact_sensor
from sim2real.sim.arm.control import REF_QUAT
from sim2real.sim.arm.ik import solve_ik
from sim2real.sim.arm.rotations import quat_mul, quat_to_mat, quat_to_rot6d
from sim2real.sim.core.task import PhysicsBatch, StepResult

PEG_HALF_WIDTH = 0.0125
PEG_HALF_LENGTH = 0.05
PEG_MASS = 0.1
CLEARANCE = 0.003
"""Hole width minus peg width (m): 1.5 mm each side."""
HOLE_HALF_WIDTH = PEG_HALF_WIDTH + CLEARANCE / 2
HOLE_DEPTH = 0.04
WALL_THICKNESS = 0.02
INSERT_DEPTH = 0.03
"""Success: the peg tip at least this far below the hole's rim, inside the hole."""
PEG_CENTER_IN_HAND = 0.062 + PEG_HALF_LENGTH
"""Peg centre along the hand's z axis: its top 2 mm below the hand's palm."""
PEG_TIP_BELOW_EE = PEG_CENTER_IN_HAND + PEG_HALF_LENGTH - C.FINGERTIP_OFFSET
HOLE_LOW = np.array([0.45, -0.15])
HOLE_HIGH = np.array([0.60, 0.15])
START_OFFSET_XY = 0.025
START_HEIGHT = (0.03, 0.06)
START_YAW = 0.1
GRASP_SQUEEZE = 2e-4
"""Each finger starts this far inside the peg (m): both pads touch from the first step, so
the 70 N grasp never pushes the peg from one side only."""
DROP_DISTANCE = 0.03
"""Peg displaced this far from its grasp position (m): it slipped out; the episode ends."""


class ArmPegInsert(ArmTask):
    """Reward ``-|hole - peg tip| + 2 * depth`` plus 1 on success; ends on success or a drop."""

    name: ClassVar[str] = "peg_insert"
    episode_seconds: ClassVar[float] = 8.0
    uses_gripper: ClassVar[bool] = False
    fixed_gripper_width: ClassVar[float] = 0.0
    task_options: ClassVar[tuple[str, ...]] = ("end_on_success",)
    """``end_on_success=False`` keeps the episode going after an insertion (a success
    classifier's positive frames come from holding the peg in the hole)."""

    def __init__(self, num_envs: int, action_mode: str | None = None, **options: Any) -> None:
        super().__init__(num_envs, action_mode, **options)
        self.holes = np.zeros((num_envs, 2))
        self.force_peak = np.zeros(num_envs)

    def add_scene(self, spec: mujoco.MjSpec) -> None:
        box = mujoco.mjtGeom.mjGEOM_BOX
        hole = spec.worldbody.add_body(name="hole", mocap=True, pos=[0.5, 0.0, 0.0])
        h, t, d = HOLE_HALF_WIDTH, WALL_THICKNESS, HOLE_DEPTH
        for name, pos, size in (
            ("hole_wall_px", [h + t / 2, 0, d / 2], [t / 2, h + t, d / 2]),
            ("hole_wall_nx", [-h - t / 2, 0, d / 2], [t / 2, h + t, d / 2]),
            ("hole_wall_py", [0, h + t / 2, d / 2], [h, t / 2, d / 2]),
            ("hole_wall_ny", [0, -h - t / 2, d / 2], [h, t / 2, d / 2]),
        ):
            hole.add_geom(
                name=name,
                type=box,
                pos=pos,
                size=size,
                contype=1,
                conaffinity=0,
                friction=[0.5, 0.005, 0.0001],
                rgba=[0.35, 0.45, 0.6, 1],
            )
        hole.add_site(name="hole_top", pos=[0, 0, d], size=[0.005, 0, 0])

        peg = spec.worldbody.add_body(name="peg", pos=[0.3, 0.0, 0.3])
        peg.add_freejoint(name="peg")
        peg.add_geom(
            name="peg",
            type=box,
            size=[PEG_HALF_WIDTH, PEG_HALF_WIDTH, PEG_HALF_LENGTH],
            mass=PEG_MASS,
            contype=4,
            conaffinity=7,
            condim=4,
            friction=[1.0, 0.01, 0.0002],
            rgba=[0.9, 0.6, 0.15, 1],
        )
        # The peg's frame is the hand's (z along the fingers, pointing down when held), so
        # the tip that goes into the hole is at +z.
        peg.add_site(name="peg_tip", pos=[0, 0, PEG_HALF_LENGTH], size=[0.004, 0, 0])
        spec.add_sensor(
            name="peg_tip_pos",
            type=mujoco.mjtSensor.mjSENS_FRAMEPOS,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname="peg_tip",
        )
        spec.add_sensor(
            name="peg_quat", type=mujoco.mjtSensor.mjSENS_FRAMEQUAT, objtype=mujoco.mjtObj.mjOBJ_BODY, objname="peg"
        )
        add_net_contact_sensor(spec, "peg_hole_contact", "peg", "hole")

    def on_model(self, model: mujoco.MjModel) -> None:
        self.peg_qpos = int(model.jnt_qposadr[model.joint("peg").id])

    # -- observations ----------------------------------------------------------
    def task_observation_layout(self) -> list[tuple[str, int]]:
        return [("hole_rel_peg_tip", 3), ("peg_rot6d", 6), ("peg_tip_rel_ee", 3)]

    def task_observation_noise(self) -> dict[str, float]:
        return {"hole_rel_peg_tip": 0.001, "peg_rot6d": 0.005, "peg_tip_rel_ee": 0.001}

    def hole_top(self, phys: PhysicsBatch) -> np.ndarray:
        return phys.mocap_pos[:, 0] + np.array([0.0, 0.0, HOLE_DEPTH])

    def task_observe(self, phys: PhysicsBatch) -> np.ndarray:
        tip = self.sensor(phys, "peg_tip_pos")
        return np.concatenate(
            [self.hole_top(phys) - tip, quat_to_rot6d(self.sensor(phys, "peg_quat")), tip - self.ee_pos(phys)], axis=1
        )

    def task_privileged_layout(self) -> list[tuple[str, int]]:
        return [("hole_contact_count", 1), ("hole_contact_force", 3)]

    def task_privileged(self, phys: PhysicsBatch) -> np.ndarray:
        return self.sensor(phys, "peg_hole_contact")

    # -- episode -----------------------------------------------------------------
    def reset_task(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        hole = rng.uniform(HOLE_LOW, HOLE_HIGH)
        data.mocap_pos[0] = [hole[0], hole[1], 0.0]
        self.holes[env_id] = hole
        self.force_peak[env_id] = 0.0
        tip = np.array(
            [*(hole + rng.uniform(-START_OFFSET_XY, START_OFFSET_XY, 2)), HOLE_DEPTH + rng.uniform(*START_HEIGHT)]
        )
        yaw = rng.uniform(-START_YAW, START_YAW)
        quat = quat_mul(np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]), REF_QUAT)
        q = solve_ik(model, data, tip + np.array([0.0, 0.0, PEG_TIP_BELOW_EE]), quat)
        # Exactly the IK solution (no joint noise): the peg must start between the pads.
        self.place_arm(data, rng, qpos=q, finger=PEG_HALF_WIDTH - GRASP_SQUEEZE, noise=False)
        place_in_hand(model, data, self.peg_qpos)

    def reset_scene(self, env_id: int, model: mujoco.MjModel, data: mujoco.MjData, rng: np.random.Generator) -> None:
        super().reset_scene(env_id, model, data, rng)
        place_in_hand(model, data, self.peg_qpos)  # the person hands the peg back
        self.force_peak[env_id] = 0.0

    def evaluate_task(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        to_hole = self.hole_top(phys) - self.sensor(phys, "peg_tip_pos")
        inside = np.all(np.abs(to_hole[:, :2]) < HOLE_HALF_WIDTH, axis=1)
        depth = np.where(inside, np.maximum(to_hole[:, 2], 0.0), 0.0)
        success = depth >= INSERT_DEPTH
        # Where the tip would be in a firm grasp: along the fingers (the ee site's z axis).
        held_tip = self.ee_pos(phys) + quat_to_mat(self.ee_quat(phys))[:, :, 2] * PEG_TIP_BELOW_EE
        dropped = np.linalg.norm(self.sensor(phys, "peg_tip_pos") - held_tip, axis=1) > DROP_DISTANCE
        force = np.linalg.norm(self.sensor(phys, "peg_hole_contact")[:, 1:4], axis=1)
        self.force_peak = np.maximum(self.force_peak, force)
        dist = np.linalg.norm(to_hole, axis=1)
        reward = -dist + 2.0 * depth + 1.0 * success
        return StepResult(
            reward=reward,
            terminated=(success & bool(self.options.get("end_on_success", True))) | dropped,
            success=success,
            metrics={
                "ee_distance": dist,
                "insertion_depth": depth,
                "contact_force": force,
                "contact_force_peak": self.force_peak.copy(),
            },
        )

    def task_state(self, env_id: int) -> dict[str, Any]:
        return {"hole": self.holes[env_id].round(4).tolist()}


def place_in_hand(model: mujoco.MjModel, data: mujoco.MjData, peg_qpos: int) -> None:
    """Put the peg's free joint where the closed gripper holds it (after the arm's qpos is set)."""
    mujoco.mj_kinematics(model, data)
    hand = model.body("hand").id
    rot = data.xmat[hand].reshape(3, 3)
    data.qpos[peg_qpos : peg_qpos + 3] = data.xpos[hand] + rot[:, 2] * PEG_CENTER_IN_HAND
    data.qpos[peg_qpos + 3 : peg_qpos + 7] = data.xquat[hand]
    data.qvel[:] = 0.0
