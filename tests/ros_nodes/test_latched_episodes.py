"""Episodes a simulated robot runs under a latched safety guard are the filter's, not the
policy's: the sim bridge counts them apart (ros_nodes/latched_episodes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ros_harness import unique_domain_id, wait_for
from test_command_authority import _trigger

from sim2real.ros_nodes.graph import InProcessGraph, config_dir, load_config, merge
from sim2real.ros_nodes.latched_episodes import LATCH_CARRY, under_latch


@pytest.mark.parametrize(("started", "latched", "held"), [
    (100.0, 0.0, False),                      # no latch
    (100.0, 99.0, True),                      # began after the latch
    (100.0, 100.0 + LATCH_CARRY, True),       # the reset just before a fall's latch
    (100.0, 100.0 + LATCH_CARRY + 0.01, False),  # latched during it: the policy's own failure
])
def test_an_episode_is_held_when_it_began_after_the_latch(started: float, latched: float, held: bool) -> None:
    assert under_latch(started, latched) is held


def test_episodes_behind_a_latched_e_stop_are_counted_apart_until_the_reset(tmp_path: Path) -> None:
    # The arm's 5 s episodes at 5x real time: one a second.
    params = merge(load_config(config_dir() / "arm.yaml"),
                   {"safety_filter": {"latch_file": str(tmp_path / "latch.json")},
                    "sim_bridge": {"real_time_factor": 5.0}})
    graph = InProcessGraph(params, ["sim_bridge", "safety_filter"], unique_domain_id())
    graph.start()
    try:
        bridge = graph.nodes["sim_bridge"]
        episodes = lambda: bridge.configured_robot().episodes  # noqa: E731
        assert wait_for(lambda: len(episodes()) >= 1, 20.0)
        ok, message = _trigger(graph, "/safety_filter/trip_estop")
        assert ok, message
        tripped = len(episodes())
        assert wait_for(lambda: len(episodes()) >= tripped + 3, 20.0)
        assert not any(e.under_latch for e in episodes()[:tripped])
        # The one running at the trip is counted (it began before); every later one is held.
        assert all(e.under_latch for e in episodes()[tripped + 1:tripped + 3])
        summary = bridge.summary()
        held = sum(e.under_latch for e in episodes())
        assert summary["episodes_under_latch"] == held >= 2
        assert summary["episodes"] == len(episodes()) - held

        ok, message = _trigger(graph, "/safety_filter/reset")
        assert ok, message
        assert wait_for(lambda: graph.nodes["safety_filter"].latched_at == 0.0, 5.0)
        assert wait_for(lambda: bridge.filter_latch.latched_at == 0.0, 5.0), "the reset did not reach the bridge"
        reset = len(episodes())
        assert wait_for(lambda: len(episodes()) >= reset + 2, 20.0)
        assert not episodes()[reset + 1].under_latch  # began after the reset: the policy's again
    finally:
        graph.shutdown()
