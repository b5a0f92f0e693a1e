"""The explicit task registry: robot packages list their tasks, nothing is discovered.

Names accepted everywhere: the Gymnasium id ``sim2real/ArmReach-v0``, the short
``ArmReach`` and ``arm/reach``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim2real.sim.core.errors import UnknownTaskError
from sim2real.sim.core.task import Task

if TYPE_CHECKING:  # the environments import the registry's tasks
    from sim2real.sim.core.env import SimEnv
    from sim2real.sim.core.vec_env import BatchedVecEnv

NAMESPACE = "sim2real"


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def gym_id(task_cls: type[Task]) -> str:
    return f"{NAMESPACE}/{camel(task_cls.robot)}{camel(task_cls.name)}-v0"


@dataclass(frozen=True)
class TaskInfo:
    """What ``sim2real list`` shows about a registered task."""

    id: str
    robot: str
    name: str
    action_modes: tuple[str, ...]
    control_hz: float
    physics_hz: float
    obs_size: int
    """Observation size in the default (first) action mode."""
    action_sizes: dict[str, int]
    obs_sizes: dict[str, int]
    """Observation size per action mode (reference modes may add a clock)."""


class Registry:
    """Maps names to task classes."""

    def __init__(self) -> None:
        self._tasks: dict[str, type[Task]] = {}

    def register(self, task_cls: type[Task]) -> None:
        key = gym_id(task_cls)
        if key in self._tasks and self._tasks[key] is not task_cls:
            raise ValueError(f"task id {key} registered twice ({self._tasks[key]} and {task_cls})")
        self._tasks[key] = task_cls

    def ids(self) -> list[str]:
        return sorted(self._tasks)

    def get(self, name: str) -> type[Task]:
        for candidate in self._aliases(name):
            if candidate in self._tasks:
                return self._tasks[candidate]
        raise UnknownTaskError(name, self.ids())

    def _aliases(self, name: str) -> list[str]:
        out = [name]
        if "/" in name and not name.startswith(NAMESPACE + "/"):
            robot, task = name.split("/", 1)
            out.append(f"{NAMESPACE}/{camel(robot)}{camel(task)}-v0")
        if not name.startswith(NAMESPACE + "/"):
            out.append(f"{NAMESPACE}/{name}-v0")
            out.append(f"{NAMESPACE}/{name}")
        return out

    def info(self, task_cls: type[Task]) -> TaskInfo:
        sizes: dict[str, int] = {}
        obs_sizes: dict[str, int] = {}
        for mode in task_cls.action_modes:
            task = task_cls(num_envs=1, action_mode=mode)
            sizes[mode] = sum(n for _, n in task.action_layout())
            obs_sizes[mode] = sum(n for _, n in task.observation_layout())
        return TaskInfo(
            id=gym_id(task_cls),
            robot=task_cls.robot,
            name=task_cls.name,
            action_modes=task_cls.action_modes,
            control_hz=round(1.0 / task_cls.control_dt, 3),
            physics_hz=round(1.0 / task_cls.physics_dt, 3),
            obs_size=obs_sizes[task_cls.action_modes[0]],
            action_sizes=sizes,
            obs_sizes=obs_sizes,
        )

    def __iter__(self):
        return iter(self._tasks[k] for k in self.ids())


REGISTRY = Registry()


def make(name: str, **kwargs: Any) -> SimEnv:
    """Create one environment: ``make("ArmReach", dr="train", render_mode="rgb_array")``."""
    from sim2real.sim.core.env import SimEnv

    return SimEnv(REGISTRY.get(name), **kwargs)


def make_vec(name: str, num_envs: int, **kwargs: Any) -> BatchedVecEnv:
    """Create a batched SB3 ``VecEnv`` of ``num_envs`` environments."""
    from sim2real.sim.core.vec_env import BatchedVecEnv

    return BatchedVecEnv(REGISTRY.get(name), num_envs, **kwargs)
