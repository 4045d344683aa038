"""A tree-structured Parzen estimator sampler, fit per training length as BOHB does.

Results are grouped by the training length they were measured at. Once the longest
length with enough results (``n_good > d`` and ``n_bad > d`` for ``d`` free
hyperparameters) exists, each new trial is drawn from a model of that length: the best
``max(d + 1, gamma * N)`` results form the "good" density ``l(x)``, the rest the "bad"
density ``g(x)``; ``n_candidates`` points are drawn from ``l`` (bandwidths widened by
``bandwidth_factor``) and the one with the largest ``l(x) / g(x)`` wins. A fraction
``random_fraction`` of suggestions, and all of them before any model exists, are
ordinary random draws, so a TPE search starts exactly as a random one does.

Every free hyperparameter becomes one coordinate: numbers in [0, 1] (``log`` on its
exponent, ``int`` by equal-width bins), categoricals by index (Aitchison-Aitken kernel).
Numbers use truncated-normal kernels with per-dimension bandwidths by the normal
reference rule (Scott). Constants and single-valued leaves are not modelled. Nested
maps are flattened by their sorted leaf paths.

Written with numpy alone (no statsmodels or hyperopt) so that the whole model state is
the list of results, which goes into the searcher's JSON snapshot; the randomness of a
suggestion is one 64-bit seed drawn from the experiment RNG.
"""

from __future__ import annotations

import copy
import math
import random
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from determined.searcher._hparams import Path, iter_leaves, sample_hparams, set_path
from determined.searcher._sampler import Sampler

__all__ = ["TPESampler"]

_SQRT2 = math.sqrt(2.0)


class _Dim:
    """One modelled coordinate: ``int``/``double``/``log`` in [0, 1], or a categorical."""

    def __init__(self, path: Path, spec: Mapping[str, Any]) -> None:
        self.path = path
        self.kind = spec["type"]
        self.k = 0
        if self.kind == "categorical":
            self.vals = spec["vals"]
            self.k = len(self.vals)
        else:
            self.lo, self.hi = spec["minval"], spec["maxval"]
            self.base = float(spec.get("base", 10.0))

    @property
    def categorical(self) -> bool:
        return self.kind == "categorical"

    def encode(self, value: Any) -> Optional[float]:
        if self.categorical:
            for i, v in enumerate(self.vals):
                if v == value:
                    return float(i)
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        if self.kind == "int":
            u = (value - self.lo + 0.5) / (self.hi - self.lo + 1)
        elif self.kind == "double":
            u = (value - self.lo) / (self.hi - self.lo)
        else:
            if value <= 0:
                return None
            u = (math.log(value) / math.log(self.base) - self.lo) / (self.hi - self.lo)
        return min(max(float(u), 0.0), 1.0)

    def decode(self, u: float) -> Any:
        if self.categorical:
            return copy.deepcopy(self.vals[int(u)])
        if self.kind == "int":
            return min(self.lo + int(math.floor(u * (self.hi - self.lo + 1))), self.hi)
        x = self.lo + (self.hi - self.lo) * min(max(u, 0.0), 1.0)
        return x if self.kind == "double" else self.base**x


def _free(spec: Any) -> bool:
    """Whether a leaf has more than one possible value (so it is worth modelling)."""
    if not isinstance(spec, Mapping) or spec["type"] == "const":
        return False
    if spec["type"] == "categorical":
        return len(spec["vals"]) > 1
    return spec["maxval"] > spec["minval"]


def _fixed_value(spec: Any) -> Any:
    """The only value of a leaf that is not free."""
    if not isinstance(spec, Mapping):
        return copy.deepcopy(spec)
    kind = spec["type"]
    if kind == "const":
        return copy.deepcopy(spec["val"])
    if kind == "categorical":
        return copy.deepcopy(spec["vals"][0])
    if kind == "log":
        return float(spec["base"]) ** float(spec["minval"])
    return spec["minval"] if kind == "int" else float(spec["minval"])


def _ndtr(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf, otypes=[float])(x / _SQRT2))


