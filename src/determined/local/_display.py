"""What a person sees while a local experiment runs, and the summary at its end."""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Dict, List, Optional

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from determined._metric_order import MetricOrder
from determined.common.entrypoint import STEP_UNITS, step_unit
from determined.common.entrypoint import steps_text as _steps
from determined.common.wording import counted
from determined.local._result import ExperimentResult
from determined.util import format_metrics
from determined.util import format_value as _fmt

__all__ = ["print_path", "ProgressDisplay", "TrialFailures", "print_summary", "format_hparams",
           "trial_counts", "step_unit"]

_BAR_WIDTHS = (10, 40)  # the progress bar's narrowest and widest
# The progress line beside its bar and status: "search", "100.0%", the elapsed time (up
# to 99:59:59) and a space between each two of the five columns.
_FIXED_WIDTH = len("search") + len("100.0%") + len("99:59:59") + 4


def format_hparams(hparams: Dict[str, Any], prefix: str = "") -> str:
    parts = []
    for k, v in hparams.items():
        if isinstance(v, dict):
            parts.append(format_hparams(v, f"{prefix}{k}."))
        elif k != "global_batch_size" or prefix:
            parts.append(f"{prefix}{k}={_fmt(v)}")
        else:
            parts.append(f"batch={v}")
    return " ".join(parts)


def trial_counts(core: Any) -> Dict[str, int]:
    """The search's trials now, from its experiment core: ``running`` (a process runs or
    is ending), ``pausing`` (the experiment is PAUSED and the trial's process finishes its
    workload and checkpoints before it exits), ``paused`` (the experiment is PAUSED and
    the trial, which ran, has no process now), ``done`` (completed or canceled, including
    trials a searcher closed while they had no process) and ``errors``."""
    from determined.engine import ExperimentState as E
    from determined.engine import TrialState as S

    paused = core.state is E.PAUSED
    trials = list(core.trials.values())
    return {"running": sum(t.state in (S.RUNNING, S.WAITING, S.KILLING)
                           or (t.state is S.STOPPING and not paused) for t in trials),
            "pausing": sum(paused and t.state is S.STOPPING for t in trials),
            "paused": sum(paused and t.state in (S.PENDING, S.IDLE)
                          and bool(t.starts or t.batches) for t in trials),
            "done": sum(t.state in (S.COMPLETED, S.CANCELED) for t in trials),
            "errors": sum(t.state is S.ERROR for t in trials)}


def _counts_text(counts: Dict[str, int]) -> str:
    """``1 running, 2 done``; while a pause is under way ``1 pausing (checkpointing)``
    in place of the trials it stops, then ``1 paused``."""
    pause = counts.get("pausing", 0) or counts.get("paused", 0)
    parts = [f"{counts['running']} running"] if counts["running"] or not pause else []
    if counts.get("pausing"):
        parts.append(f"{counts['pausing']} pausing (checkpointing)")
    if counts.get("paused"):
        parts.append(f"{counts['paused']} paused")
    parts.append(f"{counts['done']} done")
    if counts["errors"]:
        parts.append(f"{counts['errors']} failed")
    return ", ".join(parts)


