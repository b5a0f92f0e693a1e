"""System identification from a bag recorded through the ROS 2 graph: the sim bridge's
robot runs under hidden values, the recorder writes MCAP, ``sim2real sysid`` fits it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ros_harness import deploy_json

SHARED = {"latency_steps": [1, 1], "push_velocity": [0.0, 0.0], "push_interval_s": 0.0, "com_shift": [0.0, 0.0],
          "motor_strength": [1.0, 1.0], "obs_noise_scale": 0.0}
CASES = {
    "quadruped": ({"mass_scale": 1.15, "pd_gain_scale": 0.85, "friction": 0.8, "trunk_added_mass": 0.0,
                   "joint_damping": 0.0, "armature_scale": 1.0},
                  {"mass": 1.15, "kp_scale": 0.85, "friction": 0.8}, 20),
    "drone": ({"mass_scale": 1.1, "thrust_coefficient": 0.9, "inertia_scale": 1.0, "torque_coefficient": 1.0,
               "motor_time_constant": 0.04, "wind_speed": 0.0, "drag_scale": 1.0},
              {"mass": 1.1, "thrust": 0.9}, 30),
}
"""Robot -> (the hidden randomization, every other field pinned; the values the fit
must find; seconds recorded)."""


@pytest.mark.slow
@pytest.mark.parametrize("robot", list(CASES))
def test_a_bag_recorded_through_the_graph_is_fitted_by_the_command(robot: str, tmp_path: Path) -> None:
    """``sim2real deploy --record`` with the sim bridge's robot under hidden values, then
    ``sim2real sysid``: the recorded topics, the driver's own command path, the latency
    through the graph; every fitted value within 10 %, the latency exact."""
    hidden_values, expected, seconds = CASES[robot]
    hidden = tmp_path / "hidden.yaml"
    hidden.write_text(yaml.safe_dump({**SHARED, **{k: [v, v] for k, v in hidden_values.items()}}))
    deploy_json("--robot", robot, "--duration", str(seconds), "--record", str(tmp_path / "bag"),
                "--set", f"sim_bridge.dr={hidden}")
    cmd = [sys.executable, "-m", "sim2real", "sysid", str(tmp_path / "bag"), "--robot", robot,
           "--out", str(tmp_path / "fitted.yaml"), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    fitted = json.loads(done.stdout)
    assert fitted["params"]["latency"] == 1
    for name, truth in expected.items():
        assert fitted["params"][name] == pytest.approx(truth, rel=0.1), fitted["params"]
    assert fitted["loss_fitted"] < 0.1 * fitted["loss_nominal"]
    assert (tmp_path / "fitted.yaml").is_file()
