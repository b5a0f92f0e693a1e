"""The quadruped and the drone end to end through their own protocols: the shipped
policy, the safety filter and the hardware bridge against the Go2's low-level DDS and the
Crazyflie's CRTP emulators (``sim2real deploy --backend real --emulate``), each doing what
it does in simulation: the Go2 walks at the commanded velocity, the Crazyflie hovers at
its goal. Slow (a real-time run each, one process per node for the Go2)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ros_harness import unique_domain_id

from sim2real.ros_nodes.deployment import DeployOptions, run_deployment

pytestmark = pytest.mark.slow


def test_the_go2_walks_at_the_commanded_velocity_over_its_low_level_dds() -> None:
    summary = run_deployment(DeployOptions(robot="quadruped", backend="real", emulate=True, duration=20.0,
                                           domain_id=unique_domain_id()))
    hw, walk = summary["hardware"], summary["task_success"]
    assert summary["executor"] == "one process per node"  # the 2 ms writer gets its own interpreter
    assert hw["phase"] == "enabled" and hw["preflight"] == "PASS", hw
    assert walk["falls"] == 0 and walk["walking_s"] > 5, walk
    assert abs(walk["mean_vx"] - walk["cmd_vel"][0]) < 0.15 and walk["velocity_error_rms"] < 0.25, walk
    assert summary["emulator"]["commands_rejected"] == {}, summary["emulator"]
    # At the end the bridge lay it down (no fall: falls count in the window), left it damping
    # and handed it back to the sport mode it found, which owns the motors again.
    assert summary["emulator"]["sport_mode"] == "normal"
    assert summary["emulator"]["last_command"] is None, summary["emulator"]["last_command"]


def test_the_crazyflie_hovers_through_cflib() -> None:
    summary = run_deployment(DeployOptions(robot="drone", backend="real", emulate=True, duration=15.0,
                                           domain_id=unique_domain_id()))
    hw, success = summary["hardware"], summary["task_success"]
    assert hw["preflight"] == "PASS" and hw["commands_sent"] > 300, hw
    assert success["episodes"] >= 1 and success["successes"] == success["episodes"], summary
    assert summary["emulator"]["firmware"]["watchdog_cutoffs"] == 0 and summary["emulator"]["crashes"] == 0


def test_an_imported_policy_runs_in_simulation_and_its_gains_reach_the_go2s_motors(tmp_path: Path) -> None:
    """An rl_sar policy imported with kp 40, kd 1 (an untrained network: what is checked is
    the path, not the gait) through the simulated graph and the Go2 emulator's LowCmd frames."""
    from sim2real.bench.imported import stand_in

    policy = str(stand_in(tmp_path, kp=40.0, kd=1.0))
    sim = run_deployment(DeployOptions(robot="quadruped", policy=policy, duration=4.0, domain_id=unique_domain_id()))
    assert sim["interventions"]["filter_steps"] > 50 and sim["interventions"]["rejected_commands"] == 0, sim
    real = run_deployment(DeployOptions(robot="quadruped", backend="real", emulate=True, policy=policy,
                                        duration=8.0, domain_id=unique_domain_id()))
    assert real["hardware"]["preflight"] == "PASS", real["hardware"]
    assert real["emulator"]["gains_seen"].get("kp=40 kd=1", 0) > 50, real["emulator"]["gains_seen"]
