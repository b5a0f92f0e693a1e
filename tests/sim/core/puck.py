"""A small real MuJoCo task for testing the engine: a puck pushed by two
motors toward a target on a plane (slide joints, friction, a mocap marker)."""

from __future__ import annotations

from typing import ClassVar

import mujoco
import numpy as np

from sim2real.sim.core.randomization import DomainRandomization
from sim2real.sim.core.task import PhysicsBatch, StepResult, Task

PUCK_XML = """
<mujoco model="puck">
  <option timestep="0.005"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1" friction="0.5 0.005 0.0001"/>
    <body name="puck" pos="0 0 0.02">
      <joint name="x" type="slide" axis="1 0 0" damping="0.5"/>
      <joint name="y" type="slide" axis="0 1 0" damping="0.5"/>
      <geom name="puck" type="cylinder" size="0.05 0.02" mass="0.5"/>
      <site name="puck" size="0.01"/>
    </body>
    <body name="target" mocap="true" pos="0.3 0 0.02">
      <geom type="sphere" size="0.02" contype="0" conaffinity="0" rgba="1 0 0 0.5"/>
    </body>
    <camera name="top" pos="0 0 2" xyaxes="1 0 0 0 1 0"/>
  </worldbody>
  <actuator>
    <motor name="fx" joint="x" gear="5" ctrlrange="-1 1"/>
    <motor name="fy" joint="y" gear="5" ctrlrange="-1 1"/>
  </actuator>
  <sensor>
    <framepos name="puck_pos" objtype="site" objname="puck"/>
  </sensor>
</mujoco>
"""


class PuckDR(DomainRandomization):
    @classmethod
    def train(cls) -> PuckDR:
        from sim2real.sim.core.randomization import Range

        return cls(
            friction=Range(0.5, 1.5),
            mass_scale=Range(0.8, 1.2),
            motor_strength=Range(0.8, 1.2),
            latency_steps=(0, 1),
            obs_noise_scale=1.0,
            push_velocity=Range(0.1, 0.2),
            push_interval_s=0.5,
        )


class PuckTask(Task):
    robot = "test"
    name = "puck"
    action_modes = ("force", "half_force")
    physics_dt = 0.005
    control_dt = 0.02
    episode_seconds = 1.0
    render_camera = "top"
    dr_class = PuckDR
    push_dofs: ClassVar[tuple[int, int]] = (0, 2)

    def __init__(self, num_envs: int, action_mode: str | None = None, **options) -> None:
        super().__init__(num_envs, action_mode, **options)
        self.target = np.zeros((num_envs, 2))

    def build_model(self) -> mujoco.MjModel:
        return mujoco.MjModel.from_xml_string(PUCK_XML)

    def observation_layout(self) -> list[tuple[str, int]]:
        return [("pos", 2), ("vel", 2), ("target", 2)]

    def action_layout(self) -> list[tuple[str, int]]:
        return [("force", 2)]

    def privileged_layout(self) -> list[tuple[str, int]]:
        return [("sensor_pos", 3)]

    def observation_noise(self) -> np.ndarray:
        return np.full(6, 0.01)

    def reset_env(self, env_id, model, data, rng) -> None:
        data.qpos[:] = rng.uniform(-0.1, 0.1, 2)
        self.target[env_id] = rng.uniform(-0.3, 0.3, 2)
        data.mocap_pos[0, :2] = self.target[env_id]

    def action_to_ctrl(self, action: np.ndarray, phys: PhysicsBatch) -> np.ndarray:
        return action * (0.5 if self.action_mode == "half_force" else 1.0)

    def observe(self, phys: PhysicsBatch) -> np.ndarray:
        return np.concatenate([phys.qpos, phys.qvel, self.target], axis=1)

    def privileged(self, phys: PhysicsBatch) -> np.ndarray:
        return phys.sensordata[:, :3].copy()

    def evaluate(self, phys: PhysicsBatch, action: np.ndarray) -> StepResult:
        dist = np.linalg.norm(phys.qpos - self.target, axis=1)
        return StepResult(
            reward=-dist,
            terminated=np.abs(phys.qpos).max(axis=1) > 1.5,
            success=dist < 0.02,
            metrics={"distance": dist},
        )

    def task_state(self, env_id: int) -> dict:
        return {"target": self.target[env_id].tolist()}
