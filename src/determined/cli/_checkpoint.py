"""``det checkpoint|c describe|download|list`` (describe and download live in
``_experiment_edit.py``; ``list EXPERIMENT_ID`` is ``det e list-checkpoints``)."""

from __future__ import annotations

import argparse
from typing import Any

from determined.cli._remote import add_format_flags, add_local_flags

__all__ = ["add_parser"]


def add_parser(nouns: Any) -> None:
    from determined.cli._experiment_edit import add_checkpoint_parser
    from determined.cli._experiment_show import list_checkpoints

    add_checkpoint_parser(nouns)
    ckpt = nouns.choices["checkpoint"]
    verbs = next(a for a in ckpt._actions if isinstance(a, argparse._SubParsersAction))
    lst = verbs.add_parser("list", aliases=["ls"], help="list an experiment's checkpoints")
    lst.add_argument("experiment_id", type=int)
    lst.add_argument("--best", type=int, default=None, metavar="N",
                     help="only the N best checkpoints by the searcher metric")
    add_format_flags(lst)
    add_local_flags(lst)
    lst.set_defaults(func=list_checkpoints)
