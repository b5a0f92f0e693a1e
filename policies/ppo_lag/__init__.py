"""PPO-Lagrangian: PPO under an expected-cost constraint, with a PID-controlled multiplier."""

from sim2real.policies.ppo_lag.build import build_ppo_lag
from sim2real.policies.ppo_lag.ppo_lag import PPOLagrangian

__all__ = ["PPOLagrangian", "build_ppo_lag"]
