"""Helpers for commands that talk to a master: the client, id lists, tables, CSV and JSON."""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import re
import shutil
import sys
from typing import Any, Dict, List, NoReturn, Optional, Sequence, TextIO

import yaml

from determined.common.api import APIError, MasterClient
from determined.errors import InvalidConfigError, MasterError
from determined.util import format_value

__all__ = [
    "read_config_text",
    "add_format_flags",
    "add_local_flags",
    "cell",
    "client",
    "compact",
    "csv_text",
    "id_list",
    "is_local",
    "print_rows",
    "sdk",
    "human_time",
    "table_text",
    "terminal_width",
    "unreachable_hint",
    "usage_error",
]


def client(args: argparse.Namespace) -> MasterClient:
    """A client of ``-m`` logged in as ``-u`` (or the cached user, else ``determined``);
    with ``--local``/``--local-dir``, a reader of the local directory's records that
    answers the same calls with the same JSON (``determined.local.LocalClient``)."""
    from determined.common.api import Authenticator

    if is_local(args):
        from determined.local import LocalClient

        return LocalClient(getattr(args, "local_dir", None))  # type: ignore[return-value]
    auth = Authenticator(args.master, user=getattr(args, "user", None))
    return MasterClient(args.master, auth=auth)


def is_local(args: argparse.Namespace) -> bool:
    """Whether the command reads local experiments (``--local`` or ``--local-dir``)."""
    return bool(getattr(args, "local", False) or getattr(args, "local_dir", None))


def add_local_flags(parser: argparse.ArgumentParser) -> None:
    """``--local`` and ``--local-dir``: read the records of local experiments instead of
    asking a master."""
    parser.add_argument("--local", action="store_true",
                        help="read local experiments (those run with --local), no master")
    parser.add_argument("--local-dir", default=None,
                        help="implies --local: the local directory "
                             "(default $DET_LOCAL_DIR or ~/.determined/local)")


def sdk(args: argparse.Namespace) -> Any:
    """The Python SDK's ``Determined`` for ``-m``/``-u``, or for the local directory."""
    from determined.experimental import Determined

    if is_local(args):
        return Determined.local(getattr(args, "local_dir", None))
    return Determined(args.master, user=getattr(args, "user", None))


def unreachable_hint(e: APIError, local: str = "run the experiment on this machine") -> APIError:
    """No answer from the master: say how to start one, or what ``--local`` does here."""
    if e.status is None:
        return APIError(f"{e}\nStart a master with `det deploy local up`, or {local} with --local")
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


def add_format_flags(parser: argparse.ArgumentParser, csv_flag: bool = True,
                     suppress: bool = False) -> argparse._MutuallyExclusiveGroup:
    """``--json`` and (optionally) ``--csv``, mutually exclusive. ``suppress``: no
    default, so a flag given to the parent command (``det agent --json list``) holds."""
    group = parser.add_mutually_exclusive_group()
    default = argparse.SUPPRESS if suppress else False
    group.add_argument("--json", action="store_true", default=default,
                       help="print JSON (for scripts)")
    if csv_flag:
        group.add_argument("--csv", action="store_true", default=default,
                           help="print CSV (for scripts)")
    return group


_ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$")


def human_time(value: str) -> str:
    """An ISO timestamp as local time to the second (``2026-11-23 19:03:25``)."""
    try:
        t = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if t.tzinfo is not None:
        t = t.astimezone()
    return t.strftime("%Y-%m-%d %H:%M:%S")


def compact(value: Any) -> str:
    """A map as ``k=v k=v`` (hyperparameters), floats to 4 significant digits."""
    if isinstance(value, dict):
        return " ".join(f"{k}={compact(v) if not isinstance(v, dict) else cell(v)}"
                        for k, v in value.items())
    if isinstance(value, float):
        return format_value(value)
    return cell(value)


def cell(value: Any, short: bool = True) -> str:
    """One table or CSV cell: blanks for None, compact JSON for maps and lists; ``short``
    (tables) rounds floats to 6 significant digits, shows times to the second and maps as
    ``k=v`` pairs (CSV keeps every digit)."""
    if value is None:
        return ""
    if isinstance(value, dict) and short:
        return compact(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, default=str, separators=(", ", ": "))
    if isinstance(value, float) and short:
        return f"{value:.6g}"
    if isinstance(value, str) and short and _ISO_TIME.match(value):
        return human_time(value)
    return str(value)


