"""``det experiment`` commands served by a master: create, list, state changes, wait."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict

from rich.console import Console

from determined._metric_order import MetricOrder
from determined.cli._failures import failed_trials_lines
from determined.cli._git import git_info
from determined.cli._progress import ExperimentProgress, progress_text
from determined.cli._waiting import with_waiting
from determined.cli._remote import (
    client,
    print_rows,
    read_config_text,
    unreachable_hint,
)
from determined.common.api import APIError, MasterClient, pack_context
from determined.common.api._log_tail import follow_experiment, trial_log_page
from determined.common.console import TrimmedConsole
from determined.errors import InvalidConfigError, InvalidModelDefError
from determined.cli._argtypes import positive_float, positive_int

__all__ = ["add_verbs", "create_remote", "follow", "list_remote", "read_context", "templated"]


def add_verbs(verbs: Any) -> None:
    for verb in ("pause", "activate", "cancel", "kill", "archive", "unarchive"):
        p = verbs.add_parser(verb, help=f"{verb} an experiment")
        p.add_argument("experiment_id", type=positive_int)
        p.set_defaults(func=_action, action=verb)
    wait = verbs.add_parser("wait", help="wait until the experiment ends (exit 0 iff COMPLETED)")
    wait.add_argument("experiment_id", type=positive_int)
    wait.add_argument("--polling-interval", type=positive_float, default=5.0,
                      help="seconds between polls (default 5)")
    wait.set_defaults(func=_wait)
    from determined.cli._experiment_show import add_show_verbs

    add_show_verbs(verbs)


def read_context(args: argparse.Namespace) -> bytes:
    """The packed model directory of ``det e create`` (clear errors for bad paths)."""
    if not os.path.isfile(args.config_file):
        raise InvalidModelDefError(f"Experiment config file {args.config_file} does not exist "
                                   "or is not a file")
    try:
        return pack_context(args.model_def)
    except ValueError as e:
        raise InvalidModelDefError(f"model_def: {e}") from None


def templated(c: MasterClient, template: str, config: Any, path: str) -> Dict[str, Any]:
    """The config (YAML text or a mapping) merged over the master's template."""
    from determined.cli._template import fetch_template, merge_template
    from determined.config import parse_yaml

    if isinstance(config, str):
        config = parse_yaml(config)
    if not isinstance(config, dict):
        raise InvalidConfigError([("", "expected a mapping of config fields")],
                                 source=f"config file {path}")
    return merge_template(config, fetch_template(c, template))


def create_remote(args: argparse.Namespace) -> int:
    packed = read_context(args)
    config_text: Any = read_config_text(args.config_file)
    git = git_info(args.model_def) if getattr(args, "git", False) else None
    console = TrimmedConsole(stderr=True)
    with client(args) as c:
        if getattr(args, "template", None):
            config_text = templated(c, args.template, config_text, args.config_file)
        try:
            exp_id = c.create_experiment(config_text, packed, activate=not args.paused, git=git)
        except APIError as e:
            if e.status == 400:
                e = _naming_file(e, args.config_file)
            if e.status == 400 and getattr(args, "template", None):
                raise APIError(f"{e}\nThe config was merged over template {args.template!r}; "
                               f"`det template describe {args.template}` shows it", e.status,
                               e.details) from None
            raise unreachable_hint(e) from None
        if args.json:
            print(json.dumps({"id": exp_id}))
        else:
            print(f"Created experiment {exp_id}")
        if not args.follow:
            return 0
        exp = follow(c, exp_id, console)
        _final_line(exp, console)
        return 0 if exp["state"] == "COMPLETED" else 1


def _naming_file(e: APIError, config_file: str) -> APIError:
    """The master's "Invalid experiment config (N errors)" names the file, as a local
    run's does (the master only saw its text)."""
    head = "Invalid experiment config ("
    text = str(e)
    if not text.startswith(head):
        return e
    return APIError(f"Invalid experiment config {config_file} ({text[len(head):]}", e.status,
                    e.details)


