"""Live progress of an experiment on a master (``det e create --follow``, ``det e wait``).

Progress goes to the given console (stderr in ``det``), trial logs to stdout. When the
console is a terminal: a rich progress bar with a status line (trials running/completed,
batches trained, best validation metric) that log lines scroll above. Otherwise: one plain
line per change, e.g. ``Experiment 3: ACTIVE 50% | trials: 2 running, 10 waiting, 1 completed |
batches: 80 | best validation_loss: 0.2231`` (waiting: ACTIVE trials without slots yet). A
script's steps are in its searcher's unit: ``epochs: 6`` (see ``step_unit``).
"""

from __future__ import annotations

import sys
from typing import Any, Dict, List, Optional, Tuple

from rich.console import Console

from determined._metric_order import MetricOrder
from determined.common.entrypoint import STEP_UNITS, step_unit

__all__ = ["ExperimentProgress", "summarize"]


def _best(trials: List[Dict[str, Any]], smaller_is_better: bool) -> Optional[float]:
    return MetricOrder(smaller_is_better).best(t.get("best_validation") for t in trials)


def _running_waiting(trials: List[Dict[str, Any]]) -> Tuple[int, int]:
    """ACTIVE trials that hold slots and those waiting for some. A master says which
    (``running`` per trial); without it (a local store) every ACTIVE trial counts as
    running."""
    active = [t for t in trials if t["state"] == "ACTIVE"]
    running = sum(1 for t in active if t.get("running", True))
    return running, len(active) - running


def summarize(exp: Dict[str, Any], width: Optional[int] = None) -> str:
    """The status text of an experiment JSON from ``GET /experiments/{id}`` (with trials);
    with ``width``, a shorter form that fits it (counts, batches, best metric first)."""
    trials = exp.get("trials") or []
    counts: Dict[str, int] = {}
    for t in trials:
        counts[t["state"]] = counts.get(t["state"], 0) + 1
    running, waiting = _running_waiting(trials)
    parts = [f"{running} running"] + ([f"{waiting} waiting"] if waiting else [])
    parts += [f"{counts.get('COMPLETED', 0)} completed"]
    parts += [f"{n} {_STATE_WORD.get(state, state.lower())}"
              for state, n in sorted(counts.items()) if state not in ("ACTIVE", "COMPLETED")]
    searcher = (exp.get("config") or {}).get("searcher") or {}
    metric = searcher.get("metric", "metric")
    best = _best(trials, searcher.get("smaller_is_better", True))
    batches = sum(t.get("total_batches") or 0 for t in trials)
    unit = step_unit(exp.get("config") or {})
    text = f"trials: {', '.join(parts)} | {STEP_UNITS[unit]}: {batches}"
    if best is not None:
        text += f" | best {metric}: {best:.4g}"
    if width is None or len(text) <= width:
        return text
    # Narrow: failed trials and the best metric first, then as many counts as fit.
    wait = f" {waiting} wait" if waiting else ""
    failed = [f"{counts['ERROR']} failed"] if counts.get("ERROR") else []
    parts = [" ".join([f"{running} run{wait} {counts.get('COMPLETED', 0)} done", *failed]),
             f"{batches} {_SHORT_UNITS[unit]}"]
    fallbacks = (parts, parts[:1], failed + parts[1:], failed)
    if best is None:
        return next((" | ".join(shown) for shown in fallbacks
                     if shown and len(" | ".join(shown)) <= width), " | ".join(parts)[:width])
    short = _best_text(metric, best, width)
    for shown in fallbacks:  # trial counts before batches
        text = " | ".join(shown + [short])
        if len(text) <= width:
            return text
    if failed:  # failed trials stay in sight: the metric's name gives way
        text = " | ".join(failed + [_best_text(metric, best, width - len(failed[0]) - 3)])
        if len(text) <= width:
            return text
    return short[:width]


