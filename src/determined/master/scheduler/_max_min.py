"""Weighted max-min fair shares (progressive filling), in real numbers and in whole slots.

Every group's share grows in proportion to its weight until it reaches its demand;
the slots it does not need go on growing the others. A floor (slots a group holds
and cannot give back) is granted first:

    >>> water_fill(8, weights=[1, 1], floors=[0, 0], demands=[10, 10])
    [4.0, 4.0]
    >>> water_fill(8, weights=[3, 1], floors=[0, 0], demands=[10, 10])
    [6.0, 2.0]
    >>> water_fill(8, weights=[1, 1], floors=[0, 0], demands=[1, 10])
    [1.0, 7.0]
    >>> integer_shares(3, weights=[1, 1], floors=[0, 0], demands=[5, 5])
    [2, 1]
"""

from __future__ import annotations

import math
from typing import List, Sequence, Tuple

__all__ = ["integer_shares", "water_fill"]


def _check(capacity: int, weights: Sequence[float], floors: Sequence[int], demands: Sequence[int]) -> None:
    if not len(weights) == len(floors) == len(demands):
        raise ValueError(
            "Expected weights, floors and demands of equal length. "
            f"Received: {len(weights)}, {len(floors)}, {len(demands)}"
        )
    if capacity < 0:
        raise ValueError(f"Expected capacity >= 0. Received: capacity={capacity}")
    for i, (w, lo, hi) in enumerate(zip(weights, floors, demands)):
        if not (w > 0 and 0 <= lo <= hi):
            raise ValueError(
                "Expected weight > 0 and 0 <= floor <= demand. "
                f"Received: group {i}: weight={w}, floor={lo}, demand={hi}"
            )


def water_fill(
    capacity: int, weights: Sequence[float], floors: Sequence[int], demands: Sequence[int]
) -> List[float]:
    """Weighted max-min shares of ``capacity``, each within ``[floor, demand]``.

    Finds the level ``x`` at which ``sum(clamp(x * weight, floor, demand)) == capacity``
    by walking the sorted breakpoints of that piecewise linear sum (O(n log n)).
    If demands fit, everyone gets its demand; if floors alone exceed capacity,
    everyone gets its floor.
    """
    _check(capacity, weights, floors, demands)
    if sum(demands) <= capacity:
        return [float(d) for d in demands]
    if sum(floors) >= capacity:
        return [float(lo) for lo in floors]
    # Below floor/weight a group contributes its floor; between the breakpoints it
    # contributes x * weight; above demand/weight its demand.
    events: List[Tuple[float, int, int]] = []
    for i, (w, lo, hi) in enumerate(zip(weights, floors, demands)):
        events.append((lo / w, 0, i))
        events.append((hi / w, 1, i))
    events.sort()
    constant = float(sum(floors))
    slope = 0.0
    level = events[-1][0]
    for x, kind, i in events:
        if slope > 0 and constant + slope * x >= capacity:
            level = (capacity - constant) / slope
            break
        if kind == 0:
            constant -= floors[i]
            slope += weights[i]
        else:
            constant += demands[i]
            slope -= weights[i]
    return [float(min(max(level * w, lo), hi)) for w, lo, hi in zip(weights, floors, demands)]


def integer_shares(
    capacity: int, weights: Sequence[float], floors: Sequence[int], demands: Sequence[int]
) -> List[int]:
    """:func:`water_fill` rounded to whole slots, each within 1 of the real share.

    Shares are rounded down, then the slots left over go one each to the groups with
    the largest fractional parts; equal parts favour the earlier group in the input.
    The result stays within ``[floor, demand]`` and sums to at most ``capacity``.
    """
    real = water_fill(capacity, weights, floors, demands)
    shares = [max(lo, math.floor(s + 1e-9)) for s, lo in zip(real, floors)]
    left = capacity - sum(shares)
    if left > 0:
        order = sorted(range(len(real)), key=lambda i: (-(real[i] - shares[i]), i))
        for i in order:
            if left == 0:
                break
            if shares[i] < demands[i] and real[i] - shares[i] > 1e-9:
                shares[i] += 1
                left -= 1
    return shares