def _log_line(console: Console, text: str) -> None:
    """One event line, with the time of day (no source location: the reader is a user,
    not a developer); folded at the terminal's width, it goes on under its text, not
    under the time (a line that starts without one is not an event of its own)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column(overflow="fold")
    grid.add_row(time.strftime("%H:%M:%S"), text)
    console.print(grid)


class TrialFailures:
    """Prints what failed trials said as the driver's events come, with a progress
    display or without one (``det e create --local --no-progress``), and, after Ctrl-C,
    which trials are pausing (the wait for their checkpoints is not silence).

    An error is printed whole the first time only, as written (a traceback's lines are
    not folded: its paths get copied); the same failure again (same text) is named, not
    repeated."""

    def __init__(self, console: Console, unit: str = "batch", alone: bool = False):
        self.console = console
        self.unit = unit  # what a trial's steps count (see step_unit)
        # Without a progress display, on a terminal, whose echo of Ctrl-C ("^C") would
        # begin the first line said after it: that line starts a new one.
        self.ctrl_c_echoed = alone and console.is_terminal
        # Failures by trial (its latest) and by text (the trial that failed so first).
        self._last_failure: Dict[int, str] = {}
        self._first_failure: Dict[str, int] = {}

    def event(self, kind: str, trial: Dict[str, Any], details: Dict[str, Any]) -> None:
        """A driver event (``LocalDriver.on_event``): failures and pausing trials are
        printed, the rest ignored."""
        tid = trial["trial_id"]
        if kind == "pausing":
            self.after_ctrl_c()
            _log_line(self.console, f"trial {tid} pausing: it finishes its workload and "
                      "checkpoints (Ctrl-C again stops it without a checkpoint)")
        elif kind == "restart":
            where = (f"checkpoint {trial['latest_checkpoint']} at "
                     f"{_steps(trial['checkpoint_batches'], self.unit)}"
                     if trial["latest_checkpoint"] else "the beginning")
            self.failed(tid, details.get("error"), f"restart {trial['restarts']}, from {where}")
        elif kind == "error":
            self.failed(tid, details.get("error"), "")

    def after_ctrl_c(self) -> None:
        """Before the first line said after Ctrl-C: end the line its echo is on."""
        if self.ctrl_c_echoed:
            self.ctrl_c_echoed = False
            self.console.print()

    def failed(self, tid: int, error: Any, restart: str) -> None:
        """A trial process failed; ``restart`` says how the trial goes on ("" when it
        has no restart left)."""
        text = str(error or "").strip()
        key = _failure_key(text)
        color = "yellow" if restart else "red"
        if self._last_failure.get(tid) == key:
            how = " again, the same way"
        elif key in self._first_failure:
            how = f" the same way as trial {self._first_failure[key]}"
        else:
            how = ""
        self._last_failure[tid] = key
        if how or not text:
            _log_line(self.console, f"[{color}]trial {tid} failed{how}[/{color}]"
                      + (f"; {escape(restart)}" if restart else "; no restarts left"))
            return
        self._first_failure.setdefault(key, tid)
        _log_line(self.console, f"[{color}]trial {tid} failed:[/{color}]")
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)
        if restart:
            _log_line(self.console, f"trial {tid}: {escape(restart)}")


class ProgressDisplay:
    """A progress bar for the search, with one line per notable trial event.

    ``progress_fn`` and ``counts_fn`` (see :func:`trial_counts`) say where the search
    stands; ``best`` is its best metric so far (a resumed search has one)."""

    def __init__(self, console: Console, metric: str, progress_fn: Callable[[], float],
                 order: MetricOrder = MetricOrder(),
                 counts_fn: Optional[Callable[[], Dict[str, int]]] = None,
                 best: Optional[float] = None, unit: str = "batch"):
        self.console = console
        self.metric = metric
        self.unit = unit  # what a trial's steps count (see step_unit)
        self.order = order
        self.progress_fn = progress_fn
        self.counts_fn = counts_fn
        self.bar = BarColumn(bar_width=_BAR_WIDTHS[1])
        self.progress = Progress(
            TextColumn("[bold]search"),
            self.bar,
            TextColumn("{task.percentage:>5.1f}%"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}", table_column=Column(no_wrap=True)),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task("search", total=1.0, status="")
        self.best = best
        self.failures = TrialFailures(self.progress.console, unit)

    def __enter__(self) -> "ProgressDisplay":
        self.progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.refresh()
        self.progress.stop()

    def refresh(self) -> None:
        parts = []
        if self.counts_fn is not None:
            parts.append(_counts_text(self.counts_fn()))
        status = " | ".join(parts + ([self._best_text(self.metric)] if self.best is not None
                                     else []))
        # The line fits the terminal: a narrower bar first, then a shorter metric name
        # (the best value stays whole), then a cut status.
        room = self.console.width - _FIXED_WIDTH
        self.bar.bar_width = max(_BAR_WIDTHS[0], min(_BAR_WIDTHS[1], room - len(status)))
        limit = room - self.bar.bar_width
        if len(status) > limit and self.best is not None:
            keep = len(self.metric) - (len(status) - limit) - 1  # characters before "…"
            if keep >= 4:
                status = " | ".join(parts + [self._best_text(self.metric[:keep] + "…")])
        if len(status) > limit:
            status = status[:max(limit - 1, 0)] + "…"
        self.progress.update(self.task, completed=self.progress_fn(), status=status)

    def _best_text(self, metric: str) -> str:
        return f"best {metric} {_fmt(self.best)}"

    def _log(self, text: str) -> None:
        """One event line above the progress bar (see :func:`_log_line`)."""
        _log_line(self.progress.console, text)

    def event(self, kind: str, trial: Dict[str, Any], details: Dict[str, Any]) -> None:
        """One event of the driver (``LocalDriver.on_event``): ``trial`` is the
        driver's ``trial_view``, ``details`` what the event carries."""
        log = self._log
        tid = trial["trial_id"]
        if kind == "started":
            if details.get("resumed"):
                log(f"trial {tid} resumed from checkpoint {trial['latest_checkpoint']} "
                    f"at {_steps(trial['checkpoint_batches'], self.unit)}")
            else:
                shown = format_hparams(trial["hparams"])
                log(f"trial {tid} started: {shown}" if shown else f"trial {tid} started")
        elif kind == "validation":
            value = details.get(self.metric)
            if value is not None:
                log(f"trial {tid} validated at {_steps(trial['batches'], self.unit)}: "
                    f"{self.metric}={_fmt(value)}")
        else:  # failures, pausing trials
            self.failures.event(kind, trial, details)
        if self.order.better(trial["best_metric"], self.best):
            self.best = trial["best_metric"]
        self.refresh()


