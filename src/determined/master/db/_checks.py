"""Argument checks shared by the store's methods: fail before touching the database."""

import datetime
import math
from collections.abc import Mapping  # not typing's: a faster isinstance
from typing import Any, Dict, List, Optional

__all__ = [
    "UNSET",
    "check_bool",
    "check_dict",
    "check_int",
    "check_number",
    "check_str",
    "check_str_list",
    "check_time",
]


class _Unset:
    """Marks a keyword argument that was not given (None may be a real value)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def _fail(name: str, expected: str, value: Any) -> None:
    raise ValueError(f"Expected {name} to be {expected}. Received: {name}={value!r}")


def check_int(name: str, value: Any, minimum: Optional[int] = None, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or (
        minimum is not None and value < minimum
    ):
        _fail(name, "an int" + (f" >= {minimum}" if minimum is not None else ""), value)
    return int(value)


def check_number(
    name: str,
    value: Any,
    minimum: Optional[float] = None,
    maximum: Optional[float] = None,
    optional: bool = False,
    finite: bool = True,
) -> Any:
    if value is None and optional:
        return None
    bounds = ""
    if minimum is not None:
        bounds += f" >= {minimum}"
    if maximum is not None:
        bounds += f" <= {maximum}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(name, "a number" + bounds, value)
    value = float(value)
    if (finite and not math.isfinite(value)) or (minimum is not None and value < minimum) or (
        maximum is not None and value > maximum
    ):
        _fail(name, ("a finite number" if finite else "a number") + bounds, value)
    return value


def check_str(name: str, value: Any, nonempty: bool = False, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str) or (nonempty and not value):
        _fail(name, "a non-empty str" if nonempty else "a str", value)
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        _fail(name, "a bool", value)
    return value


def check_dict(name: str, value: Any) -> Dict[str, Any]:
    if not isinstance(value, Mapping):
        _fail(name, "a dict", value)
    return dict(value)


def check_str_list(name: str, value: Any) -> List[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(
        isinstance(v, str) for v in value
    ):
        _fail(name, "a list of str", value)
    return list(value)


def check_time(name: str, value: Any, optional: bool = True) -> Optional[datetime.datetime]:
    if value is None and optional:
        return None
    if not isinstance(value, datetime.datetime):
        _fail(name, "a datetime", value)
    if value.tzinfo is None:  # naive times are taken as UTC
        return value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc)