class _Density:
    """A product-kernel Parzen density over encoded points (rows of ``data``)."""

    def __init__(
        self, data: np.ndarray, dims: Sequence[_Dim], min_bandwidth: float, prior: bool
    ) -> None:
        self.data = data
        self.dims = dims
        self.prior = prior  # a uniform component of weight 1, as one more point
        n = len(data)
        bw = 1.06 * data.std(axis=0) * n ** (-0.2)
        bw = np.maximum(bw, min_bandwidth)
        self.cat = np.array([d.categorical for d in dims])
        for j, d in enumerate(dims):
            if d.categorical:  # Aitchison-Aitken: at most uniform over the k values
                bw[j] = min(bw[j], (d.k - 1) / d.k)
        self.bw = bw
        num = ~self.cat
        # log of the truncation mass on [0, 1] of each point's normal kernel
        lo = _ndtr((0.0 - data[:, num]) / bw[num])
        hi = _ndtr((1.0 - data[:, num]) / bw[num])
        self.log_mass = np.log(np.maximum(hi - lo, 1e-300))

    def _log_kernels(self, x: np.ndarray) -> np.ndarray:
        """``[candidate, point, dim]`` log kernel values (each dim a density of its own)."""
        num, cat = ~self.cat, self.cat
        out = np.zeros((len(x), len(self.data), len(self.dims)))
        if num.any():
            h = self.bw[num]
            z = (x[:, None, num] - self.data[None, :, num]) / h
            out[:, :, num] = (
                -0.5 * z**2 - np.log(h * math.sqrt(2 * math.pi)) - self.log_mass[None]
            )
        if cat.any():
            lam = self.bw[cat]
            k = np.array([d.k for d in self.dims])[cat]
            same = x[:, None, cat] == self.data[None, :, cat]
            out[:, :, cat] = np.where(same, np.log1p(-lam), np.log(lam / (k - 1)))
        return out

    def log_pdf(self, x: np.ndarray, multivariate: bool = True) -> np.ndarray:
        """Log density at each row of ``x``: of the product kernels (multivariate) or the
        sum over dimensions of each dimension's own mixture (independent)."""
        log_k = self._log_kernels(x)
        log_prior = np.array([-math.log(d.k) if d.categorical else 0.0 for d in self.dims])
        if multivariate:
            log_k = log_k.sum(axis=2, keepdims=True)
            log_prior = np.array([log_prior.sum()])
        n = len(self.data)
        if self.prior:
            prior = np.broadcast_to(log_prior, (len(x), 1, len(log_prior)))
            log_k = np.concatenate([log_k, prior], axis=1)
            n += 1
        peak = log_k.max(axis=1, keepdims=True)
        lse = peak[:, 0] + np.log(np.exp(log_k - peak).sum(axis=1))
        return (lse - math.log(n)).sum(axis=1)

    def sample(self, gen: np.random.Generator, n: int, factor: float, min_bw: float) -> np.ndarray:
        """``n`` points near random rows: widened truncated normals, categoricals kept with
        probability ``1 - bandwidth`` else uniform."""
        rows = self.data[gen.integers(len(self.data), size=n)]
        out = rows.copy()
        for j, d in enumerate(self.dims):
            if d.categorical:
                redraw = gen.random(n) < self.bw[j]
                out[redraw, j] = gen.integers(d.k, size=int(redraw.sum()))
                continue
            sd = max(self.bw[j] * factor, min_bw)
            col = rows[:, j] + sd * gen.standard_normal(n)
            for _ in range(20):  # rejection sampling of the truncation to [0, 1]
                bad = (col < 0.0) | (col > 1.0)
                if not bad.any():
                    break
                col[bad] = rows[bad, j] + sd * gen.standard_normal(int(bad.sum()))
            out[:, j] = np.clip(col, 0.0, 1.0)
        if self.prior:  # the uniform component's share of the draws
            fresh = gen.random(n) < 1.0 / (len(self.data) + 1)
            for j, d in enumerate(self.dims):
                m = int(fresh.sum())
                out[fresh, j] = gen.integers(d.k, size=m) if d.categorical else gen.random(m)
        return out


