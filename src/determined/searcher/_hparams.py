"""Hyperparameter spaces: validation, random sampling and grid points (SPEC section 3).

A space is a (possibly nested) dict. A leaf is a dict with a ``type`` key (``const``,
``int``, ``double``, ``log``, ``categorical``); a dict without ``type`` is a nested map.
Leaves are visited in sorted-name order at every level, so one RNG gives the same
values for the same space:

    >>> import random
    >>> space = {"lr": {"type": "log", "base": 10.0, "minval": -3.0, "maxval": -3.0},
    ...          "opt": {"name": {"type": "const", "val": "sgd"}}}
    >>> sample_hparams(space, random.Random(0))
    {'lr': 0.001, 'opt': {'name': 'sgd'}}
    >>> grid_points({"n": {"type": "int", "minval": 1, "maxval": 3, "count": 5},
    ...              "act": {"type": "categorical", "vals": ["relu", "tanh"]}})[:3]
    [{'act': 'relu', 'n': 1}, {'act': 'relu', 'n': 2}, {'act': 'relu', 'n': 3}]
"""

from __future__ import annotations

import copy
import itertools
import math
import random
from typing import Any, Dict, Iterator, List, Mapping, Tuple

__all__ = [
    "MAX_GRID_POINTS",
    "grid_points",
    "grid_values",
    "iter_leaves",
    "sample_hparams",
    "sample_one",
    "set_path",
    "validate_space",
]

MAX_GRID_POINTS = 2000

_TYPES = ("const", "int", "double", "log", "categorical")

Path = Tuple[str, ...]


def _is_leaf(spec: Any) -> bool:
    return not isinstance(spec, Mapping) or "type" in spec


def iter_leaves(space: Mapping[str, Any], prefix: Path = ()) -> Iterator[Tuple[Path, Any]]:
    """Yield ``(path, leaf_spec)`` in sorted-name order, depth first."""
    for name in sorted(space):
        spec = space[name]
        path = prefix + (name,)
        if _is_leaf(spec):
            yield path, spec
        else:
            yield from iter_leaves(spec, path)


def set_path(tree: Dict[str, Any], path: Path, value: Any) -> None:
    """Set ``tree[path[0]][path[1]]... = value``, creating nested dicts."""
    for name in path[:-1]:
        tree = tree.setdefault(name, {})
    tree[path[-1]] = value


def _dotted(path: Path) -> str:
    return "hyperparameters." + ".".join(path)


def _number(spec: Mapping[str, Any], key: str, path: Path, integer: bool = False) -> float:
    value = spec.get(key)
    bad = isinstance(value, bool) or not isinstance(value, (int, float))
    bad = bad or (integer and not isinstance(value, int)) or not math.isfinite(value)
    if bad:
        kind = "an integer" if integer else "a number"
        raise ValueError(
            f"Expected {_dotted(path)}.{key} to be {kind}. Received: {key}={value!r}"
        )
    return value


def validate_space(space: Any) -> None:
    """Raise ValueError naming the field if ``space`` is not a well-formed space."""
    if not isinstance(space, Mapping):
        raise ValueError(
            f"Expected hyperparameters to be a mapping. Received: hyperparameters={space!r}"
        )
    for path, spec in iter_leaves(space):
        if not isinstance(spec, Mapping):
            continue  # a plain value is a constant
        kind = spec["type"]
        if kind not in _TYPES:
            raise ValueError(
                f"Expected {_dotted(path)}.type to be one of {list(_TYPES)}. "
                f"Received: type={kind!r}"
            )
        if kind == "const":
            if "val" not in spec:
                raise ValueError(f"Expected {_dotted(path)}.val to be set. Received: nothing")
        elif kind == "categorical":
            vals = spec.get("vals")
            if not isinstance(vals, list) or not vals:
                raise ValueError(
                    f"Expected {_dotted(path)}.vals to be a non-empty list. Received: vals={vals!r}"
                )
        else:
            integer = kind == "int"
            lo = _number(spec, "minval", path, integer)
            hi = _number(spec, "maxval", path, integer)
            if lo > hi:
                raise ValueError(
                    f"Expected {_dotted(path)}.minval <= maxval. "
                    f"Received: minval={lo!r}, maxval={hi!r}"
                )
            if kind == "log":
                base = _number(spec, "base", path)
                if base <= 0:
                    raise ValueError(
                        f"Expected {_dotted(path)}.base > 0. Received: base={base!r}"
                    )
            count = spec.get("count")
            if count is not None and (
                isinstance(count, bool) or not isinstance(count, int) or count < 1
            ):
                raise ValueError(
                    f"Expected {_dotted(path)}.count to be an integer >= 1. "
                    f"Received: count={count!r}"
                )


