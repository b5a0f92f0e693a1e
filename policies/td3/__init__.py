"""TD3 (SB3) built from the training config."""

from sim2real.policies.td3.td3 import build_td3

__all__ = ["build_td3"]
