"""``det``: argument parsing and dispatch. Handlers live in one module per noun."""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

import determined
from determined.errors import DeterminedError

__all__ = ["main", "build_parser"]


def _master_default() -> str:
    return os.environ.get("DET_MASTER") or os.environ.get("DET_MASTER_ADDR") or "localhost:8080"


def build_parser() -> argparse.ArgumentParser:
    from determined.cli import _cluster, _deploy, _experiment, _experiment_edit, _preview, _trial

    parser = argparse.ArgumentParser(
        prog="det",
        description="Determined: run and track deep-learning experiments.",
    )
    parser.add_argument("-m", "--master", default=_master_default(),
                        help="master address (default: $DET_MASTER or localhost:8080)")
    parser.add_argument("-u", "--user", default=None,
                        help="act as this user (default: the last one logged in, else "
                             "determined); see `det user login`")
    parser.add_argument("-v", "--version", action="version",
                        version=f"det {determined.__version__}")
    nouns = parser.add_subparsers(dest="noun", metavar="COMMAND")
    _experiment.add_parser(nouns)
    _preview.add_parser(nouns)
    _trial.add_parser(nouns)
    _experiment_edit.add_checkpoint_parser(nouns)
    _cluster.add_parser(nouns)
    _deploy.add_parser(nouns)
    from determined.cli import _user

    _user.add_parser(nouns)
    version = nouns.add_parser("version", help="print the client's and the master's versions")
    version.set_defaults(func=_cluster.version)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except DeterminedError as e:
        print(f"det: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("det: interrupted", file=sys.stderr)
        return 130
