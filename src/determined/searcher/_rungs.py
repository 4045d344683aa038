"""Rung lengths and bracket layouts shared by the adaptive family (SPEC section 3)."""

from __future__ import annotations

from typing import List

__all__ = ["MODES", "bracket_rungs", "floor_log", "rung_lengths"]

MODES = ("aggressive", "standard", "conservative")


def rung_lengths(max_length: int, divisor: float, num_rungs: int) -> List[int]:
    """``L_i = max(floor(max_length / divisor**(R-1-i)), 1)`` for i in 0..R-1.

    >>> rung_lengths(16, 4.0, 3)
    [1, 4, 16]
    """
    return [
        max(int(max_length / divisor ** (num_rungs - 1 - i)), 1) for i in range(num_rungs)
    ]


def bracket_rungs(mode: str, max_rungs: int) -> List[int]:
    """Rung counts of the brackets for ``mode``, most rungs first.

    >>> bracket_rungs("standard", 5), bracket_rungs("conservative", 3)
    ([5, 4, 3], [3, 2, 1])
    """
    if mode == "aggressive":
        return [max_rungs]
    if mode == "standard":
        return list(range(max_rungs, (max_rungs - 1) // 2, -1))
    if mode == "conservative":
        return list(range(max_rungs, 0, -1))
    raise ValueError(f"Expected mode to be one of {list(MODES)}. Received: mode={mode!r}")


def floor_log(n: int, base: float) -> int:
    """The largest k >= 0 with ``base**k <= n`` (exact for integer powers).

    >>> floor_log(64, 4.0), floor_log(63, 4.0), floor_log(1, 4.0)
    (3, 2, 0)
    """
    k = 0
    while base ** (k + 1) <= n * (1 + 1e-12):
        k += 1
    return k
