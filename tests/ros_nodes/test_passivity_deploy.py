"""The passivity filter in the ROS 2 arm deployment (ee_impedance commands): an
energy-pumping policy runs through the real node graph over DDS on loopback, once
with the filter in the safety chain and once without. The simulated arm keeps its
own exact energy tank (filter off inside the simulator), which is the ground truth."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ros_harness import export_tiny_policy, unique_domain_id, wait_for

from sim2real.ros_nodes.graph import InProcessGraph, config_dir, load_config, merge

NODES = ["sim_bridge", "safety_filter", "policy"]


class EnergyPump(torch.nn.Module):
    """Stiffest spring, setpoint slammed back and forth: each action reverses the last
    one (read from the observation's last_action block, the final 13 elements)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        last = obs[:, -13:]
        twist = -torch.sign(last[:, :6] + 0.1)
        return torch.cat([twist, torch.ones_like(last[:, 6:12]), torch.zeros_like(last[:, 12:])], dim=1)


@pytest.fixture(scope="module")
def pump_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_tiny_policy("ArmReach", "ee_impedance", tmp_path_factory.mktemp("pump"), actor=EnergyPump())


def _run(policy: Path, passivity: bool, commands: int = 50) -> tuple[dict, dict]:
    params = merge(load_config(config_dir() / "arm.yaml"), {
        "policy": {"policy": str(policy), "action_mode": "ee_impedance"},
        "sim_bridge": {"action_mode": "ee_impedance"},
        "safety_filter": {"action_mode": "ee_impedance", "passivity_filter": passivity},
    })
    g = InProcessGraph(params, NODES, unique_domain_id())
    try:
        g.start()
        bridge = g.nodes["sim_bridge"]
        assert wait_for(lambda: bridge.commands_received >= commands, 30.0, step=0.05), bridge.summary()
        assert g.error is None
        return dict(bridge.robot.metric_totals), g.nodes["safety_filter"].summary()
    finally:
        g.shutdown()


@pytest.mark.heavy
def test_passivity_filter_stops_a_policy_pumping_energy_into_the_arm(pump_policy: Path) -> None:
    unfiltered, safety_off = _run(pump_policy, passivity=False)
    filtered, safety_on = _run(pump_policy, passivity=True)
    # Without the filter the policy overdraws the (simulator's exact) tank by joules.
    assert unfiltered["energy_violation"] > 1.0, unfiltered
    assert "tank_energy" not in safety_off
    # With it, the filter acts on most commands, its own tank never drops below T_min,
    # and what the simulated arm receives stays (almost) within the exact tank.
    assert safety_on["acted_passivity"] >= 10 and safety_on["passivity_interventions"] >= 10, safety_on
    assert safety_on["tank_energy"] >= 0.05
    assert filtered["energy_violation"] < 0.05 * unfiltered["energy_violation"], (filtered, unfiltered)
    assert filtered["energy_injected"] < unfiltered["energy_injected"]
