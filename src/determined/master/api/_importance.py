"""Hyperparameter importance for the web UI: how much of the spread of the searcher's
metric across trials each hyperparameter explains on its own.

The method is the correlation ratio with a small-sample correction (omega squared, the
one-way analysis of variance effect size): trials are grouped by the hyperparameter's
value (its category; or, for numbers with many distinct values, ``BINS`` bins of equal
trial counts, so a log-scaled hyperparameter is binned the same as on a log axis), and

    importance = (SS_between - (k - 1) * MS_within) / (SS_total + MS_within)

clipped at 0, where ``k`` is the number of groups. 1 means the groups explain all of the
metric's variance; about 0 means no more than chance would. It looks at one
hyperparameter at a time (no interactions), like the marginal view of fANOVA but without
a model, so it is cheap and exact on a few hundred trials. ``share`` rescales the
importances to sum to 1 for a bar chart.
"""

from typing import Any, Dict, List, Mapping, Sequence

import numpy as np

__all__ = ["BINS", "flatten", "hparam_importance"]

BINS = 5


def flatten(hparams: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Nested hyperparameters as dotted names: ``{"opt": {"lr": 1}}`` -> ``{"opt.lr": 1}``."""
    out: Dict[str, Any] = {}
    for k, v in hparams.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


def _groups(values: Sequence[Any]) -> np.ndarray:
    """A group number per trial: by value, or by quantile bin for many distinct numbers."""
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    distinct = sorted({repr(v) for v in values}) if not numeric else sorted(set(values))
    if not numeric or len(distinct) <= BINS:
        index = {d: i for i, d in enumerate(distinct)}
        return np.array([index[v if numeric else repr(v)] for v in values])
    x = np.asarray(values, dtype=float)
    ranks = x.argsort(kind="stable").argsort(kind="stable")
    return (ranks * BINS) // len(x)


def _omega_squared(y: np.ndarray, groups: np.ndarray) -> float:
    labels = np.unique(groups)
    k, n = len(labels), len(y)
    if k < 2 or n <= k:
        return 0.0
    total = float(((y - y.mean()) ** 2).sum())
    if total == 0.0:
        return 0.0
    between = sum(float((groups == g).sum()) * (float(y[groups == g].mean()) - float(y.mean())) ** 2
                  for g in labels)
    within_ms = (total - between) / (n - k)
    return max(0.0, (between - (k - 1) * within_ms) / (total + within_ms))


def hparam_importance(trials: Sequence[Mapping[str, Any]],
                      metric: str = "best_validation") -> Dict[str, Any]:
    """``{"importance": [{"name", "importance", "share", "needs"}...] (most important
    first), "trials": n}`` (``needs``: the trials an estimate takes, one more than the
    hyperparameter's groups) for trials (``{"hparams": {...}, metric: number|None}``); only
    hyperparameters that vary and trials with a finite metric count."""
    rows = [(flatten(t.get("hparams") or {}), t.get(metric)) for t in trials]
    rows = [(h, float(y)) for h, y in rows
            if isinstance(y, (int, float)) and np.isfinite(float(y))]
    if len(rows) < 3:
        return {"importance": [], "trials": len(rows)}
    y = np.array([r[1] for r in rows])
    names = sorted({k for h, _ in rows for k in h})
    result: List[Dict[str, Any]] = []
    for name in names:
        values = [h.get(name) for h, _ in rows]
        if len({repr(v) for v in values}) < 2:
            continue
        groups = _groups(values)
        # An estimate takes more trials than groups (``needs``); with fewer it reads 0.
        result.append({"name": name, "importance": round(_omega_squared(y, groups), 4),
                       "needs": len(np.unique(groups)) + 1})
    total = sum(r["importance"] for r in result)
    for r in result:
        r["share"] = round(r["importance"] / total, 4) if total > 0 else 0.0
    result.sort(key=lambda r: (-r["importance"], r["name"]))
    return {"importance": result, "trials": len(rows)}