def _best_text(metric: str, best: float, width: int) -> str:
    """``NAME VALUE`` in ``width``, the name shortened (or ``best``) to fit."""
    value = f"{best:.4g}"
    room = width - len(value) - 1  # for the metric's name
    name = metric if room >= len(metric) else (metric[:room - 1] + "\u2026" if room >= 4
                                                else "best")
    return f"{name} {value}"


#: A narrow status line's step units: "80 b", "6 ep".
_SHORT_UNITS = {"batch": "b", "epoch": "ep", "record": "rec", "step": "st"}
#: How a status line names trials in a state ("1 failed", not "1 error").
_STATE_WORD = {"ERROR": "failed"}
ENDED_EARLY = {"ERROR": "failed", "CANCELED": "canceled"}


def progress_text(state: str, progress: Any) -> str:
    """An experiment's progress for people: "42%"; an ERROR or CANCELED one says so
    instead (its searcher counts failed trials as done, so the fraction can read 100%)."""
    if state in ENDED_EARLY:
        return ENDED_EARLY[state]
    return f"{100 * min(1.0, max(0.0, float(progress or 0))):.0f}%"


class ExperimentProgress:
    """Shows an experiment's progress; use as a context manager and call :meth:`update`
    with each polled experiment JSON, :meth:`log` for a line of trial output.

    Example:
        >>> with ExperimentProgress(7, Console(stderr=True)) as progress:
        ...     progress.update(client.get_experiment(7))
    """

    def __init__(self, experiment_id: int, console: Console):
        self.experiment_id = experiment_id
        self.console = console
        self.live = console.is_terminal
        self._last: Optional[str] = None
        self._progress: Any = None
        self._task: Any = None
        self._bar = 10 if console.width < 100 else 20  # leaves room for the status

    def __enter__(self) -> "ExperimentProgress":
        if self.live:
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn(f"Experiment {self.experiment_id} [bold]{{task.fields[state]}}"),
                BarColumn(bar_width=self._bar), TaskProgressColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(), console=self.console, transient=False,
                redirect_stdout=False,  # log lines: see log()
            )
            self._progress.start()  # the bar appears with the first update, its state known
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def update(self, exp: Dict[str, Any]) -> None:
        percent = round(100 * (exp.get("progress") or 0))
        ended_early = exp["state"] in ENDED_EARLY
        width = self.console.width
        if self._progress is not None:
            # The bar's other columns take "Experiment N STATE", 20 + 5 + 8 cells, spaces.
            # Columns: prefix, bar, "100%", status, elapsed "0:00:00", one space between.
            used = len(f"Experiment {self.experiment_id} {exp['state']}") + self._bar + 16
            status = summarize(exp, max(10, width - used))
            if self._task is None:
                self._task = self._progress.add_task("experiment", total=100,
                                                     state=exp["state"], status=status)
            if ended_early:  # the bar stays where the search really got to
                self._progress.update(self._task, state=exp["state"], status=status)
            else:
                self._progress.update(self._task, completed=percent, state=exp["state"],
                                      status=status)
            return
        # An ERROR or CANCELED experiment's state says it (no fraction: see progress_text).
        shown = "" if ended_early else " " + progress_text(exp["state"], exp.get("progress"))
        head = f"Experiment {self.experiment_id}: {exp['state']}{shown} | "
        # Piped to a file: the whole line; on a terminal: one that fits it.
        fit = max(10, width - len(head)) if self.console.is_terminal else None
        line = head + summarize(exp, fit)
        if line != self._last:
            self.console.print(line, markup=False, highlight=False, soft_wrap=True)
            self._last = line

    def log(self, line: str) -> None:
        """A line of trial output, on stdout, never folded (a traceback's paths stay
        whole; the terminal wraps what is longer). Where stdout is the terminal of a live
        bar, rich prints it above the bar; a redirected stdout gets it as it is."""
        if self._progress is not None and sys.stdout.isatty():
            from rich.text import Text

            self.console.print(Text.from_ansi(line), soft_wrap=True)
            return
        print(line, flush=True)
