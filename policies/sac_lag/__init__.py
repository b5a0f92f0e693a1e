"""SAC-Lagrangian: SAC on cost-relabelled rewards with a PID-controlled multiplier."""

from sim2real.policies.sac_lag.build import build_sac_lag
from sim2real.policies.sac_lag.sac_lag import CostReplayBuffer, SACLagrangian

__all__ = ["CostReplayBuffer", "SACLagrangian", "build_sac_lag"]
