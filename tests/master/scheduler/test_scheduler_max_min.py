"""Weighted max-min shares: explicit values and properties against a bisection solver."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from determined.master.scheduler._max_min import integer_shares, water_fill


def bisect_shares(capacity, weights, floors, demands):
    """Independent solver: bisection on the fill level."""
    if sum(demands) <= capacity:
        return list(map(float, demands))
    if sum(floors) >= capacity:
        return list(map(float, floors))
    lo, hi = 0.0, max(d / w for d, w in zip(demands, weights)) + 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        total = sum(min(max(mid * w, f), d) for w, f, d in zip(weights, floors, demands))
        lo, hi = (mid, hi) if total < capacity else (lo, mid)
    return [min(max(hi * w, f), d) for w, f, d in zip(weights, floors, demands)]


@pytest.mark.parametrize(
    "capacity, weights, floors, demands, expected",
    [
        (8, [1, 1], [0, 0], [10, 10], [4, 4]),
        (8, [3, 1], [0, 0], [10, 10], [6, 2]),
        (8, [1, 1, 1], [0, 0, 0], [2, 10, 10], [2, 3, 3]),
        (8, [1, 1], [6, 0], [8, 4], [6, 2]),
        (8, [1, 1], [0, 0], [3, 2], [3, 2]),
        (3, [1, 1], [0, 0], [5, 5], [2, 1]),
        (5, [1, 3], [0, 0], [10, 10], [1, 4]),
        (0, [1], [0], [5], [0]),
    ],
)
def test_integer_shares_examples(capacity, weights, floors, demands, expected):
    assert integer_shares(capacity, weights, floors, demands) == expected


def test_rejects_mismatched_or_invalid_input():
    with pytest.raises(ValueError, match="equal length"):
        water_fill(4, [1], [0, 0], [1, 1])
    with pytest.raises(ValueError, match="weight > 0 and 0 <= floor <= demand. Received: group 0"):
        water_fill(4, [1], [2], [1])


@st.composite
def problems(draw):
    n = draw(st.integers(1, 6))
    weights = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 7.0]), min_size=n, max_size=n))
    demands = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    floors = [draw(st.integers(0, d)) if draw(st.booleans()) else 0 for d in demands]
    capacity = draw(st.integers(sum(floors), sum(floors) + 40))
    return capacity, weights, floors, demands


@settings(max_examples=300, deadline=None)
@given(problems())
def test_water_fill_matches_bisection(problem):
    capacity, weights, floors, demands = problem
    shares = water_fill(*problem)
    for got, want in zip(shares, bisect_shares(*problem)):
        assert math.isclose(got, want, abs_tol=1e-6)
    assert math.isclose(sum(shares), min(capacity, sum(demands)), abs_tol=1e-6)


@settings(max_examples=300, deadline=None)
@given(problems())
def test_integer_shares_are_within_one_slot(problem):
    capacity, weights, floors, demands = problem
    real = water_fill(*problem)
    shares = integer_shares(*problem)
    assert sum(shares) == min(capacity, sum(demands))
    for share, r, floor, demand in zip(shares, real, floors, demands):
        assert floor <= share <= demand
        assert abs(share - r) < 1
