"""The training progress bar (rich, on stderr): steps, steps/s, mean return,
success rate of recent training episodes and the latest evaluation."""

from __future__ import annotations

import time
from collections import deque

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class TrainProgress:
    """A live bar while training; plain log lines for evaluations and checkpoints.

    Args:
        console: Where to draw (stderr keeps stdout clean for ``--json``).
        total: Target environment steps.
        start: Steps already done (a resumed run).
        enabled: ``False`` draws nothing (library use, tests).
    """

    def __init__(self, console: Console, total: int, start: int = 0, enabled: bool = True) -> None:
        self.console = console
        self.enabled = enabled
        self._progress = Progress(
            TextColumn("[bold]train"),
            BarColumn(),
            TextColumn("{task.completed:,.0f}/{task.total:,.0f} steps"),
            TextColumn("{task.fields[sps]:>7} steps/s"),
            TextColumn("return {task.fields[ret]}"),
            TextColumn("success {task.fields[succ]}"),
            TextColumn("eval {task.fields[eval]}"),
            TextColumn("{task.fields[extra]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not enabled,
            transient=False,
        )
        self._task: TaskID | None = None
        self._total, self._start = total, start
        self._window: deque[tuple[float, int]] = deque(maxlen=50)
        self._last_draw = 0.0

    def __enter__(self) -> TrainProgress:
        self._progress.start()
        self._task = self._progress.add_task(
            "train", total=self._total, completed=self._start, sps="-", ret="-", succ="-", eval="-", extra=""
        )
        self._window.append((time.perf_counter(), self._start))
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def update(
        self, steps: int, mean_return: float | None, success: float | None, force: bool = False, extra: str = ""
    ) -> None:
        """Redraw at most 5 times a second; steps/s is measured over the recent window.
        ``extra``: the algorithm's own figures (e.g. PPO-Lagrangian's cost and multiplier)."""
        now = time.perf_counter()
        if self._task is None or (not force and now - self._last_draw < 0.2):
            return
        self._last_draw = now
        self._window.append((now, steps))
        t0, s0 = self._window[0]
        sps = f"{(steps - s0) / (now - t0):,.0f}" if now > t0 and steps > s0 else "-"
        self._progress.update(
            self._task,
            completed=steps,
            sps=sps,
            ret="-" if mean_return is None else f"{mean_return:.3g}",
            succ="-" if success is None else f"{success:.0%}",
            extra=extra,
        )

    def evaluation(self, steps: int, success: float, lo: float, hi: float, mean_return: float, best: bool) -> None:
        text = f"{success:.0%} [{lo:.0%}, {hi:.0%}]"
        if self._task is not None:
            self._progress.update(self._task, eval=text)
        if self.enabled:
            mark = " (best)" if best else ""
            self.console.print(f"eval @ {steps:,} steps: success {text}, return {mean_return:.3g}{mark}")

    def log(self, message: str) -> None:
        if self.enabled:
            self.console.print(message)
