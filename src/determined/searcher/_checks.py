"""Argument checks shared by the search methods; errors read "Expected ... Received: ..."."""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

from determined.config import Length, Unit

__all__ = [
    "check_bool",
    "check_choice",
    "check_float",
    "check_int",
    "check_length",
    "read_length",
    "read_optional_length",
    "require",
]


def check_int(
    name: str, value: Any, min_value: Optional[int] = None, max_value: Optional[int] = None
) -> int:
    """Return ``value`` if it is an int (not a bool) within the bounds, else raise ValueError."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    ok = ok and (min_value is None or value >= min_value)
    ok = ok and (max_value is None or value <= max_value)
    if not ok:
        bounds = []
        if min_value is not None:
            bounds.append(f">= {min_value}")
        if max_value is not None:
            bounds.append(f"<= {max_value}")
        where = f" {' and '.join(bounds)}" if bounds else ""
        raise ValueError(f"Expected {name} to be an integer{where}. Received: {name}={value!r}")
    return int(value)


def check_float(
    name: str,
    value: Any,
    min_value: Optional[float] = None,
    max_value: Optional[float] = None,
    min_exclusive: bool = False,
) -> float:
    """Return ``value`` as a float if it is a finite number within the bounds."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and math.isfinite(value)
    if ok and min_value is not None:
        ok = value > min_value if min_exclusive else value >= min_value
    ok = ok and (max_value is None or value <= max_value)
    if not ok:
        bounds = []
        if min_value is not None:
            bounds.append(f"{'>' if min_exclusive else '>='} {min_value}")
        if max_value is not None:
            bounds.append(f"<= {max_value}")
        where = f" {' and '.join(bounds)}" if bounds else ""
        raise ValueError(f"Expected {name} to be a number{where}. Received: {name}={value!r}")
    return float(value)


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    if value not in choices:
        raise ValueError(
            f"Expected {name} to be one of {list(choices)}. Received: {name}={value!r}"
        )
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"Expected {name} to be a bool. Received: {name}={value!r}")
    return value


def check_length(name: str, value: Any, min_units: int = 1) -> Length:
    """Return ``value`` if it is a ``Length`` of at least ``min_units`` units."""
    if not isinstance(value, Length) or not isinstance(value.unit, Unit):
        raise ValueError(f"Expected {name} to be a Length. Received: {name}={value!r}")
    check_int(f"{name} units", value.units, min_value=min_units)
    return value


def require(cfg: Mapping[str, Any], key: str, prefix: str = "searcher") -> Any:
    """``cfg[key]``, or a ValueError naming ``prefix.key`` when it is missing or null."""
    value = cfg.get(key) if isinstance(cfg, Mapping) else None
    if value is None:
        raise ValueError(f"Expected {prefix}.{key} to be set. Received: {prefix}.{key}=None")
    return value


def read_length(cfg: Mapping[str, Any], key: str, prefix: str = "searcher") -> Length:
    """Parse ``cfg[key]`` as a length, naming the field in any error."""
    raw = require(cfg, key, prefix)
    try:
        return Length.from_dict(raw)
    except ValueError as e:
        raise ValueError(f"Invalid {prefix}.{key}: {e}") from None


def read_optional_length(cfg: Mapping[str, Any], key: str, prefix: str = "searcher") -> Optional[Length]:
    """``read_length`` for a field that may be missing or null (then None)."""
    if not isinstance(cfg, Mapping) or cfg.get(key) is None:
        return None
    return read_length(cfg, key, prefix)
