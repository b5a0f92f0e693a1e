"""PPO: SB3's PPO with rsl_rl's KL-adaptive learning rate."""

from sim2real.policies.ppo.ppo import AdaptivePPO, build_ppo

__all__ = ["AdaptivePPO", "build_ppo"]