def sample_one(spec: Any, rng: random.Random) -> Any:
    """Draw one value: int inclusive of maxval, double in [minval, maxval), log base**u."""
    if not isinstance(spec, Mapping):
        return copy.deepcopy(spec)
    kind = spec["type"]
    if kind == "const":
        return copy.deepcopy(spec["val"])
    if kind == "categorical":
        vals = spec["vals"]
        return copy.deepcopy(vals[rng.randrange(len(vals))])
    if kind == "int":
        return rng.randint(spec["minval"], spec["maxval"])
    lo, hi = float(spec["minval"]), float(spec["maxval"])
    u = lo + (hi - lo) * rng.random()
    if kind == "double":
        return u
    return float(spec["base"]) ** u


def sample_hparams(space: Mapping[str, Any], rng: random.Random) -> Dict[str, Any]:
    """Sample every leaf in sorted-name order; returns a nested dict of plain values."""
    out: Dict[str, Any] = {}
    for path, spec in iter_leaves(space):
        set_path(out, path, sample_one(spec, rng))
    return out


def _round_half_away(x: float) -> int:
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def grid_values(spec: Any, path: Path = ("?",)) -> List[Any]:
    """The grid values of one leaf (SPEC 3); int/double/log need ``count``."""
    if not isinstance(spec, Mapping):
        return [copy.deepcopy(spec)]
    kind = spec["type"]
    if kind == "const":
        return [copy.deepcopy(spec["val"])]
    if kind == "categorical":
        return [copy.deepcopy(v) for v in spec["vals"]]
    count = spec.get("count")
    if count is None:
        raise ValueError(
            f"Expected {_dotted(path)}.count to be set for grid search. Received: count=None"
        )
    lo, hi = spec["minval"], spec["maxval"]
    if kind == "int":
        c = min(count, hi - lo + 1)
        if c == 1:
            return [_round_half_away((lo + hi) / 2)]
        return [_round_half_away(lo + i * (hi - lo) / (c - 1)) for i in range(c)]
    lo, hi = float(lo), float(hi)
    exps = [(lo + hi) / 2] if count == 1 else [
        lo + i * (hi - lo) / (count - 1) for i in range(count)
    ]
    if kind == "double":
        return exps
    base = float(spec["base"])
    return [base**e for e in exps]


def grid_points(space: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The Cartesian product of the leaves' grid values (last sorted name varies fastest).

    Raises:
        ValueError: a numeric leaf has no ``count``, or there are more than 2000 points.
    """
    leaves = list(iter_leaves(space))
    value_lists = [grid_values(spec, path) for path, spec in leaves]
    size = 1
    for values in value_lists:
        size *= len(values)
    if size > MAX_GRID_POINTS:
        sizes = " x ".join(f"{'.'.join(p)}={len(v)}" for (p, _), v in zip(leaves, value_lists))
        raise ValueError(
            f"Expected hyperparameters to give at most {MAX_GRID_POINTS} grid points. "
            f"Received: {size} points ({sizes})"
        )
    points = []
    for combo in itertools.product(*value_lists):
        point: Dict[str, Any] = {}
        for (path, _), value in zip(leaves, combo):
            set_path(point, path, copy.deepcopy(value))
        points.append(point)
    return points
