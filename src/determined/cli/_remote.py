"""Helpers for commands that talk to a master: the client, id lists, tables, CSV and JSON."""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from typing import Any, Dict, List, NoReturn, Optional, Sequence, TextIO

from determined.common.api import APIError, MasterClient

__all__ = [
    "add_format_flags",
    "cell",
    "client",
    "csv_text",
    "id_list",
    "print_rows",
    "table_text",
    "unreachable_hint",
    "usage_error",
]


def client(args: argparse.Namespace) -> MasterClient:
    """A client of ``-m`` logged in as ``-u`` (or the cached user, else ``determined``)."""
    from determined.common.api import Authenticator

    auth = Authenticator(args.master, user=getattr(args, "user", None))
    return MasterClient(args.master, auth=auth)


def unreachable_hint(e: APIError) -> APIError:
    if e.status is None:
        return APIError(f"{e}\nStart a master with `det deploy local up`, or run the experiment "
                        "on this machine with --local")
    return e


def usage_error(message: str) -> NoReturn:
    """A bad argument combination: ``det: error: ...`` on stderr and exit status 2 (as argparse)."""
    print(f"det: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def id_list(text: str) -> List[int]:
    """argparse type of ``IDS``: comma-separated positive integers (``1,2,5``)."""
    ids: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise argparse.ArgumentTypeError(
                f"Expected comma-separated experiment ids such as 1,2,3. Received: {text!r}")
        ids.append(int(part))
    return ids


def add_format_flags(parser: argparse.ArgumentParser, csv_flag: bool = True) -> argparse._MutuallyExclusiveGroup:
    """``--json`` and (optionally) ``--csv``, mutually exclusive."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="print JSON (for scripts)")
    if csv_flag:
        group.add_argument("--csv", action="store_true", help="print CSV (for scripts)")
    return group


def cell(value: Any, short: bool = True) -> str:
    """One table or CSV cell: blanks for None, compact JSON for maps and lists; ``short``
    rounds floats to 6 significant digits (tables; CSV keeps every digit)."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str, separators=(", ", ": "))
    if isinstance(value, float) and short:
        return f"{value:.6g}"
    return str(value)


def csv_text(rows: Sequence[Dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([cell(r.get(c), short=False) for c in columns])
    return buf.getvalue()


def table_text(rows: Sequence[Dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain table (``a | b`` with a ``---+---`` rule), never wrapped or truncated."""
    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths))

    out = [line(columns), "-+-".join("-" * w for w in widths)]
    out += [line(row) for row in cells]
    return "\n".join(out) + "\n"


def print_rows(rows: List[Dict[str, Any]], columns: Sequence[str], args: argparse.Namespace,
               title: Optional[str] = None, out: Optional[TextIO] = None) -> None:
    """Rows as a table (rich on a terminal, plain text otherwise), or JSON (--json) or CSV (--csv)."""
    out = out or sys.stdout
    if getattr(args, "json", False):
        out.write(json.dumps(rows, default=str) + "\n")
        return
    if getattr(args, "csv", False):
        out.write(csv_text(rows, columns))
        return
    if not out.isatty():
        if title:
            out.write(title + "\n")
        out.write(table_text(rows, columns))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(*(cell(r.get(c)) for c in columns))
    Console(file=out).print(table)