class TPESampler(Sampler):
    """Tree-structured Parzen estimator per training length (see the module docstring).

    Args:
        space: The normalized hyperparameter space.
        gamma: Fraction of results that form the good density (BOHB: 0.15).
        n_candidates: Points drawn from the good density per suggestion.
        random_fraction: Fraction of suggestions drawn at random once a model exists.
        bandwidth_factor: Widening of the good density's bandwidths when drawing.
        min_bandwidth: Lower bound on every bandwidth.

    Example:
        >>> space = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}}
        >>> s = TPESampler(space, random_fraction=0.0)
        >>> for i in range(20):
        ...     s.observe({"x": i / 20}, 10, abs(i / 20 - 0.3))
        >>> abs(s.suggest(space, random.Random(0))["x"] - 0.3) < 0.2
        True
    """

    name = "tpe"

    def __init__(
        self,
        space: Mapping[str, Any],
        gamma: float = 0.15,
        n_candidates: int = 64,
        random_fraction: float = 1.0 / 3.0,
        bandwidth_factor: float = 3.0,
        min_bandwidth: float = 1e-3,
        prior: bool = True,
        multivariate: bool = True,
    ) -> None:
        if not 0.0 < gamma < 1.0:
            raise ValueError(f"Expected 0 < gamma < 1. Received: gamma={gamma!r}")
        if not 0.0 <= random_fraction <= 1.0:
            raise ValueError(
                f"Expected 0 <= random_fraction <= 1. Received: random_fraction={random_fraction!r}"
            )
        if n_candidates < 1:
            raise ValueError(f"Expected n_candidates >= 1. Received: n_candidates={n_candidates!r}")
        self.space = space
        self.gamma = gamma
        self.n_candidates = n_candidates
        self.random_fraction = random_fraction
        self.bandwidth_factor = bandwidth_factor
        self.min_bandwidth = min_bandwidth
        self.prior = prior
        self.multivariate = multivariate
        self.leaves = list(iter_leaves(space))
        self.dims = [_Dim(path, spec) for path, spec in self.leaves if _free(spec)]
        # units -> [(encoded point, signed metric)], in the order observed
        self.results: Dict[int, List[Tuple[List[float], float]]] = {}

    # Observations.

    def observe(self, hparams: Mapping[str, Any], units: int, metric: float) -> None:
        point = self._encode(hparams)
        if point is None or not self.dims:
            return
        metric = float(metric)
        if math.isnan(metric):
            metric = math.inf
        metric = max(metric, -sys.float_info.max)  # JSON keeps no -inf
        self.results.setdefault(int(units), []).append((point, metric))

    def _encode(self, hparams: Mapping[str, Any]) -> Optional[List[float]]:
        point = []
        for d in self.dims:
            value: Any = hparams
            for name in d.path:
                if not isinstance(value, Mapping) or name not in value:
                    return None
                value = value[name]
            u = d.encode(value)
            if u is None:
                return None
            point.append(u)
        return point

    def _split(self, n: int) -> Tuple[int, int]:
        """Sizes of the good and bad sets for ``n`` results (BOHB's rule)."""
        d = len(self.dims)
        n_good = max(d + 1, int(self.gamma * n))
        return n_good, n - n_good

    def model_units(self) -> Optional[int]:
        """The longest training length whose results are enough for a model, if any."""
        d = len(self.dims)
        for units in sorted(self.results, reverse=True):
            n_good, n_bad = self._split(len(self.results[units]))
            if n_good > d and n_bad > d:
                return units
        return None

    # Suggestions.

    def suggest(self, space: Mapping[str, Any], rng: random.Random) -> Dict[str, Any]:
        units = self.model_units()
        if units is None or rng.random() < self.random_fraction:
            return sample_hparams(space, rng)
        gen = np.random.default_rng(rng.getrandbits(64))
        rows = self.results[units]
        metrics = np.array([m for _, m in rows])
        order = np.argsort(metrics, kind="stable")
        points = np.array([p for p, _ in rows], dtype=float)
        n_good, _ = self._split(len(rows))
        good = _Density(points[order[:n_good]], self.dims, self.min_bandwidth, self.prior)
        bad = _Density(points[order[n_good:]], self.dims, self.min_bandwidth, self.prior)
        candidates = good.sample(gen, self.n_candidates, self.bandwidth_factor, self.min_bandwidth)
        mv = self.multivariate
        score = good.log_pdf(candidates, mv) - bad.log_pdf(candidates, mv)
        best = candidates[int(np.argmax(score))]
        return self._decode(best)

    def _decode(self, point: np.ndarray) -> Dict[str, Any]:
        values = {d.path: d.decode(float(u)) for d, u in zip(self.dims, point)}
        out: Dict[str, Any] = {}
        for path, spec in self.leaves:
            set_path(out, path, values[path] if path in values else _fixed_value(spec))
        return out

    # Snapshots.

    def state_dict(self) -> Dict[str, Any]:
        return {
            "results": [
                [units, [[p, None if m == math.inf else m] for p, m in rows]]
                for units, rows in sorted(self.results.items())
            ]
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.results = {
            int(units): [
                ([float(u) for u in p], math.inf if m is None else float(m)) for p, m in rows
            ]
            for units, rows in state.get("results", [])
        }
