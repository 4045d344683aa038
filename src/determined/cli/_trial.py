"""``det trial`` (alias ``t``)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from determined.cli._remote import client, print_rows

__all__ = ["add_parser"]


def add_parser(nouns: Any) -> None:
    trial = nouns.add_parser("trial", aliases=["t"], help="inspect trials")
    verbs = trial.add_subparsers(dest="verb", metavar="ACTION")
    describe = verbs.add_parser("describe", help="show a trial and its metrics")
    describe.add_argument("trial_id", type=int)
    describe.add_argument("--json", action="store_true")
    describe.add_argument("--csv", action="store_true")
    describe.set_defaults(func=_describe)
    logs = verbs.add_parser("logs", help="print a trial's logs")
    logs.add_argument("trial_id", type=int)
    logs.add_argument("-f", "--follow", action="store_true", help="wait for new lines")
    group = logs.add_mutually_exclusive_group()
    group.add_argument("--head", type=int, default=None)
    group.add_argument("--tail", type=int, default=None)
    logs.set_defaults(func=_logs)
    kill = verbs.add_parser("kill", help="kill a trial")
    kill.add_argument("trial_id", type=int)
    kill.set_defaults(func=_kill)
    trial.set_defaults(func=lambda args: trial.print_help() or 0)


def _describe(args: argparse.Namespace) -> int:
    with client(args) as c:
        t = c.get_trial(args.trial_id)
    if args.json:
        print(json.dumps(t, default=str))
        return 0
    print(f"Trial {t['id']} (experiment {t['experiment_id']}): {t['state']}, "
          f"{t['total_batches']} batches, {t['restarts']} restarts, hparams {t['hparams']}")
    rows = [{"kind": m["kind"], "total_batches": m["total_batches"],
             "metrics": json.dumps(m["metrics"])} for m in t["metrics"]]
    print_rows(rows, ["kind", "total_batches", "metrics"], args)
    return 0


def _logs(args: argparse.Namespace) -> int:
    with client(args) as c:
        after = 0
        lines = c.get_trial_logs(args.trial_id, limit=args.head or 1000, tail=args.tail)
        while True:
            for line in lines:
                print(line["line"], flush=True)
                after = line["id"]
            if args.head is not None and not args.follow:
                return 0
            if len(lines) >= 1000 and args.tail is None:
                lines = c.get_trial_logs(args.trial_id, after_id=after)
                continue
            if not args.follow:
                return 0
            if c.get_trial(args.trial_id)["state"] != "ACTIVE":
                for line in c.get_trial_logs(args.trial_id, after_id=after):
                    print(line["line"], flush=True)
                return 0
            time.sleep(0.5)
            lines = c.get_trial_logs(args.trial_id, after_id=after)


def _kill(args: argparse.Namespace) -> int:
    with client(args) as c:
        t = c.request("POST", f"/trials/{args.trial_id}/kill")
    print(f"Trial {t['id']}: {t['state']}")
    return 0
