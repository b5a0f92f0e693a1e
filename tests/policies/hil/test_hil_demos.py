"""Demonstrations in HDF5: round trip, malformed files rejected, and a recording killed
with SIGKILL mid-way leaves every finished episode readable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from sim2real.errors import Sim2RealError
from sim2real.policies.hil.config import EnvConfig
from sim2real.policies.hil.demos import episode_files, load_demo_dir, read_episode, record_demos, write_episode
from sim2real.policies.hil.devices import ScriptedOperator
from sim2real.policies.hil.env import HilEnv


def fake_episode(T: int = 4, success_at: int | None = 2):
    obs = [{"state": np.full(3, t, np.float32), "wrist": np.full((3, 8, 8), t, np.uint8)} for t in range(T + 1)]
    success = np.zeros(T, bool)
    if success_at is not None:
        success[success_at:] = True
    steps = {"action": np.zeros((T, 2), np.float32), "reward": success.astype(np.float32),
             "terminated": np.zeros(T, bool), "truncated": np.eye(1, T, T - 1, dtype=bool)[0],
             "intervened": np.ones(T, bool), "success": success}
    return obs, steps


def test_round_trip_and_demo_buffer_cut_at_first_success(tmp_path: Path) -> None:
    obs, steps = fake_episode(T=5, success_at=2)
    write_episode(tmp_path / "episode_000000.h5", obs, steps, {"task": "X", "success": True})
    obs_back, steps_back, attrs = read_episode(tmp_path / "episode_000000.h5")
    np.testing.assert_array_equal(obs_back["wrist"][3], obs[3]["wrist"])
    np.testing.assert_array_equal(steps_back["success"], steps["success"])
    assert attrs["task"] == "X" and attrs["schema_version"] == 1
    demos, used = load_demo_dir(tmp_path)
    # Held-success steps after the first success are not task transitions.
    assert used == 1 and len(demos["reward"]) == 3 and demos["terminated"].tolist() == [False, False, True]
    assert demos["intervened"].all()
    np.testing.assert_array_equal(demos["next_obs.state"][0], obs[1]["state"])


def test_failed_and_malformed_episodes(tmp_path: Path) -> None:
    obs, steps = fake_episode(success_at=None)
    write_episode(tmp_path / "episode_000000.h5", obs, steps, {"task": "X", "success": False})
    assert load_demo_dir(tmp_path) == (None, 0)
    assert load_demo_dir(tmp_path, only_success=False)[1] == 1
    (tmp_path / "episode_000001.h5").write_bytes(b"garbage")
    with pytest.raises(Sim2RealError):
        load_demo_dir(tmp_path, only_success=False)
    with h5py.File(tmp_path / "episode_000001.h5", "w") as f:
        f.attrs["schema_version"] = 1
        f.attrs["steps"] = 3
        f.create_dataset("obs/state", data=np.full((4, 3), np.nan, np.float32))
        for name in ("action", "reward"):
            f.create_dataset(name, data=np.zeros((3, 2) if name == "action" else 3, np.float32))
        for name in ("terminated", "truncated", "intervened", "success"):
            f.create_dataset(name, data=np.zeros(3, bool))
    with pytest.raises(Sim2RealError, match="NaN"):
        read_episode(tmp_path / "episode_000001.h5")
    with pytest.raises(Sim2RealError):
        write_episode(tmp_path / "episode_000002.h5", obs[:-1], steps, {})  # one observation short
    assert not (tmp_path / "episode_000002.h5").exists()


def test_record_demos_with_the_scripted_operator(tmp_path: Path) -> None:
    env = HilEnv(EnvConfig(obs_mode="state"), seed=1)
    operator = ScriptedOperator(env.obs_layout, env.action_layout, always=True, noise=0.01)
    assert record_demos(env, operator, tmp_path, 2, log=lambda s: None) == 2
    assert record_demos(env, operator, tmp_path, 3, log=lambda s: None) == 3  # continues
    demos, used = load_demo_dir(tmp_path)
    assert used == 3 and demos["reward"].sum() == 3 and demos["terminated"].sum() == 3
    env.close()


def test_demos_survive_kill_9_mid_recording(tmp_path: Path) -> None:
    out = tmp_path / "demos"
    cmd = [sys.executable, "-m", "sim2real", "hil", "record-demos", "--obs-mode", "state", "--n", "500",
           "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(episode_files(out)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        # Kill while it is writing or stepping: whatever it was doing, finished files stay whole.
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    files = episode_files(out)
    assert len(files) >= 4
    for path in files:
        read_episode(path)  # raises on a torn file
    _, used = load_demo_dir(out)
    assert used == len(episode_files(out)) == len(files)
    assert not any(p.name.startswith(".tmp-") for p in out.iterdir())  # stale temporaries removed


def test_hold_success_records_positive_frames_for_the_classifier(tmp_path: Path) -> None:
    env = HilEnv(EnvConfig(obs_mode="state", end_on_success=False), seed=2)
    operator = ScriptedOperator(env.obs_layout, env.action_layout, always=True, noise=0.0)
    assert record_demos(env, operator, tmp_path, 1, hold_steps=6, log=lambda s: None) == 1
    _, steps, attrs = read_episode(episode_files(tmp_path)[0])
    first = int(np.argmax(steps["success"]))
    assert attrs["success"] and len(steps["success"]) == first + 7 and steps["success"][first:].sum() >= 5
    demos, _ = load_demo_dir(tmp_path)
    assert len(demos["reward"]) == first + 1 and demos["terminated"][-1]  # the task ends at the first success
    with pytest.raises(Sim2RealError, match="end_on_success"):
        record_demos(HilEnv(EnvConfig(obs_mode="state")), operator, tmp_path, 2, hold_steps=3)
    env.close()
