"""Plain-text tables of ``det`` that fit the terminal, and their cells.

A table is ``a | b`` with a ``---+---`` rule, at most the terminal's width (no limit
when stdout is no terminal: scripts get every value). To fit, long headers wrap at
``._- `` boundaries (``validation.`` / ``accuracy``), hyperparameters wrap at their
spaces onto following lines of the row, names (an owner, a user, a model or template)
wrap as headers do, never cut, other long cells are cut with an ellipsis,
and columns that still do not fit are left out (named in a last line, folded at the
width as other long lines). On a terminal, id columns with one value in every row (the
trial id of one trial's workloads) are left out too: the title or the table above says
it.
"""

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
import textwrap
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO

from determined.cli._errors import fold_error
from determined.util import format_value

__all__ = ["LABELS", "cell", "compact", "csv_text", "human_time", "label_lines", "print_rows",
           "NAMES", "table_text", "terminal_width", "varying_columns", "wrap_words"]

#: Shorter headers for tables (CSV and JSON keep the field names).
LABELS = {
    "experiment_id": "exp", "trial_id": "trial", "total_batches": "batches",
    "best_validation": "best val", "latest_checkpoint": "latest checkpoint",
    "checkpoint_uuid": "checkpoint", "checkpoint_state": "ckpt state", "num_trials": "trials",
    "start_time": "started", "end_time": "ended", "used_slots": "used", "size_bytes": "bytes",
    "description": "description", "hparams": "hyperparameters", "searcher": "searcher",
    "agent_id": "agent", "slot_id": "slot", "exit_code": "exit code",
    "end_reason": "end reason", "creation_time": "created", "last_updated_time": "updated",
}
ELLIPSIS = "\u2026"
#: Columns never shortened below this width (times to the second, states, UUIDs to copy).
_KEEP_WIDTH = {"start_time": 19, "end_time": 19, "state": 9, "uuid": 36, "kind": 11,
               "checkpoint_uuid": 36, "latest_checkpoint": 36, "creation_time": 19,
               "last_updated_time": 19,
               "waiting": 34}  # why a task waits: cli/_waiting.py
#: Columns a narrow terminal leaves out first, in this order.
_DROP_FIRST = ["archived", "labels", "end_time", "restarts", "size_bytes", "address",
               "latest_checkpoint", "owner"]
#: Columns whose long values go on over the following lines of their row (at spaces).
WRAPPED = ("hparams",)
#: Columns of names to read whole (and copy): long ones wrap at ``._- `` as headers do.
NAMES = ("owner", "username", "name")
#: A wrapped column keeps its longest word whole up to this width.
_LONGEST_WORD = 30
#: Columns left out on a terminal where every row (two or more) has the same value.
ID_COLUMNS = ("experiment_id", "trial_id")

_ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?$")
#: A header's pieces: each ends after one of ``. _ -`` (or at the end); a long word
#: of a wrapped cell (a hyperparameter's ``name=value``) breaks after ``=`` too.
_LABEL_PIECE = re.compile(r"[^._\- ]*(?:[._\-]| +|$)")
_WORD_PIECE = re.compile(r"[^._\-= ]*(?:[._\-=]| +|$)")


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
    """Rows as CSV with a header of the field names, every digit kept."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([cell(r.get(c), short=False) for c in columns])
    return buf.getvalue()


def terminal_width() -> Optional[int]:
    """``$COLUMNS``, else the terminal's width; None (no limit) when stdout is no
    terminal, so scripts reading a pipe or file get every column in full."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((80, 24)).columns


def _pieces(label: str, pattern: "re.Pattern[str]" = _LABEL_PIECE) -> List[str]:
    return [p for p in pattern.findall(label) if p]


def label_lines(label: str, width: int, pattern: "re.Pattern[str]" = _LABEL_PIECE) -> List[str]:
    """A header over lines of at most ``width``, broken after ``.``, ``_``, ``-`` or a
    space (``validation.`` / ``accuracy``); only a piece longer than the width is cut.

    Example:
        >>> label_lines("validation.val_loss", 12)
        ['validation.', 'val_loss']
    """
    width = max(1, width)
    lines: List[str] = []
    current = ""
    for piece in _pieces(label, pattern):
        if current and len((current + piece).rstrip()) > width:
            lines.append(current.rstrip())
            current = ""
        current += piece
        while len(current.rstrip()) > width:  # one piece longer than the column
            lines.append(current[:width])
            current = current[width:]
    if current.rstrip() or not lines:
        lines.append(current.rstrip())
    return lines


