"""A tree-structured Parzen estimator sampler over results at every training length.

Each configuration counts once, by its longest training length so far and its metric
there: configurations that trained longer rank above all that stopped shorter (early
stopping promoted them), then by metric. Once ``warmup`` configurations have results
(``max(10, 2 * (d + 1))`` for ``d`` free hyperparameters; random draws until then, so a
TPE search starts exactly as a random one does), each new trial comes from a model of
that ranking: the best ``ceil(gamma * N)`` (at most 25) form the "good" density
``l(x)``, the rest the "bad" density ``g(x)``; ``n_candidates`` points are drawn from
``l`` and the one with the largest ``l(x) / g(x)`` wins. A fraction ``random_fraction``
of suggestions may stay random draws (default none: each density has a uniform
component of weight one point).

Every free hyperparameter becomes one coordinate: numbers in [0, 1] (``log`` on its
exponent, ``int`` by equal-width bins), categoricals by index (Aitchison-Aitken kernel).
Densities are mixtures of product kernels (so the model is multivariate); a number's
kernel is a normal truncated to [0, 1] whose bandwidth, per point and coordinate, is the
larger gap to a neighbouring point (the centre 0.5 and the ends counting), bounded below
by ``1 / min(100, n + 1)`` for ``n`` points. Constants and single-valued leaves are not
modelled. A categorical's kernel keeps a point's value with probability ``1 - b`` and
spreads ``b = (k - 1) / k * min(1, 4 / (n + 1))`` over the other ``k - 1`` values (so
values stay uniform while the good set is small). Nested maps are flattened by their
sorted leaf paths.

Written with numpy alone (``_tpe_density``, imported on the first model) (no statsmodels or hyperopt) so that the whole model state is
the list of results, which goes into the searcher's JSON snapshot; the randomness of a
suggestion is one 64-bit seed drawn from the experiment RNG.
"""

from __future__ import annotations

import copy
import math
import random
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from determined.searcher._hparams import Path, iter_leaves, sample_hparams, set_path
from determined.searcher._sampler import Sampler

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TPESampler"]

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


class TPESampler(Sampler):
    """Tree-structured Parzen estimator over results at every training length (see the
    module docstring).

    Args:
        space: The normalized hyperparameter space.
        gamma: Fraction of configurations that form the good density (at most 25).
        n_candidates: Points drawn from the good density per suggestion.
        random_fraction: Fraction of suggestions drawn at random once a model exists.
        warmup: Configurations with results before the first model (default
            ``max(10, 2 * (d + 1))`` for ``d`` free hyperparameters).

    Example:
        >>> space = {"x": {"type": "double", "minval": 0.0, "maxval": 1.0}}
        >>> s = TPESampler(space)
        >>> for i in range(20):
        ...     s.observe({"x": i / 20}, 10, abs(i / 20 - 0.3))
        >>> abs(s.suggest(space, random.Random(0))["x"] - 0.3) < 0.2
        True
    """

    name = "tpe"

    def __init__(
        self,
        space: Mapping[str, Any],
        gamma: float = 0.1,
        n_candidates: int = 64,
        random_fraction: float = 0.0,
        warmup: Optional[int] = None,
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
        self.leaves = list(iter_leaves(space))
        self.dims = [_Dim(path, spec) for path, spec in self.leaves if _free(spec)]
        d = len(self.dims)
        self.warmup = max(10, 2 * (d + 1)) if warmup is None else warmup
        if self.warmup < 2:
            raise ValueError(f"Expected warmup >= 2. Received: warmup={warmup!r}")
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

    def ranking(self) -> List[Tuple[float, ...]]:
        """Every configuration with results, best first: longer training first, then
        smaller metric (ties: the earlier result)."""
        latest: Dict[Tuple[float, ...], Tuple[int, float, int]] = {}
        seq = 0
        for units in sorted(self.results):
            for point, metric in self.results[units]:
                latest[tuple(point)] = (units, metric, seq)
                seq += 1
        return sorted(latest, key=lambda p: (-latest[p][0], latest[p][1], latest[p][2]))

    def n_good(self, n: int) -> int:
        """Size of the good set among ``n`` configurations."""
        return max(1, min(int(math.ceil(self.gamma * n)), 25))

    # Suggestions.

    def suggest(self, space: Mapping[str, Any], rng: random.Random) -> Dict[str, Any]:
        ranked = self.ranking()
        if len(ranked) < self.warmup or (
            self.random_fraction > 0 and rng.random() < self.random_fraction
        ):
            return sample_hparams(space, rng)
        # numpy only once a model is fitted: importing the searchers (and the engine,
        # and the master) stays free of it.
        import numpy as np

        from determined.searcher._tpe_density import Density

        gen = np.random.default_rng(rng.getrandbits(64))
        points = np.array(ranked, dtype=float)
        n_good = self.n_good(len(points))
        good = Density(points[:n_good], self.dims)
        bad = Density(points[n_good:], self.dims)
        candidates = good.sample(gen, self.n_candidates)
        score = good.log_pdf(candidates) - bad.log_pdf(candidates)
        return self._decode(candidates[int(np.argmax(score))])

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
