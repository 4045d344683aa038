"""minmax_buckets: at most max_points points that keep a series' extremes and ends."""

import math

import numpy as np
import pytest

from determined.master.api._downsample import minmax_buckets


def test_a_million_points_become_at_most_max_points_keeping_extremes_and_ends():
    n = 1_000_000
    x = np.arange(n)
    rng = np.random.default_rng(0)
    y = np.exp(-x / 2e5) + 0.01 * rng.standard_normal(n)
    y[123_457] = 5.0  # one spike
    y[654_321] = -3.0  # one dip
    xs, ys = minmax_buckets(x, y, 2000)
    assert 1000 <= len(xs) <= 2000
    assert xs[0] == 0 and xs[-1] == n - 1 and ys[-1] == y[-1]
    assert 123_457 in xs and 654_321 in xs
    assert np.all(np.diff(xs) > 0)
    # Every bucket's range survives: the curve's envelope is the original's.
    for lo in range(0, n, 100_000):
        kept = ys[(xs >= lo) & (xs < lo + 100_000)]
        assert kept.max() == y[lo:lo + 100_000].max() and kept.min() == y[lo:lo + 100_000].min()


def test_short_series_pass_through_and_nan_buckets_keep_their_ends():
    xs, ys = minmax_buckets([1, 2, 3], [3.0, 1.0, 2.0], 10)
    assert list(xs) == [1, 2, 3] and list(ys) == [3.0, 1.0, 2.0]
    y = [math.nan] * 50 + list(range(50))
    xs, ys = minmax_buckets(range(100), y, 8)
    assert len(xs) <= 8 and xs[0] == 0 and xs[-1] == 99 and 50 in xs


def test_bad_arguments_name_what_was_expected():
    with pytest.raises(ValueError, match="max_points"):
        minmax_buckets([1], [1], 3)
    with pytest.raises(ValueError, match="equal length"):
        minmax_buckets([1, 2], [1], 10)
