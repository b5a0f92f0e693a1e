"""A real PBT sweep on the session's local Ray (2 CPUs): two tiny ArmReach PPO trials with
very different values, synchronous PBT every evaluation with the bottom half copying the
top half, so the weaker trial takes over the stronger one's checkpoint at each
perturbation. Both trials finish their budget, and every exploit is in the weak trial's
run folder: pbt.jsonl, config.yaml's provenance, eval.jsonl, the model it trained."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweep_runs import run_sweep, write_sweep

from sim2real.policies.algorithms import get_algorithm
from sim2real.policies.common import checkpoint, session
from sim2real.policies.common.rundir import RunDir
from sim2real.policies.sweep.exploit import read_exploits


@pytest.mark.slow  # ~18 s; test_pbt_exploit.py covers the exploit itself without Ray in the default suite
def test_pbt_sweep_exploits_and_finishes(ray_local, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    total = 2048
    sweep = write_sweep(tmp_path, total=total, eval_every=1024, samples=1, max_failures=1,
                        scheduler={"pbt": {"perturbation_interval_steps": 1024, "quantile_fraction": 0.5,
                                           "resample_probability": 0.5, "synch": True}},
                        # two very different trials
                        space={"ppo.ent_coef": {"grid": [0.0, 0.2]}, "ppo.learning_rate": {"choice": [1e-4, 3e-3]}})
    out = tmp_path / "out"
    summary = run_sweep([str(sweep), "--out", str(out)], capsys)
    trials = {t["trial"]: t for t in summary["trials"]}
    assert len(trials) == 2 and all(t["status"] == "complete" and t["steps"] == total for t in trials.values())
    exploits = {name: read_exploits(Path(t["run_dir"])) for name, t in trials.items()}
    assert sum(map(len, exploits.values())) >= 1, "synchronous PBT with two trials exploits at every perturbation"
    assert sum(t["exploits"] for t in trials.values()) == sum(map(len, exploits.values()))  # the table's column
    for name, records in exploits.items():
        run = RunDir(trials[name]["run_dir"])
        cfg = run.read_config()
        rows = run.read_eval_log()
        steps = [r["step"] for r in rows]
        assert steps == [0, 1024, 2048]  # one line of evaluations, whatever it took over
        changes = run.read_provenance().get("hyperparameter_changes", [])
        assert len(changes) == len(records)
        for record, change in zip(records, changes, strict=True):
            donor = record["donor"]
            assert donor in trials and donor != name and record["donor_step"] == 1024
            assert change["donor"] == donor and change["donor_step"] == record["donor_step"]
            marked = [r for r in rows if r.get("pbt_donor") == donor and r["step"] == record["donor_step"]]
            assert marked or record is not records[-1]  # a later exploit may replace an earlier mark
        if records:
            # The trial ends with its latest values (Tune's config, config.yaml, the trained model).
            assert records[-1]["values"] == {k: trials[name][k] for k in records[-1]["values"]}
            assert (cfg.ppo.learning_rate, cfg.ppo.ent_coef) == (trials[name]["ppo.learning_rate"],
                                                                 trials[name]["ppo.ent_coef"])
        model = session.load_model(checkpoint.locate(run.checkpoints, "last"), get_algorithm("ppo"), None)
        assert (model.ent_coef, model.learning_rate) == (cfg.ppo.ent_coef, cfg.ppo.learning_rate)
