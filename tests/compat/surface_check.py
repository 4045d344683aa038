"""Compare the installed package against the parsed upstream surface; one problem per line."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, List

from api_surface import Entry


def _compatible(fn: Any, got: List[str], expected: List[str], drop_first: bool) -> bool:
    """Same names in the same order; extra trailing parameters only with defaults (or
    ``*args``/``**kwargs``), so every upstream call still works."""
    if got == expected:
        return True
    if got[:len(expected)] != expected:
        return False
    params = list(inspect.signature(fn).parameters.values())
    if drop_first and params and params[0].name in ("self", "cls"):
        params = params[1:]
    extra = params[len(expected):]
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               or p.kind is p.KEYWORD_ONLY and p.default is not p.empty for p in extra)


def _names(fn: Any, drop_first: bool) -> List[str]:
    sig = inspect.signature(fn)
    out = []
    for p in sig.parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
        elif p.kind is p.VAR_KEYWORD:
            out.append("**" + p.name)
        else:
            out.append(p.name)
    if drop_first and out and out[0] in ("self", "cls"):
        out = out[1:]
    return out


def problems(entry: Entry) -> List[str]:
    where = f"{entry.module}.{entry.name}" + (f".{entry.member}" if entry.member else "")
    try:
        module = importlib.import_module(entry.module)
    except Exception as e:  # pragma: no cover - reported
        return [f"{where}: cannot import {entry.module}: {e!r}"]
    if not hasattr(module, entry.name):
        return [f"{where}: missing"]
    obj = getattr(module, entry.name)
    if entry.kind == "class":
        return [] if inspect.isclass(obj) else [f"{where}: not a class"]
    if entry.kind == "def":
        if not callable(obj):
            return [f"{where}: not callable"]
        got = _names(obj, drop_first=False)
        ok = _compatible(obj, got, entry.params or [], False)
        return [] if ok else [f"{where}: parameters {got} != {entry.params}"]
    if entry.kind in ("value", "module"):
        return []
    # members of a class
    if not inspect.isclass(obj):
        return [f"{where}: {entry.name} is not a class"]
    missing = object()
    static = missing
    for klass in obj.__mro__:
        if entry.member in vars(klass):
            static = vars(klass)[entry.member]
            break
    if static is missing:
        return [f"{where}: missing"]
    if entry.kind == "attribute":
        return []
    decos = entry.decorators.split()
    if "@property" in decos:
        return [] if isinstance(static, property) else [f"{where}: not a property"]
    if "@staticmethod" in decos and not isinstance(static, staticmethod):
        return [f"{where}: not a staticmethod"]
    if "@classmethod" in decos and not isinstance(static, classmethod):
        return [f"{where}: not a classmethod"]
    fn = getattr(obj, entry.member)
    is_static = isinstance(static, staticmethod)
    drop = not is_static and not isinstance(static, classmethod)
    got = _names(fn, drop_first=drop)
    ok = _compatible(fn, got, entry.params or [], drop)
    return [] if ok else [f"{where}: parameters {got} != {entry.params}"]
