"""``det experiment describe|config|list-trials|list-checkpoints|download-model-def``.

Order: listings of checkpoints and of workloads are newest first, as the web UI shows
them (``--best N``: best first by the searcher metric, as 0.13 ranked them); a trial's
``steps`` in ``--json --metrics`` keep 0.13's order, oldest first.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from typing import Any, Dict, List, Sequence, Tuple

from determined._metric_order import ranked_checkpoints
from determined.cli._failures import failed_trials_lines, local_flags
from determined.cli._progress import progress_text
from determined.cli._waiting import wait_details, with_waiting
from determined.cli._remote import (add_format_flags, add_local_flags, client, csv_text, id_list,
                                   print_rows, usage_error)
from determined.common.api import MasterClient
from determined.common.entrypoint import STEP_UNITS, step_unit
from determined.util import format_value
from determined.cli._argtypes import positive_int

__all__ = ["NEWEST_FIRST", "WORKLOAD_COLUMNS", "WORKLOAD_DROP_FIRST",
           "add_list_checkpoints_args", "add_show_verbs", "list_checkpoints", "metric_columns",
           "metric_labels", "ranked_checkpoints", "step_labels", "steps_json", "workload_rows"]

#: What ``--help`` says of the order of these listings.
NEWEST_FIRST = "newest first, as the web UI lists them"

EXPERIMENT_COLUMNS = ["id", "owner", "state", "progress", "archived", "labels", "searcher",
                      "start_time", "end_time", "description"]
TRIAL_COLUMNS = ["experiment_id", "trial_id", "state", "hparams", "total_batches", "restarts",
                 "best_validation", "latest_checkpoint", "start_time", "end_time"]
WORKLOAD_COLUMNS = ["experiment_id", "trial_id", "batches", "end_time", "checkpoint_state",
                    "checkpoint_uuid", "validation"]
#: Workload columns a narrow terminal leaves out first (then the rightmost metrics): the
#: checkpoint's UUID stays whole, to copy.
WORKLOAD_DROP_FIRST = ["end_time", "checkpoint_state"]
CHECKPOINT_COLUMNS = ["trial_id", "batches", "state", "validation", "uuid", "size_bytes", "end_time"]


def add_show_verbs(verbs: Any) -> None:
    describe = verbs.add_parser(
        "describe", help="show experiments, their trials and workloads",
        description=f"Show experiments, their trials and each trial's workloads ({NEWEST_FIRST}).")
    describe.add_argument("experiment_ids", type=id_list, metavar="IDS",
                          help="experiment ids, comma-separated (1,2,3)")
    describe.add_argument("--metrics", action="store_true",
                          help="add a column per training and validation metric")
    fmt = describe.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true",
                     help="print JSON: the experiment with its trials (a list for several ids)")
    fmt.add_argument("--csv", action="store_true",
                     help="print the experiments, trials and workloads tables as CSV, "
                          "separated by blank lines")
    fmt.add_argument("--outdir", default=None,
                     help="write experiments.csv, trials.csv and workloads.csv to this directory")
    add_local_flags(describe)
    describe.set_defaults(func=_describe)

    config = verbs.add_parser("config", help="print an experiment's config (YAML)")
    config.add_argument("experiment_id", type=positive_int)
    config.add_argument("--json", action="store_true", help="print JSON instead of YAML")
    add_local_flags(config)
    config.set_defaults(func=_config)

    lt = verbs.add_parser("list-trials", aliases=["lt"], help="list an experiment's trials")
    lt.add_argument("experiment_id", type=positive_int)
    add_format_flags(lt)
    add_local_flags(lt)
    lt.set_defaults(func=_list_trials)

    add_list_checkpoints_args(verbs.add_parser(
        "list-checkpoints", aliases=["lc"], help="list an experiment's checkpoints"))

    dl = verbs.add_parser("download-model-def",
                          help="download the model definition (context directory) as a .tgz")
    dl.add_argument("experiment_id", type=positive_int)
    dl.add_argument("--output-dir", default=".", help="directory to write the .tgz to (default .)")
    add_local_flags(dl)
    dl.set_defaults(func=_download_model_def)


def workload_rows(trial: Dict[str, Any], checkpoints: Sequence[Dict[str, Any]], metric: str,
                  all_metrics: bool) -> List[Dict[str, Any]]:
    """One row per batch count a trial reported at, newest (most batches) first: when, its
    checkpoint, the searcher metric and (``all_metrics``) a ``training.NAME`` /
    ``validation.NAME`` column per metric."""
    rows: Dict[int, Dict[str, Any]] = {}

    def row(batches: int) -> Dict[str, Any]:
        return rows.setdefault(batches, {"experiment_id": trial["experiment_id"],
                                         "trial_id": trial["id"], "batches": batches})

    for m in trial.get("metrics") or []:
        r = row(m["total_batches"])
        r["end_time"] = max(filter(None, [r.get("end_time"), m.get("end_time")]), default=None)
        if m["kind"] == "validation":
            r["validation"] = m["metrics"].get(metric)
        if all_metrics:
            r.update({f"{m['kind']}.{k}": v for k, v in m["metrics"].items()})
    for ck in checkpoints:
        if ck["trial_id"] == trial["id"]:
            r = row(ck["total_batches"])
            r["checkpoint_state"], r["checkpoint_uuid"] = ck["state"], ck["uuid"]
    return [rows[b] for b in sorted(rows, reverse=True)]


def metric_labels(metric: Any) -> Dict[str, str]:
    """Table headers of the searcher metric's columns: the workloads' ``validation``
    is the metric's name and the trials' ``best_validation`` is ``best NAME``
    (no metric, as of experiments with different ones: the generic headers)."""
    if not metric:
        return {}
    return {"validation": str(metric), "best_validation": f"best {metric}"}


def step_labels(configs: Sequence[Dict[str, Any]]) -> Dict[str, str]:
    """Table headers of the step columns (``total_batches``, ``batches``) of experiments
    with these configs: none for Trial classes (the ``batches`` of ``LABELS``); a script's
    steps are in its searcher's unit (``epochs``, see
    :func:`~determined.common.entrypoint.step_unit`); ``steps`` where units differ.

    Example:
        >>> step_labels([{"entrypoint": "python3 train.py",
        ...               "searcher": {"max_length": {"epochs": 3}}}])["total_batches"]
        'epochs'
    """
    units = {step_unit(c) for c in configs}
    if units <= {"batch"}:
        return {}
    plural = STEP_UNITS[units.pop()] if len(units) == 1 else "steps"
    return {"total_batches": plural, "batches": plural}


def _one_metric(exps: Sequence[Dict[str, Any]]) -> Any:
    """The searcher metric the experiments share; None if they differ."""
    names = {e["config"]["searcher"]["metric"] for e in exps}
    return names.pop() if len(names) == 1 else None


def metric_columns(rows: Sequence[Dict[str, Any]]) -> List[str]:
    """The ``training.*`` then ``validation.*`` columns present in workload rows."""
    seen: Dict[str, None] = {}
    for r in rows:
        for k in r:
            if k.startswith(("training.", "validation.")):
                seen[k] = None
    return sorted(seen, key=lambda k: (not k.startswith("training."), k))


def steps_json(workloads: Sequence[Dict[str, Any]],
               checkpoints: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """A trial's workloads in upstream's ``steps`` shape, one per batch count reported:
    ``{"total_batches", "end_time", "metrics": {"avg_metrics", "batch_metrics",
    "num_inputs"} | None, "validation": {"metrics": {"validation_metrics", "num_inputs"}}
    | None, "checkpoint": {"id", "uuid", "state"} | None}``."""
    steps: Dict[int, Dict[str, Any]] = {}
    for w in workloads:
        step = steps.setdefault(w["total_batches"], {
            "total_batches": w["total_batches"], "end_time": w["end_time"], "metrics": None,
            "validation": None, "checkpoint": None})
        if w["kind"] == "training":
            step["metrics"] = {"avg_metrics": w["metrics"], "batch_metrics": w["batch_metrics"],
                               "num_inputs": w["num_inputs"]}
        else:
            step["validation"] = {"metrics": {"validation_metrics": w["metrics"],
                                              "num_inputs": w["num_inputs"]}}
    for ck in checkpoints:
        step = steps.setdefault(ck["total_batches"], {
            "total_batches": ck["total_batches"], "end_time": ck.get("end_time"),
            "metrics": None, "validation": None, "checkpoint": None})
        step["checkpoint"] = {"id": ck.get("id"), "uuid": ck["uuid"], "state": ck["state"]}
    return [steps[b] for b in sorted(steps)]


def _gather(c: MasterClient, ids: Sequence[int], all_metrics: bool) -> Tuple[List[Dict[str, Any]], ...]:
    """(experiments, trials, workloads): the JSON of each experiment, with its trials and
    checkpoints, and the flat rows of the three tables."""
    exps: List[Dict[str, Any]] = []
    trial_rows: List[Dict[str, Any]] = []
    workloads: List[Dict[str, Any]] = []
    for exp_id in ids:
        exp = c.get_experiment(exp_id)
        exp["checkpoints"] = c.list_checkpoints(exp_id)
        metric = exp["config"]["searcher"]["metric"]
        for i, t in enumerate(exp["trials"]):
            t = exp["trials"][i] = c.get_trial(t["id"])
            t["workloads"] = workload_rows(t, exp["checkpoints"], metric, all_metrics)
            if all_metrics:  # per-batch metrics and num_inputs, as upstream's steps
                loads = c.request("GET", f"/trials/{t['id']}/workloads")["workloads"]
                t["steps"] = steps_json(loads, [ck for ck in exp["checkpoints"]
                                                if ck["trial_id"] == t["id"]])
            else:
                t.pop("metrics", None)
            trial_rows.append({**t, "trial_id": t["id"]})
            workloads += t["workloads"]
        exps.append(exp)
    return exps, trial_rows, workloads


def _describe(args: argparse.Namespace) -> int:
    with client(args) as c:
        exps, trials, workloads = _gather(c, args.experiment_ids, args.metrics)
    if args.json:
        print(json.dumps(exps, default=str))  # a list, as upstream, even for one id
        return 0
    exp_rows = [{**e, "labels": ",".join(e.get("labels") or [])} for e in exps]
    if not (args.csv or args.outdir):
        for r in exp_rows:
            r["progress"] = progress_text(r["state"], r.get("progress"))
    metric = _one_metric(exps)
    labels = {**metric_labels(metric), **step_labels([e["config"] for e in exps])}
    workload_columns = WORKLOAD_COLUMNS + [  # a table has the searcher metric once
        col for col in metric_columns(workloads)
        if args.csv or args.outdir or col != f"validation.{metric}"]
    tables = [("experiments", exp_rows, EXPERIMENT_COLUMNS), ("trials", trials, TRIAL_COLUMNS),
              ("workloads", workloads, workload_columns)]
    if args.outdir:
        os.makedirs(args.outdir, exist_ok=True)
        for name, rows, columns in tables:
            path = os.path.join(args.outdir, f"{name}.csv")
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(csv_text(rows, columns))
            print(path)
        return 0
    if args.csv:
        sys.stdout.write("\n".join(csv_text(rows, columns) for _, rows, columns in tables))
        return 0
    for i, (name, rows, columns) in enumerate(tables):
        if i:
            print()
        details = wait_details(name.capitalize()[:-1], rows) if name != "workloads" else []
        if details:
            rows, columns = with_waiting(rows, columns)
        print_rows(rows, columns, args, title=name.capitalize(), labels=labels,
                   drop_first=WORKLOAD_DROP_FIRST if name == "workloads" else None)
        for line in details:
            print(line)
        if name == "trials":  # which failed, and why the first did
            for line in failed_trials_lines(rows, local_flags(args)):
                print(line)
        if name == "experiments":
            for e in exps:
                if e.get("git_commit"):  # det e create --git
                    print(f"Experiment {e['id']} git: {e['git_remote'] or '(no remote)'} "
                          f"{e['git_commit']} by {e['git_committer']} at "
                          f"{e['git_commit_date']}")
    return 0


def _config(args: argparse.Namespace) -> int:
    with client(args) as c:
        config = c.get_experiment(args.experiment_id)["config"]
    if args.json:
        print(json.dumps(config, default=str))
    else:
        import yaml

        sys.stdout.write(yaml.safe_dump(config, sort_keys=False, default_flow_style=False))
    return 0


def _list_trials(args: argparse.Namespace) -> int:
    with client(args) as c:
        trials = c.list_trials(args.experiment_id)
        config = None if args.json or args.csv else c.get_experiment(args.experiment_id)["config"]
    rows = [{**t, "trial_id": t["id"]} for t in trials]
    columns = [col for col in TRIAL_COLUMNS if col != "experiment_id"]
    if not args.json:
        rows, columns = with_waiting(rows, columns)
    labels = {} if config is None else {**metric_labels(config["searcher"]["metric"]),
                                        **step_labels([config])}
    print_rows(rows, columns, args, labels=labels)
    return 0


def add_list_checkpoints_args(parser: Any) -> None:
    """``EXPERIMENT_ID [--best N]`` and the output and local flags, run by
    :func:`list_checkpoints`: ``det experiment list-checkpoints`` and
    ``det checkpoint list`` are the same command."""
    parser.description = (f"List an experiment's checkpoints, {NEWEST_FIRST}; with --best N, "
                          "the N best by the searcher metric, best first.")
    parser.add_argument("experiment_id", type=positive_int)
    parser.add_argument("--best", type=positive_int, default=None, metavar="N",
                        help="only the N best checkpoints by the searcher metric (its "
                             "smaller_is_better), best first; only completed checkpoints "
                             "with a validation of it count")
    add_format_flags(parser)
    add_local_flags(parser)
    parser.set_defaults(func=list_checkpoints)


def list_checkpoints(args: argparse.Namespace) -> int:
    """`det e list-checkpoints` and `det checkpoint list`: newest first (the master
    lists them in the order they were made), or the ``--best`` N, best first."""
    with client(args) as c:
        config = c.get_experiment(args.experiment_id)["config"]
        checkpoints = c.list_checkpoints(args.experiment_id)
    searcher = config["searcher"]
    metric, smaller = searcher["metric"], searcher.get("smaller_is_better", True)
    for ck in checkpoints:
        value = (ck.get("validation") or {}).get(metric)
        ck["batches"], ck["validation_metric"] = ck["total_batches"], value
        ck["size_bytes"] = sum((ck.get("resources") or {}).values())
    if args.best is not None:
        checkpoints = ranked_checkpoints(checkpoints, metric, smaller)[:args.best]
    else:
        checkpoints = checkpoints[::-1]
    if args.json:
        print(json.dumps(checkpoints, default=str))
        return 0
    # The searcher metric gets a column of its own name; a table shows 4 significant
    # digits (CSV and JSON every one).
    shown = (lambda v: v) if args.csv else (lambda v: None if v is None else format_value(v))
    rows = [{**ck, metric: shown(ck["validation_metric"])} for ck in checkpoints]
    columns = [metric if col == "validation" else col for col in CHECKPOINT_COLUMNS]
    print_rows(rows, columns, args, labels=step_labels([config]))
    return 0


def _download_model_def(args: argparse.Namespace) -> int:
    if os.path.exists(args.output_dir) and not os.path.isdir(args.output_dir):
        usage_error(f"--output-dir must be a directory. Received: {args.output_dir!r} is a file")
    with client(args) as c:
        data = c.request("GET", f"/experiments/{args.experiment_id}/model_def")
    os.makedirs(args.output_dir, exist_ok=True)
    path = os.path.join(args.output_dir, f"experiment_{args.experiment_id}_model_def.tgz")
    with open(path, "wb") as f:
        f.write(base64.b64decode(data["b64_tgz"]))
    print(path)
    return 0
