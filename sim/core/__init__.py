"""Core of the simulation layer: the task contract, engine, envs, registry."""
