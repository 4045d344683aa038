"""Integers a request may carry: every id, count and length fits a signed 64-bit column.

:func:`int64_params` runs before every route (an application dependency) and turns
a path or query parameter such as ``/experiments/1180591620717411303424`` into a
400 naming the parameter, where the database would otherwise fail with a 500.
Request bodies bound their integer fields in their models.
"""

from __future__ import annotations

from typing import Iterable, Tuple

import fastapi
from fastapi import Request

from determined.common.int64 import INT64_MAX, INT64_MIN

__all__ = ["int64_params"]

_MAX_DIGITS = len(str(INT64_MAX))


def _too_big(items: Iterable[Tuple[str, str]]) -> Tuple[str, str]:
    for name, value in items:
        digits = value[1:] if value[:1] in ("-", "+") else value
        if len(digits) >= _MAX_DIGITS and digits.isdigit() \
                and not INT64_MIN <= int(value) <= INT64_MAX:
            return name, value
    return "", ""


async def int64_params(request: Request) -> None:
    """400 for a path or query parameter that is an integer outside int64."""
    name, value = _too_big(request.path_params.items())
    if not name:
        name, value = _too_big(request.query_params.multi_items())
    if name:
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise fastapi.HTTPException(
            status_code=400,
            detail=f"Expected {name} to be an integer between {INT64_MIN} and {INT64_MAX}. "
                   f"Received: {name}={shown}")
