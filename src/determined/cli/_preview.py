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

    import yaml

    from determined import searcher as searchers
    from determined.cli._table import table_text
    from determined.common.console import TrimmedConsole
    from determined.common.wording import counted
    from determined.config import load_config, validate_config

    raw = load_config(args.config_file)
    # The same plan on every run: the simulated trials' seeds come from the experiment's.
    if isinstance(raw.get("reproducibility", {}), dict):
        raw["reproducibility"] = {"experiment_seed": 0, **raw.get("reproducibility", {})}
    cfg = validate_config(raw, source=f"experiment config {args.config_file}")
    # Every trial reports the same metric, so nobody is promoted early: the plan's shape.
    result = searchers.simulate(cfg, lambda hparams, length, seed: float(seed % 1000))
    lengths = Counter()
    for trial in result.trials.values():
        lengths[trial.trained_units] += 1
    searcher = searchers.make_searcher(cfg)
    # A self-paced search plays scripts that train to max_time (time metric units).
    unit = (searcher.unit.value if searcher.unit is not None else
            searcher.time_metric.name if searcher.time_metric else "steps")
    console = TrimmedConsole()
    # As 0.13 printed it: YAML, one field a line (unset fields left out); the searcher's
    # name first, then the fields in the order the config wrote them, then the defaults.
    written = raw.get("searcher") if isinstance(raw.get("searcher"), dict) else {}
    fields = {k: v for k, v in cfg["searcher"].items() if v is not None}
    order = ["name", *(k for k in written if k in fields), *fields]
    searcher_yaml = yaml.safe_dump({k: fields[k] for k in dict.fromkeys(order) if k in fields},
                                   default_flow_style=False, sort_keys=False)
    console.print("Using search configuration:", markup=False, highlight=False)
    console.print(searcher_yaml.rstrip(), markup=False, highlight=False, soft_wrap=True)
    # The plain table of det's other listings (``a | b`` over a ``---+---`` rule).
    rows = [{"trials": count, "training": length} for length, count in sorted(lengths.items())]
    console.print(table_text(rows, ["trials", "training"], labels={
        "training": f"training ({unit})"}), markup=False, highlight=False, soft_wrap=True,
        end="")
    console.print(f"Total: {counted(len(result.trials), 'trial')}, {result.total_units} {unit} "
                  "of training")
    if cfg["searcher"]["name"] not in _EXACT_PLANS:
        console.print("A plan with no trial better than another: a real search promotes "
                      "trials as their validations arrive, so its counts per length may "
                      "differ.", markup=False, highlight=False)
    return 0


#: Searchers whose trials and lengths do not depend on the metrics reported.
_EXACT_PLANS = ("single", "random", "grid")
