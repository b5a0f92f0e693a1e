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
