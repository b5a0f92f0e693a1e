"""Rebuilding a policy's observation from a robot's measurements.

What the deployment knows of each robot (joints, streams, observable blocks, how a
measurement is written back into the simulator's state) is the robot's own
(``sim/<robot>/deployment.py``, through :func:`sim2real.sim.robot_deployment`).

The observation is *not* recomputed here: :class:`ObservationBuilder` writes the
measurements into a one-environment :class:`~sim2real.sim.core.task.PhysicsBatch`
and calls the task's own ``observe`` (the code the policy was trained on), so the
deployed observation cannot drift from the simulated one.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection
from typing import Any

import mujoco
import numpy as np

from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.core.task import PhysicsBatch, Task

_DEPLOY_MODELS: weakref.WeakKeyDictionary[Task, mujoco.MjModel] = weakref.WeakKeyDictionary()
"""The model :func:`make_task` built for each task it made (forgotten with the task)."""


def make_task(task: str, action_mode: str, options: dict[str, Any] | None = None) -> Task:
    """One-environment task instance with its model built (sizes, sensor slices);
    :func:`deploy_model` returns that model."""
    task_cls = REGISTRY.get(task)
    instance = task_cls(num_envs=1, action_mode=action_mode, **(options or {}))
    _DEPLOY_MODELS[instance] = instance.build_model()
    return instance


def deploy_model(task: Task) -> mujoco.MjModel:
    """The model :func:`make_task` built for ``task`` (a task's model is built once).

    Raises:
        RuntimeError: ``task`` was not made by :func:`make_task`.
    """
    model = _DEPLOY_MODELS.get(task)
    if model is None:
        raise RuntimeError(f"{task.robot}/{task.name}: make the task with make_task(), which builds its model")
    return model


class ObservationBuilder:
    """Measurements -> the task's observation, through ``task.observe``.

    Args:
        robot: The robot's deployment name.
        task: The task (made by :func:`make_task`).
        last_action_size: Size of the ``last_action`` block's action.
        blocks: The observation blocks the caller reads (None: all of them). Only these
            must have a source; the others come out of ``observe`` as whatever the
            unmeasured state gives and must not be used (HIL-SERL on a real arm reads
            only the arm's proprioception and takes the scene from its cameras).

    Raises:
        ConfigError: the task is not the robot's, or its observation has blocks no
            stream provides; a policy fed zeros there would act on an observation it
            never saw in training.
    """

    def __init__(self, robot: str, task: Task, last_action_size: int, blocks: Collection[str] | None = None) -> None:
        deployment = robot_deployment(robot)
        if not isinstance(task, deployment.task_class):
            raise ConfigError("task", f"{task.robot}/{task.name} is not a {robot} task")
        unknown = [b for b in deployment.unobservable(task) if blocks is None or b in blocks]
        if unknown:
            raise ConfigError(
                "policy",
                f"{task.robot}/{task.name}: observation blocks {unknown} have no ROS 2 source yet "
                f"(rebuildable: {sorted(deployment.observable)}); this policy cannot be deployed as is",
            )
        self.robot = robot
        self.task = task
        model = deploy_model(task)
        self.model = model
        self.layout = task.observation_layout()
        self.obs_size = sum(n for _, n in self.layout)
        self.phys = PhysicsBatch(
            qpos=np.zeros((1, model.nq)), qvel=np.zeros((1, model.nv)), act=np.zeros((1, model.na)),
            sensordata=np.zeros((1, model.nsensordata)), mocap_pos=np.zeros((1, model.nmocap, 3)),
            mocap_quat=np.tile([1.0, 0, 0, 0], (1, model.nmocap, 1)), time=np.zeros(1),
            last_action=np.zeros((1, last_action_size)),
        )
        self._tick = 0
        self._required = deployment.required(task)
        self._write = deployment.state_writer(task, model)

    def missing(self, m: Measurements) -> list[str]:
        """Measurements the observation needs but has not received."""
        return [n for n in self._required if getattr(m, n) is None]

    def restart(self) -> None:
        """Start over as at an episode's start: the observation history (if the task
        keeps one) is forgotten, so a re-activated node does not act on a history
        from before its pause."""
        if self.task.history is not None:
            self.task.history.restart()

    def build(self, m: Measurements, last_action: np.ndarray) -> np.ndarray:
        """The observation ``[O]`` (call :meth:`missing` first)."""
        p = self.phys
        self._tick += 1
        p.time[0] = self._tick  # a fresh time: tasks cache derived state per time stamp
        p.last_action[0] = last_action
        self._write(p, m)
        obs = self.task.observe(p)
        self.task.record_observation(obs, p)
        return np.asarray(obs[0], dtype=np.float64)
