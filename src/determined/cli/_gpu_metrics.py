"""``det trial gpu-metrics TRIAL_ID``: the readings of the GPUs a trial ran on."""

from __future__ import annotations

import argparse
from typing import Any

from determined.cli._remote import add_format_flags, client, print_rows
from determined.cli._argtypes import count, positive_int

__all__ = ["add_gpu_metrics_verb"]


def add_gpu_metrics_verb(verbs: Any) -> None:
    p = verbs.add_parser("gpu-metrics",
                         help="print the utilization and memory of the GPUs a trial ran on")
    p.add_argument("trial_id", type=positive_int)
    p.add_argument("--tail", type=count, default=20, metavar="N",
                   help="only the newest N readings (default 20; 0: all)")
    add_format_flags(p)
    p.set_defaults(func=_gpu_metrics)


def _gpu_metrics(args: argparse.Namespace) -> int:
    with client(args) as c:
        params = {"limit": args.tail} if args.tail and args.tail > 0 else {}
        rows = c.request("GET", f"/trials/{args.trial_id}/gpu-metrics",
                         params=params)["gpu_metrics"]
    if not rows and not (getattr(args, "json", False) or getattr(args, "csv", False)):
        print(f"Trial {args.trial_id} has no GPU samples (it ran on no GPU, or the agent "
              "could not read its GPUs)")
        return 0
    if not getattr(args, "json", False):
        rows = [dict(r, utilization=f"{r['utilization']:.0f}%",
                     memory=f"{r['memory_used'] / 2**30:.1f} / "
                            f"{r['memory_total'] / 2**30:.1f} GiB") for r in rows]
    print_rows(rows, ["time", "gpu_index", "gpu_uuid", "utilization", "memory"], args)
    return 0
