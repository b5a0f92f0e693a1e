"""`make baselines` / `python -m sim2real.baselines`: dependency waves (students after
their teachers, scripted baselines after what they copy), checked before anything runs."""

from __future__ import annotations

import pytest

from sim2real import baselines


def test_waves_put_students_after_teachers_and_scripted_last() -> None:
    tasks = baselines.available()
    waves = baselines.waves(list(reversed(tasks)))
    assert sorted(t for wave in waves for t in wave) == sorted(tasks)
    assert waves[-1] == list(baselines.SCRIPTED)
    assert "QuadrupedVelocityStudent" in waves[1] and "QuadrupedVelocityTeacher" in waves[0]
    assert baselines.waves(["ArmReach"]) == [["ArmReach"]]


def test_unknown_task_stops_before_anything_starts(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        baselines.main(["NoSuchTask", "--ray"])
    assert "no baseline config for NoSuchTask" in capsys.readouterr().err


def test_a_baseline_whose_reward_model_is_absent_is_refused_by_name_and_skipped_otherwise(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    folder = tmp_path / "Reach-vlm"
    folder.mkdir()
    (folder / "config.yaml").write_text(
        "task: sim2real/ArmReach-v0\nreward:\n  source: clip\n  clip_weights: models/no-such-reward-model\n"
    )
    monkeypatch.setattr(baselines, "BASELINES_DIR", tmp_path)
    monkeypatch.setattr(baselines, "SCRIPTED", {})
    monkeypatch.chdir(tmp_path)
    reason = baselines.missing_reward_model("Reach-vlm")
    assert reason is not None and "models/no-such-reward-model" in reason and "reward_model.json" in reason
    with pytest.raises(SystemExit):
        baselines.main(["Reach-vlm"])
    assert "not here" in capsys.readouterr().err
    assert baselines.main([]) == 0  # the only baseline is skipped: nothing to build
    assert "skipped: Reach-vlm" in capsys.readouterr().err
    (tmp_path / "models" / "no-such-reward-model").mkdir(parents=True)
    assert baselines.missing_reward_model("Reach-vlm") is None
