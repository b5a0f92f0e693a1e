"""Classical controllers: the demo's baselines and scripted operators for HIL RL."""
