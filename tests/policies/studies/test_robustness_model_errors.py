"""Model-error axes of the robustness study: the robot declares them (explicit values, not
a trained range), they run when named (``model``: all), hold their fixed fields, stay out
of the combined points and the feasible preset, and a short run of the shipped quadruped
policy over one of them writes its curve, tracking error included, and its picture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim2real.policies.studies import robustness as R
from sim2real.sim.core.errors import ConfigError
from sim2real.sim.core.randomization import Range
from sim2real.sim.core.registry import REGISTRY
from sim2real.sim.quadruped.randomize import QuadrupedRandomization as QUAD

ROOT = Path(__file__).resolve().parents[3]
SWEEPS = QUAD.model_sweeps()


def test_model_axes_run_when_named_at_their_own_values() -> None:
    train = QUAD.train()
    default, _ = R.axes_for(train)
    assert {a.name for a in default} == {n for n in R.AXES if n not in ("wind",)}  # unchanged: the trained axes
    axes, skipped = R.axes_for(train, ["model"])
    assert [a.name for a in axes] == list(SWEEPS) and not skipped and not any(a.trained for a in axes)
    damping = next(a for a in axes if a.name == "damping")
    assert damping.values[-1] + 0.05 == pytest.approx(2.0)  # a public Go2 model's 2 N m s/rad in all
    assert (damping.train_low, damping.train_high) == (0.0, 0.1)  # what training samples, shaded in the plot
    drone, skipped = R.axes_for(REGISTRY.get("DroneHover").dr_class.train(), ["damping", "mass"])
    assert [a.name for a in drone] == ["mass"] and "damping" in skipped
    with pytest.raises(ConfigError, match="unknown axis dampnig"):
        R.axes_for(train, ["dampnig"])


def test_a_sweep_point_holds_its_value_and_fixed_fields_and_is_never_widened() -> None:
    train = QUAD.train()
    axes, _ = R.axes_for(train, ["mass", "torsional_friction", "condim"])
    torsional, condim = axes[1], axes[2]
    point, at_4 = torsional.at(QUAD(), train, 2.5), condim.at(QUAD(), train, 4.0)
    wide = R.combined(train, axes, 3.0)
    assert isinstance(point, QUAD) and isinstance(at_4, QUAD) and isinstance(wide, QUAD)
    assert point.torsional_friction_scale == Range(2.5, 2.5) and point.foot_condim == 6  # torsion needs condim 4+
    assert at_4.foot_condim == 4
    assert wide.mass_scale != train.mass_scale and wide.foot_condim == 0
    assert wide.torsional_friction_scale == train.torsional_friction_scale
    _, ranges = R.feasible_preset(train, axes, {"mass": [True] * 7, "torsional_friction": [True] * 5,
                                                 "condim": [True] * 3})
    assert list(ranges) == ["mass"]


def test_a_short_run_of_the_shipped_policy_over_condim_writes_its_curve(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "sim2real", "robustness", str(ROOT / "policies" / "baselines" / "QuadrupedVelocity"),
           "--axes", "condim", "--episodes", "1", "--n-envs", "1", "--out", str(tmp_path), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    study = json.loads(done.stdout)
    curve = study["axes"]["condim"]
    assert curve["kind"] == "model error" and curve["train_range"] is None
    assert [p["value"] for p in curve["points"]] == [3.0, 4.0, 6.0]
    errors = [p["policy"]["metrics_mean"]["vel_tracking_error"] for p in curve["points"]]
    assert all(np.isfinite(errors)) and len(set(errors)) == 3  # each condim changes the episode
    assert study["combined"] == [] and study["transfer_ratio"] is None and "policy" in study["heldout"]
    assert (tmp_path / "robustness.png").read_bytes()[:4] == b"\x89PNG"


def test_a_sweep_that_needs_a_finer_step_runs_every_point_at_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """impratio 100 cannot be integrated at our 5 ms step: its axis runs at a quarter of it,
    the others at the task's own step."""
    from sim2real.policies.deploy import OnnxPolicy
    from sim2real.policies.studies import robustness_runs

    axes, _ = R.axes_for(QUAD.train(), ["impratio", "condim"])
    assert [a.substeps for a in axes] == [4, 1]
    seen: list[tuple[str, object]] = []

    class Captured(Exception):
        pass

    def capture(policy: object, specs: list[tuple[str, dict[str, object]]], *_: object) -> None:
        seen.extend((label, kwargs["solver"]) for label, kwargs in specs if "solver" in kwargs)
        raise Captured

    monkeypatch.setattr(robustness_runs, "_points", capture)
    with pytest.raises(Captured):
        robustness_runs.study(OnnxPolicy(ROOT / "policies" / "baselines" / "QuadrupedVelocity"),
                              ["impratio", "condim"], episodes=1, n_envs=1, seed=0)
    steps = {label: getattr(solver, "substeps", None) for label, solver in seen}
    assert steps == {"impratio 1": 4, "impratio 10": 4, "impratio 100": 4, "condim 3": 1, "condim 4": 1, "condim 6": 1}
