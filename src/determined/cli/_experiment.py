"""``det experiment`` (alias ``e``)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from determined.cli._remote import add_local_flags
from determined.errors import MasterError
from determined.cli._argtypes import positive_int

__all__ = ["add_parser"]


def add_parser(nouns: Any) -> None:
    exp = nouns.add_parser("experiment", aliases=["e"], help="manage experiments")
    verbs = exp.add_subparsers(dest="verb", metavar="ACTION")

    create = verbs.add_parser("create", help="create an experiment from a config and a model directory")
    create.add_argument("config_file", help="experiment config (YAML)")
    create.add_argument("model_def", help="model definition (context) directory")
    create.add_argument("--local", action="store_true",
                        help="run on this machine, no master (with --test: in this process)")
    create.add_argument("-t", "--test-mode", "--test", dest="test_mode", action="store_true",
                        help="train one batch, validate and checkpoint, to debug the model quickly "
                             "(on the master unless --local)")
    create.add_argument("--slots", type=positive_int, default=1,
                        help="with --local: trials to run at once (default 1)")
    create.add_argument("--local-dir", default=None,
                        help="implies --local: where records and checkpoints go "
                             "(default $DET_LOCAL_DIR or ~/.determined/local)")
    create.add_argument("--no-progress", action="store_true", help="with --local: no progress bar")
    create.add_argument("--paused", action="store_true", help="create the experiment paused")
    create.add_argument("-f", "--follow-first-trial", "--follow", dest="follow", action="store_true",
                        help="show progress and stream the first trial's logs until the end")
    create.add_argument("--template", default=None,
                        help="merge the config over this template (`det template list`)")
    create.add_argument("-g", "--git", action="store_true",
                        help="record the model definition's git remote, commit, committer "
                             "and commit date with the experiment (tracked files must be "
                             "committed; `det e describe --json` shows them)")
    create.add_argument("--json", action="store_true", help="print the result as JSON")
    create.set_defaults(func=_create)

    lst = verbs.add_parser("list", help="list experiments")
    add_local_flags(lst)
    fmt = lst.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print JSON (for scripts)")
    fmt.add_argument("--csv", action="store_true", help="print CSV (for scripts)")
    lst.add_argument("-a", "--all", action="store_true", help="include archived experiments and other users'")
    lst.set_defaults(func=_list)
    from determined.cli._experiment_remote import add_verbs

    add_verbs(verbs)
    from determined.cli._experiment_edit import add_experiment_verbs

    add_experiment_verbs(verbs)
    from determined.cli._experiment_admin import add_admin_verbs

    add_admin_verbs(verbs)
    from determined.cli._experiment_resume import add_resume_verb

    add_resume_verb(verbs)
    exp.set_defaults(func=_list, local=False, local_dir=None, json=False, csv=False, all=False)


def _create(args: argparse.Namespace) -> int:
    from determined.common.console import TrimmedConsole

    _check_utf8(args.config_file)
    _print_config_warnings(args.config_file)

    if args.template is not None and (args.local or args.local_dir is not None):
        raise MasterError(f"--template {args.template}: templates live on a master; "
                          "--local runs cannot use them")
    if args.local_dir is not None:
        args.local = True
    if not args.local:
        if args.test_mode:
            from determined.cli._experiment_test import create_test_remote

            return create_test_remote(args)
        from determined.cli._experiment_remote import create_remote

        return create_remote(args)
    from determined.local import prepare_config, run_local_experiment, run_test_mode
    from determined.local._store import default_local_dir

    console = TrimmedConsole(stderr=args.json)
    for flag, used in (("--paused", args.paused), ("--follow", args.follow),
                       ("--git", args.git)):
        if used:
            raise MasterError(f"{flag} needs a master; it has no meaning for --local runs")
    if args.test_mode:
        local_dir = os.path.abspath(args.local_dir or default_local_dir())
        from determined.config import (load_config, local_test_config, one_batch_lengths,
                                       record_assumed_metric, validate_as_written)

        # As 0.13: a partial config (a searcher without a name) works in local test mode,
        # and one batch replaces the searcher's length whatever its unit.
        written = load_config(args.config_file)
        raw = local_test_config(written)
        validate_as_written(raw, f"experiment config {args.config_file}")
        raw = one_batch_lengths(raw)
        searcher = written.get("searcher")
        if not (isinstance(searcher, dict) and searcher.get("metric")):
            record_assumed_metric(raw, searcher)  # the default: warned about, not required
        cfg = prepare_config(raw, args.model_def, local_dir)
        summary = run_test_mode(cfg, args.model_def, console)
        if args.json:
            print(json.dumps(summary, default=str))
        return 0
    result = run_local_experiment(
        args.config_file, args.model_def, slots=args.slots, local_dir=args.local_dir,
        console=console, show_progress=not args.no_progress,
    )
    from determined.cli._local_result import finish_local_run

    return finish_local_run(result, args.json)


def _check_utf8(path: str) -> None:
    """A config that is not UTF-8 text: one clear line naming the file."""
    from determined.errors import DeterminedError

    try:
        with open(path, "rb") as f:
            f.read().decode("utf-8")
    except OSError:
        return  # the create path names a missing or unreadable file
    except UnicodeDecodeError as e:
        raise DeterminedError(f"config file {path} is not UTF-8 text ({e.reason} at byte "
                              f"{e.start}); save it as UTF-8") from None


def _print_config_warnings(path: str) -> None:
    """One line on stderr per config field accepted without effect here."""
    import sys

    from determined.config import config_warnings, load_config
    from determined.errors import InvalidConfigError

    try:
        warnings = config_warnings(load_config(path))
    except InvalidConfigError:
        return  # the create path reports it
    for warning in warnings:
        print(f"det: warning: {warning}", file=sys.stderr)


def _list(args: argparse.Namespace) -> int:
    """Experiments of the master, or with ``--local`` those of the local directory (the
    same columns and JSON: both read the master's schema)."""
    from determined.cli._experiment_remote import list_remote

    return list_remote(args)
