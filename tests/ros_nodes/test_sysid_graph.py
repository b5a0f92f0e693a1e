"""System identification from a bag recorded through the ROS 2 graph: the sim bridge's
robot runs under hidden values, the recorder writes MCAP, ``sim2real sysid`` fits it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ros_harness import deploy_json


@pytest.mark.slow
def test_a_bag_recorded_through_the_graph_is_fitted_by_the_command(tmp_path: Path) -> None:
    """``sim2real deploy --record`` with the sim bridge's robot under hidden values, then
    ``sim2real sysid``: the recorded topics, the driver's own command path, the latency
    through the graph."""
    hidden = tmp_path / "hidden.yaml"
    hidden.write_text("mass_scale: [1.15, 1.15]\npd_gain_scale: [0.85, 0.85]\nfriction: [0.8, 0.8]\n"
                      "latency_steps: [1, 1]\npush_velocity: [0.0, 0.0]\npush_interval_s: 0.0\n"
                      "com_shift: [0.0, 0.0]\nmotor_strength: [1.0, 1.0]\ntrunk_added_mass: [0.0, 0.0]\n"
                      "joint_damping: [0.0, 0.0]\narmature_scale: [1.0, 1.0]\nobs_noise_scale: 0.0\n")
    deploy_json("--robot", "quadruped", "--duration", "20", "--record", str(tmp_path / "bag"),
                "--set", f"sim_bridge.dr={hidden}")
    cmd = [sys.executable, "-m", "sim2real", "sysid", str(tmp_path / "bag"), "--robot", "quadruped",
           "--out", str(tmp_path / "fitted.yaml"), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    fitted = json.loads(done.stdout)
    assert fitted["params"]["latency"] == 1
    for name, truth in {"mass": 1.15, "kp_scale": 0.85, "friction": 0.8}.items():
        assert fitted["params"][name] == pytest.approx(truth, rel=0.1), fitted["params"]
    assert (tmp_path / "fitted.yaml").is_file()
