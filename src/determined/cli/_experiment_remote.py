"""``det experiment`` commands served by a master."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from determined.cli._remote import client, print_rows, unreachable_hint
from determined.common.api import APIError, pack_context

__all__ = ["add_verbs", "create_remote", "list_remote"]

TERMINAL = ("COMPLETED", "CANCELED", "ERROR")


def add_verbs(verbs: Any) -> None:
    describe = verbs.add_parser("describe", help="show an experiment and its trials")
    describe.add_argument("experiment_id", type=int)
    describe.add_argument("--json", action="store_true")
    describe.set_defaults(func=_describe)
    for verb in ("pause", "activate", "cancel", "kill", "archive", "unarchive"):
        p = verbs.add_parser(verb, help=f"{verb} an experiment")
        p.add_argument("experiment_id", type=int)
        p.set_defaults(func=_action, action=verb)
    wait = verbs.add_parser("wait", help="wait until the experiment ends (exit 0 iff COMPLETED)")
    wait.add_argument("experiment_id", type=int)
    wait.add_argument("--polling-interval", type=float, default=5.0)
    wait.set_defaults(func=_wait)
    lc = verbs.add_parser("list-checkpoints", aliases=["lc"], help="list an experiment's checkpoints")
    lc.add_argument("experiment_id", type=int)
    lc.add_argument("--json", action="store_true")
    lc.add_argument("--csv", action="store_true")
    lc.set_defaults(func=_list_checkpoints)


def create_remote(args: argparse.Namespace) -> int:
    with open(args.config_file, encoding="utf-8") as f:
        config_text = f.read()
    packed = pack_context(args.model_def)
    with client(args) as c:
        try:
            exp_id = c.create_experiment(config_text, packed, activate=not args.paused)
        except APIError as e:
            raise unreachable_hint(e) from None
        if args.json:
            print(json.dumps({"id": exp_id}))
        else:
            print(f"Created experiment {exp_id}")
        if not args.follow:
            return 0
        return _follow(c, exp_id)


def _follow(c: Any, exp_id: int, interval: float = 1.0) -> int:
    """Print progress and the first trial's logs until the experiment ends."""
    last_state, log_after, first_trial = None, 0, None
    while True:
        exp = c.get_experiment(exp_id)
        if first_trial is None and exp["trials"]:
            first_trial = exp["trials"][0]["id"]
        if first_trial is not None:
            for line in c.get_trial_logs(first_trial, after_id=log_after):
                print(line["line"])
                log_after = line["id"]
        status = (exp["state"], round(100 * (exp["progress"] or 0)))
        if status != last_state:
            print(f"Experiment {exp_id}: {exp['state']} ({status[1]}%)", file=sys.stderr)
            last_state = status
        if exp["state"] in TERMINAL:
            return 0 if exp["state"] == "COMPLETED" else 1
        time.sleep(interval)


def list_remote(args: argparse.Namespace) -> int:
    with client(args) as c:
        try:
            rows = c.list_experiments(archived=getattr(args, "all", False))
        except APIError as e:
            raise unreachable_hint(e) from None
    for r in rows:
        r["progress"] = f"{100 * (r.get('progress') or 0):.0f}%" if not args.json else r["progress"]
    print_rows(rows, ["id", "owner", "description", "state", "progress", "num_trials",
                      "start_time", "end_time"], args)
    return 0


def _describe(args: argparse.Namespace) -> int:
    with client(args) as c:
        exp = c.get_experiment(args.experiment_id)
    if args.json:
        print(json.dumps(exp, default=str))
        return 0
    print(f"Experiment {exp['id']}: {exp['state']}  progress {100 * (exp['progress'] or 0):.0f}%  "
          f"searcher {exp['searcher']}  {exp['description']}")
    print_rows(exp["trials"], ["id", "state", "total_batches", "restarts", "best_validation",
                               "latest_checkpoint", "hparams"], args)
    return 0


def _action(args: argparse.Namespace) -> int:
    with client(args) as c:
        exp = c.experiment_action(args.experiment_id, args.action)
    print(f"Experiment {exp['id']}: {exp['state']}")
    return 0


def _wait(args: argparse.Namespace) -> int:
    with client(args) as c:
        while True:
            state = c.get_experiment(args.experiment_id)["state"]
            if state in TERMINAL:
                print(f"Experiment {args.experiment_id}: {state}")
                return 0 if state == "COMPLETED" else 1
            time.sleep(args.polling_interval)


def _list_checkpoints(args: argparse.Namespace) -> int:
    with client(args) as c:
        rows = c.list_checkpoints(args.experiment_id)
    for r in rows:
        r["validation"] = json.dumps(r.get("validation")) if not args.json else r["validation"]
    print_rows(rows, ["trial_id", "total_batches", "state", "uuid", "validation"], args)
    return 0
