"""Server-side downsampling of metric series for charts (pure numpy, no I/O).

A chart a few thousand pixels wide cannot show more points than that, but it must keep
the curve's shape: spikes, dips and the last value. :func:`minmax_buckets` splits the
series into equal index buckets and keeps, per bucket, the first, lowest, highest and
last point (the M4 method), so every extreme survives and a line drawn through the kept
points covers the same pixels as one through all of them.
"""

from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

__all__ = ["minmax_buckets"]


def minmax_buckets(xs: Sequence[float], ys: Sequence[float],
                   max_points: int) -> Tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points of the series ``(xs, ys)`` that keep its shape.

    Args:
        xs: ascending x values (e.g. batches).
        ys: the values; NaN marks a missing or non-finite value and is kept where it
            is a bucket's first or last point.
        max_points: the most points to return (at least 4).

    Returns:
        ``(xs, ys)`` as float arrays, in the original order.

    Example:
        >>> xs, ys = minmax_buckets(range(1_000_000), np.sin(np.arange(1_000_000) / 1e4), 2000)
        >>> len(xs) <= 2000, ys.max() > 0.99
        (True, True)
    """
    if max_points < 4:
        raise ValueError(f"Expected max_points to be at least 4. Received: max_points={max_points}")
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"Expected xs and ys of one equal length. Received: {x.shape}, {y.shape}")
    n = len(x)
    if n <= max_points:
        return x, y
    buckets = max_points // 4
    size = -(-n // buckets)  # ceil
    buckets = -(-n // size)
    padded = np.full(buckets * size, np.nan)
    padded[:n] = y
    grid = padded.reshape(buckets, size)
    finite = np.isfinite(grid)
    has_finite = finite.any(axis=1)
    lo = np.where(finite, grid, np.inf).argmin(axis=1)
    hi = np.where(finite, grid, -np.inf).argmax(axis=1)
    starts = np.arange(buckets) * size
    first = starts
    last = np.minimum(starts + size - 1, n - 1)
    picked = [first, last, (starts + lo)[has_finite], (starts + hi)[has_finite]]
    index = np.unique(np.concatenate(picked))
    return x[index], y[index]
