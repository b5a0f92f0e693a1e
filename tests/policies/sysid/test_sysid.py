"""System identification recovers hidden parameters: a simulated robot with a heavier
trunk, softer servos, other friction and a command latency is recorded, and the fit
finds each within 10 % (latency exactly). Bags it cannot use are one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim2real.policies.safety.spaces import command_space
from sim2real.policies.sysid.fit import Replay, candidate_dr, fit, fitted_preset
from sim2real.policies.sysid.recording import Recording, RecordingError, read_recording
from sim2real.sim import robot_deployment
from sim2real.sim.core.engine import Engine
from sim2real.sim.core.registry import REGISTRY

QUAD = robot_deployment("quadruped")
HIDDEN = {"mass": 1.15, "kp_scale": 0.85}


def simulated_recording(seconds: float, latency: int) -> Recording:
    """The quadruped under hidden parameters, commanded smooth joint targets about its
    stance, recorded as the recorder would: a state per control period, each command
    arriving between two states."""
    mode, options = QUAD.driver_mode(QUAD.action_mode, {})
    task = REGISTRY.get(QUAD.task)(num_envs=1, action_mode=mode, **options)
    dr = candidate_dr(task.dr_class, list(HIDDEN), np.array(list(HIDDEN.values())))
    import dataclasses

    eng = Engine(task, dr=dataclasses.replace(dr, latency_steps=(latency, latency)), seed=3)
    eng.reset()
    model = eng.nominal
    qadr = [model.jnt_qposadr[model.joint(n).id] for n in QUAD.joints]
    vadr = [model.jnt_dofadr[model.joint(n).id] for n in QUAD.joints]
    space = command_space("quadruped", mode, options.get("action_scale"))
    dt, steps = float(task.control_dt), int(seconds / task.control_dt)
    phase = np.random.default_rng(0).uniform(0, 2 * np.pi, 12)
    qpos, qvel, commands = [], [], []
    for k in range(steps + 1):
        p = eng.phys
        qpos.append(np.concatenate([p.qpos[0, :7], p.qpos[0, qadr]]))
        qvel.append(np.concatenate([p.qvel[0, :6], p.qvel[0, vadr]]))
        if k < steps:
            action = 0.12 * np.sin(2 * np.pi * 1.5 * k * dt + phase)
            commands.append(space.action_to_command(action))
            eng.step(action[None])
    times = np.arange(steps + 1) * dt
    return Recording(times=times, qpos=np.array(qpos), qvel=np.array(qvel),
                     command_times=times[:-1] + 0.5 * dt, commands=np.array(commands))


@pytest.mark.heavy
def test_the_fit_recovers_hidden_mass_servo_gains_and_latency() -> None:
    rec = simulated_recording(6.0, latency=1)
    replay = Replay("quadruped", "", "", rec, window_steps=20, max_windows=6, batch=8, max_latency=2)
    try:
        result = fit(replay, list(HIDDEN), max_latency=2, iterations=40, seed=0)
    finally:
        replay.close()
    assert result.params["latency"] == 1
    for name, truth in HIDDEN.items():
        assert result.params[name] == pytest.approx(truth, rel=0.1), result.params
    assert result.loss_fitted < 0.05 * result.loss_nominal
    assert result.rms_fitted["joint_pos"] < result.rms_nominal["joint_pos"]
    preset = fitted_preset(replay.dr_class, result)
    assert preset["latency_steps"] == [1, 2]
    low, high = preset["mass_scale"]
    assert low < result.params["mass"] < high


def test_bags_the_fit_cannot_use_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="no such bag"):
        read_recording(tmp_path / "missing", QUAD.joints, True)
    (tmp_path / "junk.mcap").write_bytes(b"not a bag")
    with pytest.raises(RecordingError, match="cannot read the bag"):
        read_recording(tmp_path / "junk.mcap", QUAD.joints, True)
    short = simulated_recording(0.3, latency=0)
    with pytest.raises(RecordingError, match="undisturbed"):
        Replay("quadruped", "", "", short, window_steps=25, max_windows=6, batch=2, max_latency=0)
