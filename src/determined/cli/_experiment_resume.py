"""``det experiment resume --local ID``: continue an interrupted local search."""

from __future__ import annotations

import argparse
from typing import Any

from determined.errors import MasterError
from determined.cli._argtypes import positive_int

__all__ = ["add_resume_verb"]


def add_resume_verb(verbs: Any) -> None:
    resume = verbs.add_parser(
        "resume", help="continue a --local experiment whose driver was interrupted")
    resume.add_argument("experiment_id", type=positive_int)
    resume.add_argument("--local", action="store_true", help="a local experiment (required)")
    resume.add_argument("--local-dir", default=None,
                        help="implies --local (default $DET_LOCAL_DIR or ~/.determined/local)")
    resume.add_argument("--slots", type=positive_int, default=1, help="trials to run at once (default 1)")
    resume.add_argument("--no-progress", action="store_true", help="no progress bar")
    resume.add_argument("--json", action="store_true", help="print the result as JSON")
    resume.set_defaults(func=_resume)


def _resume(args: argparse.Namespace) -> int:
    from determined.common.console import TrimmedConsole

    from determined.cli._local_result import finish_local_run
    from determined.local import resume_local_experiment

    if not (args.local or args.local_dir is not None):
        raise MasterError("det experiment resume works on --local experiments; on a master, "
                          "experiments continue on their own (det experiment activate ID)")
    result = resume_local_experiment(
        args.experiment_id, slots=args.slots, local_dir=args.local_dir,
        console=TrimmedConsole(stderr=args.json), show_progress=not args.no_progress)
    return finish_local_run(result, args.json)
