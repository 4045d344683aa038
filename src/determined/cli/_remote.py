"""Helpers for commands that talk to a master."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from typing import Any, Dict, List, Sequence

from determined.common.api import APIError, MasterClient

__all__ = ["client", "print_rows", "unreachable_hint"]


def client(args: argparse.Namespace) -> MasterClient:
    return MasterClient(args.master)


def unreachable_hint(e: APIError) -> APIError:
    if e.status is None:
        return APIError(f"{e}\nStart a master with `det deploy local up`, or run the experiment "
                        "on this machine with --local")
    return e


def print_rows(rows: List[Dict[str, Any]], columns: Sequence[str], args: argparse.Namespace) -> None:
    """Rows as a table, or JSON (--json) or CSV (--csv)."""
    if getattr(args, "json", False):
        print(json.dumps(rows, default=str))
        return
    if getattr(args, "csv", False):
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        sys.stdout.write(buf.getvalue())
        return
    from rich.console import Console
    from rich.table import Table

    table = Table()
    for col in columns:
        table.add_column(col)
    for r in rows:
        table.add_row(*("" if r.get(c) is None else str(r.get(c)) for c in columns))
    Console().print(table)
