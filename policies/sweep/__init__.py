"""Hyperparameter sweeps over ``sim2real train`` runs with Ray Tune (``sim2real sweep``).

::

    space.py      the sweep YAML: search space, scheduler, metric; checked before Ray starts
    trainable.py  one Tune trial = one ordinary run folder, reporting every evaluation
    runner.py     Tuner set-up, start and resume, concise progress lines
    report.py     results.csv, results.md, best_trials.png, best_config.yaml

Ray is imported only inside the functions that need it, so parsing a sweep file
(and its one-line errors) costs no Ray start-up.
"""
