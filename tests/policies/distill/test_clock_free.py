"""The clock-free copy of a gait_residual policy: a tiny distillation from the shipped
QuadrupedVelocity runs end to end (the teacher, acting through the conversion of its
targets, walks its round without a fall), and the export is a joint_pos policy with a
whole-frame history and no clock."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim2real.policies import BASELINES_DIR
from sim2real.policies.deploy import OnnxPolicy
from sim2real.policies.distill.clock_free import (
    HISTORY_BLOCKS,
    STUDENT_SCALE,
    ClockFreeConfig,
    distill_clock_free,
    export_student,
)


@pytest.mark.heavy
def test_a_tiny_distillation_exports_a_clock_free_joint_pos_policy(tmp_path: Path) -> None:
    lines: list[str] = []
    cfg = ClockFreeConfig(teacher=str(BASELINES_DIR / "QuadrupedVelocity"), n_envs=4, rollout_steps=25,
                          iterations=2, epochs=1, hidden=(32,))
    student, options = distill_clock_free(cfg, log=lines.append)
    assert len(lines) == 2 and "0 falls" in lines[0]  # the teacher drove the first round without a fall
    assert options["action_scale"] == STUDENT_SCALE and options["history_blocks"] == HISTORY_BLOCKS
    export_student(student, options, tmp_path, {"config": "tiny"})
    policy = OnnxPolicy(tmp_path)
    assert policy.action_mode == "joint_pos" and "gait_clock" not in dict(policy.observation_layout)
    assert policy.obs_size == 48 * (cfg.history_steps + 1)
    assert policy.metadata["verification"]["max_abs_diff"] <= 1e-5
    assert np.all(np.abs(policy(np.zeros((2, policy.obs_size), np.float32))) <= 1.0)


def test_another_kind_of_teacher_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a gait_residual QuadrupedVelocity"):
        distill_clock_free(ClockFreeConfig(teacher=str(BASELINES_DIR / "ArmReach"), iterations=1))
