"""argparse types for whole-number arguments, so that ``-1`` as an id or a count is a
usage error naming the argument instead of a request the master answers with "not found".

    >>> positive_int("3"), count("0"), port_number("8080"), priority("99")
    (3, 0, 8080, 99)
    >>> positive_float("0.5")
    0.5
    >>> checkpoint_uuid("4F9A1C2E-1111-2222-3333-444455556666")
    '4f9a1c2e-1111-2222-3333-444455556666'
"""

from __future__ import annotations

import argparse
import re

__all__ = ["checkpoint_uuid", "count", "existing_file", "port_number", "positive_float",
           "positive_int", "priority"]


def _whole(text: str, low: int, high: int, expected: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise argparse.ArgumentTypeError(f"Expected {expected}. Received: {text!r}")
    return value


def positive_int(text: str) -> int:
    """An id or a number of things that must be at least 1."""
    return _whole(text, 1, 2**63 - 1, "a whole number of at least 1")


def count(text: str) -> int:
    """A number of lines or items; 0 allowed."""
    return _whole(text, 0, 2**63 - 1, "a whole number of at least 0")


def port_number(text: str) -> int:
    """A TCP port."""
    return _whole(text, 1, 65535, "a port number from 1 to 65535")


def priority(text: str) -> int:
    """A priority for the priority scheduler (lower runs first)."""
    return _whole(text, 1, 99, "a priority from 1 to 99")


def positive_float(text: str) -> float:
    """A number greater than 0 (a fair-share weight, a timeout in seconds)."""
    import math

    try:
        value = float(text.strip())
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(
            f"Expected a number greater than 0. Received: {text!r}")
    return value


def existing_file(text: str) -> str:
    """A file to read (a config): one that is there, checked before anything starts."""
    import os

    if not os.path.isfile(text):
        why = "a directory" if os.path.isdir(text) else "no such file"
        raise argparse.ArgumentTypeError(f"Expected a file to read. Received: {text!r} ({why})")
    return text


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def checkpoint_uuid(text: str) -> str:
    """A checkpoint's id as ``det e lc`` lists it (a UUID, upper case read as lower),
    checked before any master is asked; worded as the master words its own check."""
    value = text.strip().lower()
    if not _UUID.fullmatch(value):
        raise argparse.ArgumentTypeError(
            "Expected a checkpoint id in UUID form (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx). "
            f"Received: {text!r}")
    return value
