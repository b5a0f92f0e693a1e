"""The Lagrange multiplier both constrained algorithms (``ppo_lag``, ``sac_lag``) share.

PID update on the mean cost of recent training episodes (Stooke, Achiam and Abbeel,
"Responsive Safety in RL by PID Lagrangian Methods", ICML 2020)::

    e = J_c - d,   I <- max(0, I + e),   lambda = clip(Kp e + Ki I + Kd max(0, J_c - J_c_prev), 0, lambda_max)

``Kp = Kd = 0`` is the plain gradient-ascent Lagrangian with step ``Ki``. The state is
plain attributes, so SB3's ``save``/``load`` carries it through checkpoints.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sim2real.policies.config import LagrangianConfig


def multiplier_kwargs(config: LagrangianConfig) -> dict[str, float]:
    """The multiplier's settings from a run's ``lagrangian`` block, as the constrained
    algorithms' keyword arguments (:meth:`LagrangeMultiplier.init_multiplier`'s)."""
    return {"cost_limit": config.cost_limit, "lambda_init": config.lambda_init, "lambda_lr": config.lambda_lr,
            "lambda_kp": config.lambda_kp, "lambda_kd": config.lambda_kd, "lambda_max": config.lambda_max}


class LagrangeMultiplier:
    """Mixin: the multiplier's state, its PID step and the progress-bar text."""

    def init_multiplier(
        self, cost_limit: float, lambda_init: float, lambda_lr: float, lambda_kp: float, lambda_kd: float,
        lambda_max: float,
    ) -> None:
        self.cost_limit = float(cost_limit)
        self.lagrange_multiplier = float(lambda_init)
        self.lambda_lr, self.lambda_kp, self.lambda_kd = lambda_lr, lambda_kp, lambda_kd
        self.lambda_max = lambda_max
        self.pid_integral = float(lambda_init) / lambda_lr if lambda_lr > 0 else 0.0
        self.previous_episode_cost = 0.0
        self.ep_cost_buffer: deque[float] = deque(maxlen=100)

    def update_multiplier(self, episode_cost: float) -> float:
        """One PID step of the multiplier from the mean recent episode cost."""
        error = episode_cost - self.cost_limit
        self.pid_integral = max(0.0, self.pid_integral + error)
        derivative = max(0.0, episode_cost - self.previous_episode_cost)
        self.previous_episode_cost = episode_cost
        value = self.lambda_kp * error + self.lambda_lr * self.pid_integral + self.lambda_kd * derivative
        self.lagrange_multiplier = float(np.clip(value, 0.0, self.lambda_max))
        return self.lagrange_multiplier

    def progress_fields(self) -> str:
        """What the progress bar shows next to return and success."""
        cost = np.mean(self.ep_cost_buffer) if self.ep_cost_buffer else float("nan")
        return f"cost {cost:.3g}/{self.cost_limit:.3g} lambda {self.lagrange_multiplier:.3g}"