def follow(c: MasterClient, exp_id: int, console: Console, interval: float = 1.0,
           logs: bool = True) -> Dict[str, Any]:
    """Show progress (and the first trial's logs) until the experiment ends; its final JSON.
    Ctrl-C stops following (exit 130) and says how to stop the experiment itself."""
    try:
        return _follow(c, exp_id, console, interval, logs)
    except KeyboardInterrupt:
        console.print(f"det: stopped following; experiment {exp_id} keeps running on the "
                      f"master. Stop it with `det experiment kill {exp_id}` (or pause it: "
                      f"`det experiment pause {exp_id}`); follow it again with "
                      f"`det experiment wait {exp_id}`", markup=False, highlight=False,
                      soft_wrap=True)
        raise SystemExit(130) from None


def _follow(c: MasterClient, exp_id: int, console: Console, interval: float,
            logs: bool) -> Dict[str, Any]:
    with ExperimentProgress(exp_id, console) as progress:
        return follow_experiment(lambda: c.get_experiment(exp_id),
                                 lambda trial_id, after: trial_log_page(c, trial_id, after),
                                 lambda line: progress.log(line["line"]),
                                 on_update=progress.update, interval=interval, logs=logs)


def _final_line(exp: Dict[str, Any], console: Console) -> None:
    searcher = exp["config"]["searcher"]
    order = MetricOrder.of(exp["config"])
    scored = [t for t in exp["trials"] if order.comparable(t.get("best_validation"))]
    text = f"Experiment {exp['id']} {exp['state']}"
    if scored:
        best = min(scored, key=lambda t: order.key(t["best_validation"]))
        text += f": best {searcher['metric']} {best['best_validation']:.6g} (trial {best['id']})"
        if best.get("latest_checkpoint"):  # a line of its own: 80 columns, and easy to copy
            text += f"\nTrial {best['id']}'s latest checkpoint: {best['latest_checkpoint']}"
    for line in failed_trials_lines(exp["trials"]):  # which, and why the first failed
        text += f"\n{line}"
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def list_remote(args: argparse.Namespace) -> int:
    with client(args) as c:
        try:
            everything = getattr(args, "all", False)  # -a: archived and other users' too
            rows = c.list_experiments(archived=everything,
                                      user=None if everything else c.username)
        except APIError as e:
            raise unreachable_hint(e, "list the experiments run on this machine") from None
    if not args.json:
        for r in rows:
            r["progress"] = progress_text(r["state"], r.get("progress"))
            r["labels"] = ",".join(r.get("labels") or [])
    columns = ["id", "owner", "description", "state", "progress", "num_trials", "labels",
               "start_time", "end_time"]
    if not args.json:
        rows, columns = with_waiting(rows, columns)
    if getattr(args, "all", False):  # every user's: a narrow terminal keeps the owner
        columns.append("archived")
        print_rows(rows, columns, args, drop_first=["archived", "labels", "end_time",
                                                    "num_trials"])
        return 0
    print_rows(rows, columns, args)
    if not rows and not (args.json or getattr(args, "csv", False)) and sys.stdout.isatty():
        # An empty table alone read as "no experiments"; -a/--all shows other users' and
        # archived ones.
        print("(no unarchived experiments of yours; `det experiment list --all` shows all)")
    return 0


def _action(args: argparse.Namespace) -> int:
    with client(args) as c:
        exp = c.experiment_action(args.experiment_id, args.action)
    archived = " (archived)" if exp.get("archived") else ""
    print(f"Experiment {exp['id']}: {exp['state']}{archived}")
    return 0


def _wait(args: argparse.Namespace) -> int:
    with client(args) as c:
        exp = follow(c, args.experiment_id, TrimmedConsole(stderr=True),
                     interval=args.polling_interval, logs=False)
    print(f"Experiment {args.experiment_id}: {exp['state']}", flush=True)
    failed = failed_trials_lines(exp["trials"])  # which, and why the first failed
    if failed:  # as `det e create --follow` ends; stdout keeps the state alone
        TrimmedConsole(stderr=True).print("\n".join(failed), markup=False, highlight=False,
                                          soft_wrap=True)
    return 0 if exp["state"] == "COMPLETED" else 1