def csv_text(rows: Sequence[Dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([cell(r.get(c), short=False) for c in columns])
    return buf.getvalue()


#: Shorter headers for tables (CSV and JSON keep the field names).
LABELS = {
    "experiment_id": "exp", "trial_id": "trial", "total_batches": "batches",
    "best_validation": "best val", "latest_checkpoint": "checkpoint",
    "checkpoint_uuid": "checkpoint", "checkpoint_state": "ckpt state", "num_trials": "trials",
    "start_time": "started", "end_time": "ended", "used_slots": "used", "size_bytes": "bytes",
    "description": "description", "hparams": "hyperparameters", "searcher": "searcher",
}
ELLIPSIS = "\u2026"
#: Columns never shortened below this width (times to the second, states, UUIDs to copy).
_KEEP_WIDTH = {"start_time": 19, "end_time": 19, "state": 9, "uuid": 36, "kind": 11,
               "waiting": 34}  # why a task waits: cli/_waiting.py
#: Columns a narrow terminal leaves out first, in this order.
_DROP_FIRST = ["archived", "labels", "end_time", "restarts", "size_bytes", "address",
               "latest_checkpoint", "owner"]


def terminal_width() -> Optional[int]:
    """``$COLUMNS``, else the terminal's width; None (no limit) when stdout is no
    terminal, so scripts reading a pipe or file get every column in full."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((80, 24)).columns


def _shorten(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[:max(0, width - 1)] + ELLIPSIS


def table_text(rows: Sequence[Dict[str, Any]], columns: Sequence[str],
               width: Optional[int] = None, drop_first: Optional[Sequence[str]] = None) -> str:
    """A plain table (``a | b`` with a ``---+---`` rule) at most ``width`` columns wide
    (default: the terminal's; no limit when stdout is no terminal): long cells are
    shortened with an ellipsis, widest first; columns that still do not fit are left
    out (named in a last line; ``--csv`` and ``--json`` show every value):
    ``drop_first`` (default: the usual ones), then the rightmost."""
    width = width or terminal_width() or sys.maxsize
    drop_order = list(_DROP_FIRST if drop_first is None else drop_first)
    labels = [LABELS.get(c, c) for c in columns]
    cells = [[cell(r.get(c)).replace("\n", " ") for c in columns] for r in rows]
    widths = [max([len(label)] + [len(row[i]) for row in cells]) for i, label in enumerate(labels)]
    # A header longer than its values (a metric's name) may be shortened to them: a
    # checkpoint list at 80 columns then keeps its UUIDs. Without rows the headers are
    # all there is: they stay whole (columns are left out instead).
    floors = [min(w, max(8, _KEEP_WIDTH.get(c, 0),
                         min(len(label), max([len(row[i]) for row in cells], default=w))))
              for i, (w, label, c) in enumerate(zip(widths, labels, columns))]
    shown = list(range(len(columns)))

    def total(idx: List[int]) -> int:
        return sum(widths[i] for i in idx) + 3 * max(0, len(idx) - 1)

    while len(shown) > 1 and sum(floors[i] for i in shown) + 3 * (len(shown) - 1) > width:
        # Leave out what matters least: the listed columns first, then the rightmost.
        droppable = [i for i in shown if columns[i] in drop_order]
        shown.remove(min(droppable, key=lambda i: drop_order.index(columns[i]))
                     if droppable else shown[-1])
    while total(shown) > width:
        widest = max(shown, key=lambda i: (widths[i] - floors[i], i))
        if widths[widest] <= floors[widest]:
            break
        widths[widest] -= 1

    def line(values: Sequence[str]) -> str:
        return " | ".join(_shorten(values[i], widths[i]).ljust(widths[i]) for i in shown).rstrip()

    out = [line(labels), "-+-".join("-" * widths[i] for i in shown)]
    out += [line(row) for row in cells]
    hidden = [columns[i] for i in range(len(columns)) if i not in shown]
    if hidden:
        tail = "; --csv/--json show all)"
        names = _shorten(", ".join(hidden), max(10, width - len(tail) - 9))
        out.append(f"(hidden: {names}{tail}")
    return "\n".join(out) + "\n"


def print_rows(rows: List[Dict[str, Any]], columns: Sequence[str], args: argparse.Namespace,
               title: Optional[str] = None, out: Optional[TextIO] = None,
               drop_first: Optional[Sequence[str]] = None) -> None:
    """Rows as a table fitting the terminal, or JSON (--json) or CSV (--csv)."""
    out = out or sys.stdout
    if getattr(args, "json", False):
        out.write(json.dumps(rows, default=str) + "\n")
        return
    if getattr(args, "csv", False):
        out.write(csv_text(rows, columns))
        return
    if title:
        out.write(title + "\n")
    out.write(table_text(rows, columns, drop_first=drop_first))


def read_config_text(path: str) -> str:
    """The config file's text, checked to be YAML here (the master validates the rest)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InvalidConfigError([("", f"cannot read it: {e.strerror}")],
                                 source=f"config file {path}") from None
    except UnicodeDecodeError as e:
        raise MasterError(f"config file {path} is not UTF-8 text ({e.reason} at byte "
                          f"{e.start}); save it as UTF-8") from None
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as e:
        from determined.config import yaml_error_text  # pydantic: only on this path

        raise InvalidConfigError([("", f"not valid YAML: {yaml_error_text(e)}")],
                                 source=f"config file {path}") from None
    return text
