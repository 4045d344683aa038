"""Why listed things wait: the master's ``waiting`` field in tables and describe views.

Rows of tasks, trials and experiments carry ``waiting`` (``{reason, detail,
impossible}`` or null). A table shows the short reason in a ``waiting`` column after
``state`` -- only when some row waits, so other lists keep their width -- and describe
views add the detail below their tables.
"""

from __future__ import annotations

import textwrap
from typing import Any, Dict, List, Sequence, Tuple

__all__ = ["wait_details", "with_waiting"]


def with_waiting(rows: Sequence[Dict[str, Any]], columns: Sequence[str]
                 ) -> Tuple[List[Dict[str, Any]], List[str]]:
    """``(rows, columns)`` for a table: ``waiting`` as its reason, in a column after
    ``state``, where any row waits; else both unchanged."""
    if not any(r.get("waiting") for r in rows):
        return list(rows), list(columns)
    out = [{**r, "waiting": (r.get("waiting") or {}).get("reason") or ""} for r in rows]
    cols = list(columns)
    cols.insert(cols.index("state") + 1 if "state" in cols else len(cols), "waiting")
    return out, cols


def wait_details(noun: str, rows: Sequence[Dict[str, Any]], key: str = "id") -> List[str]:
    """One paragraph per waiting row: ``<Noun> <id> waits: <detail>``, wrapped to the
    terminal's width (``$COLUMNS``) when there is one."""
    from determined.cli._remote import terminal_width

    width = terminal_width()
    lines = [f"{noun} {r[key]} waits: {r['waiting']['detail']}" for r in rows
             if isinstance(r.get("waiting"), dict)]
    if not width:
        return lines
    return [textwrap.fill(line, width=width, subsequent_indent="  ") for line in lines]
