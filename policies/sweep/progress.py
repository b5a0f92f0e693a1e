"""One short line per reported evaluation and per trial end, instead of Tune's tables.

A module of its own because it subclasses :class:`ray.tune.Callback` (Ray is imported
with it); Tune pickles the callback with the experiment, so a resumed sweep keeps it.
"""

from __future__ import annotations

import sys
from typing import Any

from ray import tune

from sim2real.policies.sweep.trainable import TIME_ATTR


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


class ProgressLines(tune.Callback):
    """Writes to stderr (stdout stays clean for ``--json``)."""

    def __init__(self, metric: str) -> None:
        self.metric = metric

    @staticmethod
    def _line(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def on_trial_result(self, iteration: int, trials: list, trial: Any, result: dict, **info: Any) -> None:
        values = ", ".join(f"{k}={_short(v)}" for k, v in trial.config.items())
        resumed = f"  (resumed at step {result['resumed_from']:,})" if result.get("resumed_from") else ""
        self._line(f"{trial}  step {int(result.get(TIME_ATTR, 0)):>9,}  {self.metric} {_short(result.get(self.metric))}"
                   f"  success {result.get('success_rate', 0):.0%}  [{values}]{resumed}")

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(f"{trial}  done")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._line(f"{trial}  failed (failure {trial.num_failures}); "
                   + ("gave up" if trial.status == "ERROR" else "retrying: it resumes its run folder"))