def wrap_words(text: str, width: int) -> List[str]:
    """``text`` over lines of at most ``width``, broken at spaces; a word longer than
    the width has lines of its own, broken after ``. _ - =`` (``learning_`` /
    ``rate=0.1``).

    Example:
        >>> wrap_words("lr=0.1 a_long_name=3", 12)
        ['lr=0.1', 'a_long_name=', '3']
    """
    width = max(1, width)
    lines: List[str] = []
    current = ""
    for word in text.split():
        if len(word) > width:
            if current:
                lines.append(current)
            lines += label_lines(word, width, _WORD_PIECE)  # and the next word below it
            current = ""
        elif current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return lines + [current] if current or not lines else lines


def _longest_piece(label: str) -> int:
    return max([len(p.rstrip()) for p in _pieces(label)], default=0)


def _total(idx: Sequence[int], sizes: Sequence[int]) -> int:
    """The width of the columns ``idx`` with the `` | `` between them."""
    return sum(sizes[i] for i in idx) + 3 * max(0, len(idx) - 1)


def _shorten(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[:max(0, width - 1)] + ELLIPSIS


def _cell_lines(text: str, width: int, column: str) -> List[str]:
    if len(text) <= width or column not in WRAPPED + NAMES:
        return [_shorten(text, width)]
    return wrap_words(text, width) if column in WRAPPED else label_lines(text, width)


def varying_columns(rows: Sequence[Dict[str, Any]], columns: Sequence[str],
                    candidates: Sequence[str] = ID_COLUMNS) -> List[str]:
    """``columns`` less each of ``candidates`` that has one value in every row, where
    there are two rows or more (one row keeps them all)."""
    if len(rows) < 2:
        return list(columns)
    return [c for c in columns
            if c not in candidates or len({cell(r.get(c)) for r in rows}) > 1]


def table_text(rows: Sequence[Dict[str, Any]], columns: Sequence[str],
               width: Optional[int] = None, drop_first: Optional[Sequence[str]] = None,
               labels: Optional[Mapping[str, str]] = None) -> str:
    """A plain table (``a | b`` with a ``---+---`` rule) at most ``width`` columns wide
    (default: the terminal's; no limit when stdout is no terminal). To fit: headers
    wrap at ``._- ``, hyperparameters wrap at spaces, other long cells are cut with an
    ellipsis, widest first; columns that still do not fit are left out (named, whole, in
    a last line folded at ``width``; ``--csv`` and ``--json`` show every value): columns
    empty in every row (not named), ``drop_first`` (default: the usual ones), then the
    rightmost. ``labels``: headers for some columns (else :data:`LABELS`, else the
    column's name).

    Example:
        >>> print(table_text([{"trial_id": 1, "validation": 0.25}], ["trial_id", "validation"],
        ...                  width=20, labels={"validation": "validation_loss"}), end="")
        trial | validation_
              | loss
        ------+------------
        1     | 0.25
    """
    width = width or terminal_width() or sys.maxsize
    drop_order = list(_DROP_FIRST if drop_first is None else drop_first)
    names = {**LABELS, **(labels or {})}
    heads = [names.get(c, c) for c in columns]
    cells = [[cell(r.get(c)).replace("\n", " ") for c in columns] for r in rows]
    values = [max([len(row[i]) for row in cells], default=0) for i in range(len(columns))]
    widths = [max(len(head), v) for head, v in zip(heads, values)]
    # A column may narrow to its longest header piece, or to its
    # values where the header is longer (a metric's name over numbers), or to its header
    # where the values are longer (cut or wrapped; wrapped ones keep their longest word,
    # a hyperparameter's name=value, up to _LONGEST_WORD; names their longest piece):
    # never below 8 or _KEEP_WIDTH.
    words = [max([len(word) for row in cells for word in row[i].split()], default=0)
             if c in WRAPPED else
             max([_longest_piece(row[i]) for row in cells], default=0) if c in NAMES else 0
             for i, c in enumerate(columns)]
    floors = [min(w, max(8, _KEEP_WIDTH.get(c, 0), _longest_piece(head),
                         min(word, _LONGEST_WORD),
                         min(len(head), v) if rows else len(head)))
              for w, head, v, c, word in zip(widths, heads, values, columns, words)]
    shown = list(range(len(columns)))
    dropped: List[int] = []

    if rows and _total(shown, widths) > width:  # columns empty in every row: nothing to miss
        shown = [i for i in shown if values[i]] or shown[:1]
    while len(shown) > 1 and _total(shown, floors) > width:
        # Leave out what matters least: the listed columns first, then the rightmost.
        droppable = [i for i in shown if columns[i] in drop_order]
        gone = (min(droppable, key=lambda i: drop_order.index(columns[i]))
                if droppable else shown[-1])
        shown.remove(gone)
        dropped.append(gone)
    if len(shown) == 1:  # one column wider than the terminal: it is cut
        floors[shown[0]] = min(floors[shown[0]], width)

    def fitted(idx: List[int]) -> List[int]:
        """Widths of the columns ``idx`` that fit: the widest narrowed first, then each
        as narrow as its wrapped header and cells let it be."""
        sizes = list(widths)
        while _total(idx, sizes) > width:
            widest = max(idx, key=lambda i: (sizes[i] - floors[i], i))
            if sizes[widest] <= floors[widest]:
                break
            sizes[widest] -= 1
        for i in idx:
            if sizes[i] < widths[i]:
                sizes[i] = max([len(line) for line in label_lines(heads[i], sizes[i])]
                               + [len(line) for row in cells for line in
                                  _cell_lines(row[i], sizes[i], columns[i])])
        return sizes

    sizes = fitted(shown)
    # Wrapping may have left room for a column left out: the last left out first.
    for i in reversed(dropped):
        if _total(shown, sizes) + 3 + floors[i] <= width:
            candidate = sorted(shown + [i])
            candidate_sizes = fitted(candidate)
            if _total(candidate, candidate_sizes) <= width:
                shown, sizes = candidate, candidate_sizes
    widths = sizes

    def lines(row: Sequence[List[str]]) -> List[str]:
        height = max(len(row[i]) for i in shown)
        return [" | ".join((row[i][k] if k < len(row[i]) else "").ljust(widths[i])
                           for i in shown).rstrip() for k in range(height)]

    out = lines([label_lines(heads[i], widths[i]) for i in range(len(columns))])
    out.append("-+-".join("-" * widths[i] for i in shown))
    for row in cells:
        out += lines([_cell_lines(row[i], widths[i], columns[i])
                      for i in range(len(columns))])
    # Named as their headers read (``ended``, not ``end_time``); empty ones not at all.
    hidden = [heads[i] for i in range(len(columns)) if i not in shown and (values[i] or not rows)]
    if hidden:  # every name whole, folded as det's other long lines
        out.append(fold_error(f"(hidden: {', '.join(hidden)}; --csv/--json show all)", width))
    return "\n".join(out) + "\n"


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def print_rows(rows: List[Dict[str, Any]], columns: Sequence[str], args: argparse.Namespace,
               title: Optional[str] = None, out: Optional[TextIO] = None,
               drop_first: Optional[Sequence[str]] = None,
               labels: Optional[Mapping[str, str]] = None) -> None:
    """Rows as a table fitting the terminal, or JSON (--json) or CSV (--csv). On a
    terminal, id columns with one value in every row are left out (the title, if any,
    names the value)."""
    out = out or sys.stdout
    if getattr(args, "json", False):
        out.write(json.dumps(rows, default=str) + "\n")
        return
    if getattr(args, "csv", False):
        out.write(csv_text(rows, columns))
        return
    width = terminal_width()
    if _is_terminal(out):
        kept = varying_columns(rows, columns)
        same = [f"{LABELS.get(c, c)} {cell(rows[0].get(c))}" for c in columns if c not in kept]
        if title and same:  # the title says it: "Workloads (trial 9)"
            title = f"{title} ({', '.join(same)})"
        columns = kept
    if title:
        out.write((textwrap.fill(title, width, subsequent_indent="  ", break_long_words=False,
                                 break_on_hyphens=False) if width else title) + "\n")
    out.write(table_text(rows, columns, width=width, drop_first=drop_first, labels=labels))
