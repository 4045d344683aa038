"""``det preview-search CONFIG``: the trials and lengths a searcher plans."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser"]


def add_parser(nouns: Any) -> None:
    p = nouns.add_parser("preview-search", help="show the trials a searcher would create")
    p.add_argument("config_file")
    p.set_defaults(func=_preview)


def _preview(args: argparse.Namespace) -> int:
    from collections import Counter

    from rich.console import Console
    from rich.table import Table

    from determined import searcher as searchers
    from determined.config import load_config, validate_config

    cfg = validate_config(load_config(args.config_file), source=f"experiment config {args.config_file}")
    # Every trial reports the same metric, so nobody is promoted early: the plan's shape.
    result = searchers.simulate(cfg, lambda hparams, length, seed: float(seed % 1000))
    lengths = Counter()
    for trial in result.trials.values():
        lengths[trial.trained_units] += 1
    searcher = searchers.make_searcher(cfg)
    # A self-paced search plays scripts that train to max_time (time metric units).
    unit = (searcher.unit.value if searcher.unit is not None else
            searcher.time_metric.name if searcher.time_metric else "steps")
    console = Console()
    console.print(f"Using search configuration: {cfg['searcher']}", soft_wrap=True)
    table = Table()
    table.add_column("trials")
    table.add_column(f"training ({unit})")
    for length, count in sorted(lengths.items()):
        table.add_row(str(count), str(length))
    console.print(table)
    console.print(f"Total: {len(result.trials)} trials, {result.total_units} {unit} of training")
    return 0