def _failure_key(text: str) -> str:
    """What two failures must share to be "the same way": their text, but for object
    addresses (``<... at 0x7f...>``), which differ between processes."""
    return re.sub(r"0x[0-9a-fA-F]+", "0x", text)


def _flatten(hparams: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in hparams.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _columns_that_fit(names: List[str], flat: List[Dict[str, Any]], room: int) -> List[str]:
    """The hyperparameter columns (in order) that fit in ``room`` characters, each as
    wide as its header or widest value (at most 14) plus borders and padding."""
    shown = []
    for n in names:
        header = n.replace("global_batch_size", "batch")
        width = min(14, max([len(header)] + [len(_fmt(f.get(n, ""))) for f in flat])) + 3
        if width > room:
            break
        shown.append(n)
        room -= width
    return shown


def print_summary(console: Console, result: ExperimentResult, metric: str,
                  unit: str = "batch", where: str = "--local") -> None:
    """The table of trials (a column per hyperparameter that varies, as many as the
    terminal's width holds; their length in ``unit``, see :func:`step_unit`) and the best
    checkpoint. ``where``: the option that names the run's local directory
    (``--local-dir DIR`` where it is not the default), for the command shown."""
    flat = [_flatten(t["hparams"]) for t in result.trials]
    names = sorted({k for f in flat for k in f})
    varying = [n for n in names if len({repr(f.get(n)) for f in flat}) > 1]
    fixed = 1 + (5 + 3) + (9 + 3) + (7 + 3) + (max(len(metric), 7) + 3)
    shown = _columns_that_fit(varying, flat, console.width - fixed)
    caption, left_out = None, ""
    if len(shown) < len(varying):
        left_out = f"{counted(len(varying) - len(shown), 'more varying hyperparameter')} " \
            f"not shown: det e describe {where} {result.experiment_id}"
        if len(left_out) <= console.width:
            caption, left_out = left_out, ""
    table = Table(title=f"Experiment {result.experiment_id}: {result.state}", caption=caption)
    for col, width in (("trial", 5), ("state", 9), (STEP_UNITS[unit], 7)):
        table.add_column(col, no_wrap=True, min_width=width)
    table.add_column(metric, overflow="ellipsis", no_wrap=True)
    for col in shown:
        table.add_column(col.replace("global_batch_size", "batch"), overflow="ellipsis",
                         no_wrap=True, max_width=14)
    best_id = result.best_trial["trial_id"] if result.best_trial is not None else None
    for t, f in zip(result.trials, flat):
        best = "" if t["best_metric"] is None else _fmt(t["best_metric"])
        mark = "*" if t["trial_id"] == best_id else ""
        state = (f"{t['state']} ({counted(t['restarts'], 'restart')})" if t["restarts"]
                 else t["state"])
        table.add_row(f"{t['trial_id']}{mark}", state, str(t["batches"]), best,
                      *(_fmt(f.get(n, "")) for n in shown))
    console.print(table)
    if left_out:  # too long for a caption, which would break the command over two lines
        text, _, command = left_out.partition(": ")
        console.print(f"{text}; see them with:", markup=False, highlight=False)
        console.print(command, markup=False, highlight=False, soft_wrap=True)
    if result.reason:
        console.print(f"[red]{escape(result.reason)}")
    bt = result.best_trial
    if bt is not None:
        shown = format_hparams(bt["hparams"])
        console.print(
            f"Best trial: {bt['trial_id']} with {metric}={_fmt(bt['best_metric'])}"
            + (f" ({shown})" if shown else "")
        )
    if bt is not None and bt["latest_validation"]:
        console.print(f"Its latest validation: {format_metrics(bt['latest_validation'])}")
    if result.best_checkpoint_path:
        print_path(console, "Best checkpoint:", result.best_checkpoint_path)
    print_path(console, "Records:", result.directory)


def print_path(console: Console, text: str, path: str) -> None:
    """``text path`` on one line when it fits, else the path alone on the next line and
    never broken: a path folded over two lines cannot be copied (the terminal wraps it)."""
    options = {"markup": False, "highlight": False}
    if len(text) + 1 + len(path) <= console.width:
        console.print(f"{text} {path}", **options)
        return
    console.print(text, **options)
    console.print(path, soft_wrap=True, **options)
