"""Argument checks that raise :class:`CheckFailedError` with a message naming the values.

Each check exists under two names, as in upstream 0.13 (``check.eq`` and
``check.check_eq``). ``reason`` is prepended to the message when given.

Example:
    >>> from determined_common import check
    >>> check.gt(3, 1, "workers")
    >>> check.eq(1, 2, "batch size")
    Traceback (most recent call last):
    ...
    determined_common.check.CheckFailedError: batch size: expected 2, got 1
"""

from typing import Any, Optional, Sized, Tuple, Type, Union

_Types = Union[Type[Any], Tuple[Type[Any], ...]]


class CheckFailedError(Exception):
    """A check failed; the message says which values and what was expected."""


def _fail(message: str, reason: Optional[str]) -> None:
    raise CheckFailedError(f"{reason}: {message}" if reason else message)


def true(val: Any, reason: Optional[str] = None) -> None:
    if not val:
        _fail(f"expected a true value, got {val!r}", reason)


def false(val: Any, reason: Optional[str] = None) -> None:
    if val:
        _fail(f"expected a false value, got {val!r}", reason)


def is_none(val: Any, reason: Optional[str] = None) -> None:
    if val is not None:
        _fail(f"expected None, got {val!r}", reason)


def is_not_none(val: Any, reason: Optional[str] = None) -> None:
    if val is None:
        _fail("expected a value, got None", reason)


def eq(val: Any, expected: Any, reason: Optional[str] = None) -> None:
    if val != expected:
        _fail(f"expected {expected!r}, got {val!r}", reason)


def not_eq(x: Any, y: Any, reason: Optional[str] = None) -> None:
    if x == y:
        _fail(f"expected a value other than {y!r}, got {x!r}", reason)


def gt(x: Any, y: Any, reason: Optional[str] = None) -> None:
    if not x > y:
        _fail(f"expected a value > {y!r}, got {x!r}", reason)


def gt_eq(x: Any, y: Any, reason: Optional[str] = None) -> None:
    if not x >= y:
        _fail(f"expected a value >= {y!r}, got {x!r}", reason)


def lt(x: Any, y: Any, reason: Optional[str] = None) -> None:
    if not x < y:
        _fail(f"expected a value < {y!r}, got {x!r}", reason)


def lt_eq(x: Any, y: Any, reason: Optional[str] = None) -> None:
    if not x <= y:
        _fail(f"expected a value <= {y!r}, got {x!r}", reason)


def equal_lengths(x: Sized, y: Sized, reason: Optional[str] = None) -> None:
    if len(x) != len(y):
        _fail(f"expected equal lengths, got {len(x)} and {len(y)}", reason)


def len_eq(val: Sized, expected_len: int, reason: Optional[str] = None) -> None:
    if len(val) != expected_len:
        _fail(f"expected length {expected_len}, got {len(val)}", reason)


def is_in(val: Any, expected: Any, reason: Optional[str] = None) -> None:
    if val not in expected:
        _fail(f"expected one of {expected!r}, got {val!r}", reason)


def not_in(val: Any, expected: Any, reason: Optional[str] = None) -> None:
    if val in expected:
        _fail(f"expected none of {expected!r}, got {val!r}", reason)


def is_type(val: Any, expected: Type[Any], reason: Optional[str] = None) -> None:
    if type(val) is not expected:
        _fail(f"expected type {expected.__name__}, got {type(val).__name__}", reason)


def _names(expected: _Types) -> str:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(k.__name__ for k in kinds)


def is_instance(val: Any, expected: _Types, reason: Optional[str] = None) -> None:
    if not isinstance(val, expected):
        _fail(f"expected an instance of {_names(expected)}, got {type(val).__name__}", reason)


def is_not_instance(val: Any, expected: _Types, reason: Optional[str] = None) -> None:
    if isinstance(val, expected):
        _fail(f"expected no instance of {_names(expected)}, got {type(val).__name__}", reason)


def is_subclass(val: Any, expected: _Types, reason: Optional[str] = None) -> None:
    if not (isinstance(val, type) and issubclass(val, expected)):
        _fail(f"expected a subclass of {_names(expected)}, got {val!r}", reason)


check_true = true
check_false = false
check_none = is_none
check_not_none = is_not_none
check_eq = eq
check_not_eq = not_eq
check_gt = gt
check_gt_eq = gt_eq
check_lt = lt
check_lt_eq = lt_eq
check_eq_len = equal_lengths
check_len = len_eq
check_in = is_in
check_not_in = not_in
check_type = is_type
check_isinstance = is_instance
check_not_isinstance = is_not_instance
check_issubclass = is_subclass
