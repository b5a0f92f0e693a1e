"""sim2real.policies: learning algorithms, trained policies, classical controllers.

Uses ``sim2real.sim``; never imports ROS. Layout (one folder per algorithm, as
in Stable-Baselines3; policy, algorithm and data kept apart, as in LeRobot)::

    config.py, config_loading.py   typed training config and its YAML layers (configs/)
    ppo/ sac/ td3/                 one folder per algorithm (SB3 underneath)
    networks.py                    the policy as a torch module (normalization + actor)
    common/                        run folders, atomic writes, checkpoints, envs,
                                   evaluation, callbacks, progress bar
    trainer.py                     the training loop (`sim2real train`)
    loading.py                     a run folder's checkpoint -> policy (`sim2real eval`)
    export/                        ONNX / TorchScript + metadata (`sim2real export`)
    deploy.py                      OnnxPolicy: exported policies without torch
    plot.py                        learning curves (`sim2real plot`)
    classical/                     hand-written controllers

Nothing heavy is imported here (pathlib only), so ``import sim2real.policies.deploy`` stays free of torch.
"""

from pathlib import Path

BASELINES_DIR = Path(__file__).resolve().parent / "baselines"
"""The shipped policies, one folder per task (``make baselines`` rebuilds them)."""
