"""``det trial`` (alias ``t``): describe, logs, download, kill."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

from determined.cli._experiment_edit import parse_bool, print_checkpoint
from determined.common.api._log_tail import (
    PAGE,
    TERMINAL,
    LogTail,
    follow_log,
    trial_log_page,
)
from determined.cli._waiting import wait_details, with_waiting
from determined.cli._argtypes import checkpoint_uuid, count, positive_int
from determined.cli._remote import (add_format_flags, add_local_flags, client, csv_text,
                                   output_dir, print_rows, sdk, usage_error)

__all__ = ["add_parser", "checkpoint_lines"]

TRIAL_COLUMNS = ["trial_id", "experiment_id", "state", "hparams", "total_batches", "restarts",
                 "best_validation", "latest_checkpoint", "start_time", "end_time"]
#: ``det t describe``'s trial table: its best and latest checkpoints are lines below it,
#: each labelled (CSV has both columns, JSON both fields).
DESCRIBE_COLUMNS = [c for c in TRIAL_COLUMNS if c != "latest_checkpoint"]
DESCRIBE_CSV_COLUMNS = TRIAL_COLUMNS + ["best_checkpoint"]


def add_parser(nouns: Any) -> None:
    trial = nouns.add_parser("trial", aliases=["t"], help="inspect trials")
    verbs = trial.add_subparsers(dest="verb", metavar="ACTION")
    describe = verbs.add_parser(
        "describe", help="show a trial and its workloads",
        description="Show a trial, its best checkpoint (by the searcher metric) and its "
                    "latest, and its workloads (newest first, as the web UI lists them).")
    describe.add_argument("trial_id", type=positive_int)
    describe.add_argument("--metrics", action="store_true",
                          help="add a column per training and validation metric")
    add_format_flags(describe)
    add_local_flags(describe)
    describe.set_defaults(func=_describe)

    logs = verbs.add_parser("logs", help="print a trial's logs")
    logs.add_argument("trial_id", type=positive_int)
    logs.add_argument("-f", "--follow", action="store_true", help="wait for new lines")
    group = logs.add_mutually_exclusive_group()
    group.add_argument("--head", type=count, default=None, metavar="N", help="only the first N lines")
    group.add_argument("--tail", type=count, default=None, metavar="N", help="only the last N lines")
    add_local_flags(logs)
    logs.set_defaults(func=_logs)

    dl = verbs.add_parser("download", help="download one of a trial's checkpoints")
    dl.add_argument("trial_id", type=positive_int)
    which = dl.add_mutually_exclusive_group(required=True)
    which.add_argument("--best", action="store_true", help="the best validated checkpoint")
    which.add_argument("--latest", action="store_true", help="the latest checkpoint")
    which.add_argument("--uuid", default=None, type=checkpoint_uuid,
                       help="the checkpoint with this UUID")
    dl.add_argument("-o", "--output-dir", default=None, type=output_dir,
                    help="directory to copy it to (default checkpoints/<uuid>)")
    dl.add_argument("--sort-by", default=None, help="with --best: validation metric to rank by")
    dl.add_argument("--smaller-is-better", type=parse_bool, default=None, metavar="BOOL",
                    help="with --best: whether smaller values of --sort-by are better")
    dl.add_argument("-q", "--quiet", action="store_true", help="print only the local path")
    add_local_flags(dl)
    dl.set_defaults(func=_download)

    kill = verbs.add_parser("kill", help="kill a trial")
    kill.add_argument("trial_id", type=positive_int)
    kill.set_defaults(func=_kill)
    from determined.cli._gpu_metrics import add_gpu_metrics_verb

    add_gpu_metrics_verb(verbs)


def _describe(args: argparse.Namespace) -> int:
    from determined.cli._errors import fold_error
    from determined.cli._experiment_show import (WORKLOAD_COLUMNS, WORKLOAD_DROP_FIRST,
                                                 metric_columns, metric_labels,
                                                 ranked_checkpoints, step_labels, workload_rows)
    from determined.cli._failures import local_flags, trial_failure_lines
    from determined.cli._table import terminal_width

    with client(args) as c:
        t = c.get_trial(args.trial_id)
        exp = c.get_experiment(t["experiment_id"])
        checkpoints = c.list_checkpoints(t["experiment_id"])
    searcher = exp["config"]["searcher"]
    metric, smaller = searcher["metric"], searcher.get("smaller_is_better", True)
    t["workloads"] = workload_rows(t, checkpoints, metric, args.metrics)
    t["checkpoints"] = [ck for ck in checkpoints if ck["trial_id"] == t["id"]]
    best = (ranked_checkpoints(t["checkpoints"], metric, smaller) or [None])[0]
    t["best_checkpoint"] = best and best["uuid"]
    if not args.metrics:
        t.pop("metrics", None)
    elif args.json:  # per-batch metrics and num_inputs, as upstream's steps
        from determined.cli._experiment_show import steps_json

        with client(args) as c:
            loads = c.request("GET", f"/trials/{t['id']}/workloads")["workloads"]
        t["steps"] = steps_json(loads, t["checkpoints"])
    if args.json:
        print(json.dumps(t, default=str))
        return 0
    # The searcher metric's column has its name (--metrics: it stands for validation.NAME).
    columns = [col for col in WORKLOAD_COLUMNS if col != "experiment_id"]
    columns += [col for col in metric_columns(t["workloads"])
                if args.csv or col != f"validation.{metric}"]
    trial_row = [{**t, "trial_id": t["id"]}]
    if args.csv:
        sys.stdout.write(csv_text(trial_row, DESCRIBE_CSV_COLUMNS) + "\n"
                         + csv_text(t["workloads"], columns))
        return 0
    labels = {**metric_labels(metric), **step_labels([exp["config"]])}
    rows, trial_columns = with_waiting(trial_row, DESCRIBE_COLUMNS)
    print_rows(rows, trial_columns, args, title="Trial", labels=labels)
    for line in checkpoint_lines(t["checkpoints"], best, metric, smaller,
                                 labels.get("batches", "batches")):
        print(fold_error(line, terminal_width()))
    for line in wait_details("Trial", [t]):
        print(line)
    for line in trial_failure_lines(t, local_flags(args)):  # its error, and where its whole log is
        print(line)
    print()
    if not t["workloads"]:
        print("Workloads: none (no metrics or checkpoints reported)")
        return 0
    print_rows(t["workloads"], columns, args, title="Workloads", labels=labels,
               drop_first=WORKLOAD_DROP_FIRST)
    return 0


def checkpoint_lines(checkpoints: List[Dict[str, Any]], best: Optional[Dict[str, Any]],
                     metric: str, smaller_is_better: bool, unit: str) -> List[str]:
    """A trial's best checkpoint (by ``metric``) and its latest, each on a labelled line:
    the two may differ, and ``det t download --best`` / ``--latest`` fetch them. One
    line says when there is no completed checkpoint yet.

    Example:
        >>> ck = {"uuid": "4f9a1c2e-1111-2222-3333-444455556666", "state": "COMPLETED",
        ...       "total_batches": 200, "validation": {"loss": 0.25}}
        >>> for line in checkpoint_lines([ck], ck, "loss", True, "batches"):
        ...     print(line)
        Best checkpoint (lowest loss): 4f9a1c2e-1111-2222-3333-444455556666, 200 batches, loss 0.25
        Latest checkpoint: 4f9a1c2e-1111-2222-3333-444455556666, 200 batches
    """
    from determined.util import format_value

    completed = [ck for ck in checkpoints if ck["state"] == "COMPLETED"]
    if not completed:
        return ["Checkpoints: none completed yet"]
    which = f"Best checkpoint ({'lowest' if smaller_is_better else 'highest'} {metric}):"
    if best is None:
        best_line = f"{which} none (no completed checkpoint has a validation of {metric})"
    else:
        best_line = (f"{which} {best['uuid']}, {best['total_batches']} {unit}, "
                     f"{metric} {format_value(best['validation'][metric])}")
    latest = max(enumerate(completed), key=lambda ick: (ick[1]["total_batches"], ick[0]))[1]
    return [best_line, f"Latest checkpoint: {latest['uuid']}, {latest['total_batches']} {unit}"]


def _logs(args: argparse.Namespace) -> int:
    with client(args) as c:
        tail = LogTail(lambda after: trial_log_page(c, args.trial_id, after),
                       lambda line: print(line["line"], flush=True))
        limit = PAGE if args.head is None else args.head
        params = {"limit": limit} if args.tail is None else {"tail": max(args.tail, 1)}
        page = c.request("GET", f"/trials/{args.trial_id}/logs", params=params)
        first = page["logs"]
        # It ends the log if complete and it holds the newest lines (all: fewer than asked).
        newest = args.tail is not None or len(first) < limit
        if args.tail is not None:
            tail.take_newest(first, args.tail, page.get("complete"))
        else:
            tail.take(first, page.get("complete") if newest else None)
        if not args.follow:
            if args.head is None and args.tail is None and len(first) >= PAGE:
                tail.read_new()  # the rest, page by page
            return 0
        follow_log(tail, lambda: c.get_trial(args.trial_id)["state"] in TERMINAL)
        return 0


def _download(args: argparse.Namespace) -> int:
    if (args.sort_by is not None or args.smaller_is_better is not None) and not args.best:
        usage_error("--sort-by and --smaller-is-better apply only with --best")
    if args.smaller_is_better is not None and args.sort_by is None:
        usage_error("--smaller-is-better needs --sort-by")
    trial = sdk(args).get_trial(args.trial_id)
    ckpt = trial.select_checkpoint(latest=args.latest, best=args.best, uuid=args.uuid,
                                   sort_by=args.sort_by, smaller_is_better=args.smaller_is_better)
    if ckpt.trial_id != args.trial_id:
        usage_error(f"--uuid {args.uuid} is a checkpoint of trial {ckpt.trial_id}, "
                    f"not of trial {args.trial_id}")
    out = args.output_dir or os.path.join("checkpoints", ckpt.uuid)
    path = ckpt.download(out)
    print_checkpoint(ckpt, path, args.quiet)
    return 0


def _kill(args: argparse.Namespace) -> int:
    with client(args) as c:
        t = c.request("POST", f"/trials/{args.trial_id}/kill")
    print(f"Trial {t['id']}: {t['state']}")
    return 0
