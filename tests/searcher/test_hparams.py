"""Sampling and grid rules (SPEC section 3), tested on the helpers alone."""

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from determined.searcher import grid_points, sample_hparams
from determined.searcher._hparams import grid_values, validate_space


@settings(max_examples=60, deadline=None, database=None)
@given(
    lo=st.integers(-50, 50),
    width=st.integers(0, 6),
    seed=st.integers(0, 2**31 - 1),
)
def test_int_samples_are_in_range_and_reach_maxval(lo, width, seed) -> None:
    space = {"n": {"type": "int", "minval": lo, "maxval": lo + width, "count": None}}
    rng = random.Random(seed)
    values = [sample_hparams(space, rng)["n"] for _ in range(400)]
    assert all(isinstance(v, int) and lo <= v <= lo + width for v in values)
    assert max(values) == lo + width  # inclusive of maxval
    assert min(values) == lo


@settings(max_examples=60, deadline=None, database=None)
@given(
    lo=st.floats(-10, 10),
    width=st.floats(0.01, 5),
    base=st.sampled_from([2.0, 10.0, math.e]),
    seed=st.integers(0, 2**31 - 1),
)
def test_double_and_log_samples_are_in_range(lo, width, base, seed) -> None:
    space = {
        "d": {"type": "double", "minval": lo, "maxval": lo + width, "count": None},
        "l": {"type": "log", "base": base, "minval": lo, "maxval": lo + width, "count": None},
        "c": {"type": "categorical", "vals": ["a", 2, None]},
        "k": {"type": "const", "val": [1, 2]},
    }
    hp = sample_hparams(space, random.Random(seed))
    assert lo <= hp["d"] <= lo + width
    assert base**lo * (1 - 1e-12) <= hp["l"] <= base ** (lo + width) * (1 + 1e-12)
    assert hp["c"] in ["a", 2, None]
    assert hp["k"] == [1, 2]


def test_sampling_is_in_sorted_name_order_and_nested() -> None:
    space = {
        "b": {"type": "double", "minval": 0.0, "maxval": 1.0},
        "a": {"type": "double", "minval": 0.0, "maxval": 1.0},
        "z": {"y": {"type": "int", "minval": 0, "maxval": 1000}, "x": {"type": "const", "val": 1}},
    }
    rng = random.Random(3)
    a, b = rng.random(), rng.random()
    y = rng.randint(0, 1000)
    assert sample_hparams(space, random.Random(3)) == {"a": a, "b": b, "z": {"x": 1, "y": y}}


@pytest.mark.parametrize(
    "spec, expected",
    [
        ({"type": "int", "minval": 1, "maxval": 10, "count": 4}, [1, 4, 7, 10]),
        ({"type": "int", "minval": 1, "maxval": 10, "count": 1}, [6]),  # round(5.5) half away
        ({"type": "int", "minval": 1, "maxval": 4, "count": 20}, [1, 2, 3, 4]),
        ({"type": "int", "minval": 0, "maxval": 10, "count": 3}, [0, 5, 10]),
        ({"type": "int", "minval": 0, "maxval": 3, "count": 3}, [0, 2, 3]),  # 1.5 -> 2
        ({"type": "double", "minval": 0.0, "maxval": 1.0, "count": 3}, [0.0, 0.5, 1.0]),
        ({"type": "double", "minval": 0.0, "maxval": 1.0, "count": 1}, [0.5]),
        ({"type": "log", "base": 10.0, "minval": -3.0, "maxval": -1.0, "count": 3},
         [1e-3, 1e-2, 1e-1]),
        ({"type": "log", "base": 2.0, "minval": 0.0, "maxval": 4.0, "count": 1}, [4.0]),
        ({"type": "categorical", "vals": ["x", "y", "z"]}, ["x", "y", "z"]),
        ({"type": "const", "val": 7}, [7]),
    ],
)
def test_grid_values_follow_the_spec(spec, expected) -> None:
    assert grid_values(spec) == pytest.approx(expected)


def test_grid_is_the_cartesian_product_in_sorted_order() -> None:
    space = {
        "b": {"type": "categorical", "vals": [1, 2]},
        "a": {"type": "int", "minval": 0, "maxval": 2, "count": 3},
        "n": {"m": {"type": "categorical", "vals": ["u", "v"]}},
    }
    expected = [
        {"a": a, "b": b, "n": {"m": m}}
        for a, b, m in itertools.product([0, 1, 2], [1, 2], ["u", "v"])
    ]
    assert grid_points(space) == expected


def test_grid_needs_count_for_numeric_leaves() -> None:
    space = {"opt": {"lr": {"type": "double", "minval": 0.0, "maxval": 1.0, "count": None}}}
    with pytest.raises(ValueError, match=r"hyperparameters\.opt\.lr\.count"):
        grid_points(space)


def test_grid_of_more_than_2000_points_is_rejected() -> None:
    space = {
        "a": {"type": "int", "minval": 0, "maxval": 99, "count": 50},
        "b": {"type": "double", "minval": 0.0, "maxval": 1.0, "count": 41},
    }
    with pytest.raises(ValueError, match="hyperparameters") as info:
        grid_points(space)
    assert "2000" in str(info.value) and "2050" in str(info.value)
    space["b"]["count"] = 40
    assert len(grid_points(space)) == 2000


@pytest.mark.parametrize(
    "spec, field",
    [
        ({"type": "uniform"}, "hyperparameters.h.type"),
        ({"type": "const"}, "hyperparameters.h.val"),
        ({"type": "int", "minval": 0.5, "maxval": 2}, "hyperparameters.h.minval"),
        ({"type": "log", "minval": 0, "maxval": 2, "base": 0}, "hyperparameters.h.base"),
        ({"type": "double", "minval": 0, "maxval": 2, "count": 0}, "hyperparameters.h.count"),
    ],
)
def test_validate_space_names_the_field(spec, field) -> None:
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        validate_space({"h": spec})
