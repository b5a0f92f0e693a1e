"""System identification: fit the simulator's physical parameters (mass, servo gains,
friction, thrust, latency) to a recorded run (``sim2real sysid``; docs/transfer.md)."""
