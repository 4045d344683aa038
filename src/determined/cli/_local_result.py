"""The end of a ``--local`` search in the CLI (``create --local``, ``resume``)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["finish_local_run"]


def finish_local_run(result: Any, as_json: bool) -> int:
    """The exit code of a finished ``--local`` search (0 when COMPLETED), after printing
    its result as JSON with ``--json`` (the live display printed it otherwise)."""
    if as_json:
        print(json.dumps(result.to_dict(), default=str))
    return 0 if result.state == "COMPLETED" else 1
