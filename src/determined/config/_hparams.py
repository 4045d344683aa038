"""Hyperparameter spaces: the user's YAML form, the tagged form the schema checks,
and the normalized form searchers and trial code see.

User form: a plain value is a constant; a mapping whose ``type`` is one of
const/int/double/log/categorical is a leaf spec; any other mapping is a nested
map of hyperparameters. Normalized form: every leaf is a full spec dict with a
``type``; nested maps stay plain dicts (no ``type`` key).
"""

from __future__ import annotations

from typing import Any, Dict

__all__ = ["tag_space", "untag_space", "Constant", "Integer", "Double", "Log", "Categorical"]

_LEAF_TYPES = {"const", "int", "double", "log", "categorical"}


def _is_leaf_spec(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _LEAF_TYPES


def tag_space(space: Any) -> Any:
    """User form -> tagged form (nested maps become ``{type: object, vals: ...}``)."""
    if not isinstance(space, dict):
        return space
    tagged: Dict[str, Any] = {}
    for name, value in space.items():
        if _is_leaf_spec(value):
            tagged[name] = value
        elif isinstance(value, dict) and "type" in value and not isinstance(value["type"], dict):
            tagged[name] = value  # an unknown type: let the schema report it
        elif isinstance(value, dict):
            tagged[name] = {"type": "object", "vals": tag_space(value)}
        else:
            tagged[name] = {"type": "const", "val": value}
    return tagged


def untag_space(tagged: Dict[str, Any]) -> Dict[str, Any]:
    """Tagged (validated, dumped) form -> normalized form."""
    out: Dict[str, Any] = {}
    for name, spec in tagged.items():
        if spec["type"] == "object":
            out[name] = untag_space(spec["vals"])
        else:
            out[name] = {k: v for k, v in spec.items() if not (k == "count" and v is None)}
    return out


def Constant(value: Any) -> Dict[str, Any]:
    """A constant hyperparameter: ``{"type": "const", "val": value}``."""
    return {"type": "const", "val": value}


def Integer(minval: int, maxval: int, count: int = None) -> Dict[str, Any]:  # type: ignore
    """An integer drawn from ``[minval, maxval]``."""
    spec: Dict[str, Any] = {"type": "int", "minval": minval, "maxval": maxval}
    if count is not None:
        spec["count"] = count
    return spec


def Double(minval: float, maxval: float, count: int = None) -> Dict[str, Any]:  # type: ignore
    """A float drawn from ``[minval, maxval)``."""
    spec: Dict[str, Any] = {"type": "double", "minval": minval, "maxval": maxval}
    if count is not None:
        spec["count"] = count
    return spec


def Log(minval: float, maxval: float, base: float = 10, count: int = None) -> Dict[str, Any]:  # type: ignore
    """``base ** x`` with ``x`` drawn from ``[minval, maxval)``."""
    spec: Dict[str, Any] = {"type": "log", "minval": minval, "maxval": maxval, "base": base}
    if count is not None:
        spec["count"] = count
    return spec


def Categorical(vals: list) -> Dict[str, Any]:
    """One of ``vals``."""
    return {"type": "categorical", "vals": list(vals)}
