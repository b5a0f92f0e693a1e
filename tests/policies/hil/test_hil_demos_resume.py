"""record-demos resumes without overwriting and refuses a count below 1 (issue 16, defect 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim2real.cli import main
from sim2real.errors import Sim2RealError
from sim2real.policies.hil.config import EnvConfig
from sim2real.policies.hil.demos import episode_files, read_episode, record_demos
from sim2real.policies.hil.devices import ScriptedOperator
from sim2real.policies.hil.env import HilEnv


def test_resuming_after_a_deleted_episode_keeps_every_other_episode(tmp_path: Path) -> None:
    env = HilEnv(EnvConfig(obs_mode="state"), seed=1)
    operator = ScriptedOperator(env.obs_layout, env.action_layout, always=True, noise=0.01)
    try:
        assert record_demos(env, operator, tmp_path, 3, log=lambda s: None) == 3
        kept = (tmp_path / "episode_000002.h5").read_bytes()
        (tmp_path / "episode_000001.h5").unlink()  # the operator discards a bad demonstration
        assert record_demos(env, operator, tmp_path, 3, log=lambda s: None) == 3
        with pytest.raises(Sim2RealError, match=">= 1"):
            record_demos(env, operator, tmp_path, 0, log=lambda s: None)
    finally:
        env.close()
    assert [p.name for p in episode_files(tmp_path)] == ["episode_000000.h5", "episode_000002.h5",
                                                         "episode_000003.h5"]
    assert (tmp_path / "episode_000002.h5").read_bytes() == kept
    seeds = {read_episode(p)[2]["seed"] for p in episode_files(tmp_path)}
    assert len(seeds) == 3  # the new episode is not a replay of an existing one


@pytest.mark.parametrize("n", ["-1", "0"])
def test_record_demos_with_n_below_1_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         n: str) -> None:
    code = main(["hil", "record-demos", "--obs-mode", "state", "--n", n, "--out", str(tmp_path / "demos")])
    captured = capsys.readouterr()
    assert code != 0 and captured.out == ""
    assert captured.err.strip().count("\n") == 0 and "--n must be >= 1" in captured.err
    assert not (tmp_path / "demos").exists()
