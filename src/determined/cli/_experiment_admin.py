"""``det experiment delete`` and ``det experiment set gc-policy``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from determined.cli._remote import client, print_rows
from determined.common.wording import counted
from determined.cli._argtypes import count, positive_int

__all__ = ["add_admin_verbs"]


def add_admin_verbs(verbs: Any) -> None:
    """Add ``delete`` to ``det experiment`` and ``gc-policy`` to ``det experiment set``."""
    delete = verbs.add_parser("delete", help="delete a finished experiment, its checkpoints "
                                             "and records (its owner or an admin)")
    delete.add_argument("experiment_id", type=positive_int)
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    delete.set_defaults(func=_delete)

    setp = verbs.choices["set"]
    fields = next(a for a in setp._actions if isinstance(a, argparse._SubParsersAction))
    gc = fields.add_parser("gc-policy", help="change which checkpoints are kept (shows what "
                                             "would be deleted; --yes applies it)")
    gc.add_argument("experiment_id", type=positive_int)
    for flag in ("--save-experiment-best", "--save-trial-best", "--save-trial-latest"):
        gc.add_argument(flag, type=count, required=True, metavar="N")
    gc.add_argument("--yes", action="store_true",
                    help="apply the policy without asking (deletes the checkpoints listed)")
    gc.set_defaults(func=_gc_policy)


def _confirm(question: str) -> bool:
    """Ask on a terminal; without one (or on Ctrl-D) the answer is no."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _delete(args: argparse.Namespace) -> int:
    path = f"/experiments/{args.experiment_id}"
    with client(args) as c:
        if not args.yes:
            # The master's checks first (owner or admin, finished, no registered
            # checkpoint): a deletion it would refuse is refused before asking.
            found = c.request("DELETE", path, params={"dry_run": "true"})
            events = found.get("tensorboard_files")  # None: a master before it said
            tensorboard = (f", its {counted(events, 'TensorBoard event file')}"
                           if events else "")
            if not _confirm(f"Delete experiment {args.experiment_id}, its "
                            f"{counted(found['checkpoints'], 'checkpoint')}{tensorboard} "
                            "and all its records?"):
                print("Nothing deleted (confirm with --yes)")
                return 1
        answer = c.request("DELETE", path)
    removed = counted(len(answer["deleted_checkpoints"]), "checkpoint")
    events = answer.get("deleted_tensorboard_files")
    if events:
        removed += f" and {counted(events, 'TensorBoard event file')}"
    print(f"Deleted experiment {args.experiment_id} ({removed} removed from storage)")
    return 0


def _gc_policy(args: argparse.Namespace) -> int:
    policy = {"save_experiment_best": args.save_experiment_best,
              "save_trial_best": args.save_trial_best,
              "save_trial_latest": args.save_trial_latest}
    with client(args) as c:
        doomed = c.request("GET", f"/experiments/{args.experiment_id}/gc-preview",
                           params=policy)["checkpoints"]
        if doomed:
            print(f"This policy deletes {counted(len(doomed), 'checkpoint')} of experiment "
                  f"{args.experiment_id}:")
            from determined.cli._experiment_show import step_labels

            config = c.get_experiment(args.experiment_id)["config"]
            rows = [{**ck, "batches": ck["total_batches"]} for ck in doomed]
            print_rows(rows, ["trial_id", "batches", "uuid", "validation", "end_time"],
                       argparse.Namespace(), labels=step_labels([config]))
        else:
            print(f"This policy deletes no checkpoint of experiment {args.experiment_id}.")
        if not args.yes and not _confirm("Apply it?"):
            print("Nothing changed (apply with --yes)")
            return 0
        answer = c.request("PATCH", f"/experiments/{args.experiment_id}/gc-policy", json=policy)
    if answer.get("applies") == "now":
        print(f"Set the GC policy of experiment {args.experiment_id}; deleted "
              f"{counted(len(answer['deleted']), 'checkpoint')}")
    else:
        print(f"Set the GC policy of experiment {args.experiment_id}; it applies when the "
              "experiment ends")
    return 0
