"""SAC (SB3) built from the training config."""

from sim2real.policies.sac.sac import build_sac

__all__ = ["build_sac"]
