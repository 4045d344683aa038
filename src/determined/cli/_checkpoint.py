"""``det checkpoint|c describe|download|list`` (describe and download live in
``_experiment_edit.py``; ``list EXPERIMENT_ID`` is ``det e list-checkpoints``)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser"]


def add_parser(nouns: Any) -> None:
    from determined.cli._experiment_edit import add_checkpoint_parser
    from determined.cli._experiment_show import add_list_checkpoints_args

    add_checkpoint_parser(nouns)
    ckpt = nouns.choices["checkpoint"]
    verbs = next(a for a in ckpt._actions if isinstance(a, argparse._SubParsersAction))
    add_list_checkpoints_args(
        verbs.add_parser("list", aliases=["ls"], help="list an experiment's checkpoints"))
