"""The TPE sampler's densities (numpy): mixtures of product kernels over encoded points;
see :mod:`determined.searcher._tpe` for the model."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["Density"]

_SQRT2 = math.sqrt(2.0)


def _ndtr(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf, otypes=[float])(x / _SQRT2))


def _neighbour_bandwidths(col: np.ndarray) -> np.ndarray:
    """Per-point bandwidths of one coordinate in [0, 1]: the larger gap to a neighbour
    among the points and the centre 0.5, bounded by the ends 0 and 1 (the outermost
    points take their inner gap)."""
    pts = np.append(col, 0.5)
    order = np.argsort(pts, kind="stable")
    s = np.concatenate([[0.0], pts[order], [1.0]])
    sig = np.maximum(s[1:-1] - s[:-2], s[2:] - s[1:-1])
    sig[0], sig[-1] = s[2] - s[1], s[-2] - s[-3]
    out = np.empty_like(sig)
    out[order] = sig
    return out[: len(col)]


class Density:
    """A mixture of product kernels over encoded points (rows of ``data``) plus a
    uniform component of the weight of one point."""

    def __init__(self, data: np.ndarray, dims: Sequence[Any]) -> None:
        self.data = data
        self.dims = dims
        n = len(data)
        self.cat = np.array([d.categorical for d in dims])
        bw = np.empty((n, len(dims)))
        for j, d in enumerate(dims):
            if d.categorical:  # Aitchison-Aitken: the chance of another value, uniform
                bw[:, j] = (d.k - 1) / d.k * min(1.0, 4.0 / (n + 1))  # up to 3 points
            else:
                bw[:, j] = np.clip(_neighbour_bandwidths(data[:, j]), 1.0 / min(100, n + 1), 1.0)
        self.bw = bw
        num = ~self.cat
        # log of the truncation mass on [0, 1] of each point's normal kernel
        lo = _ndtr((0.0 - data[:, num]) / bw[:, num])
        hi = _ndtr((1.0 - data[:, num]) / bw[:, num])
        self.log_mass = np.log(np.maximum(hi - lo, 1e-300))
        self.log_uniform = -sum(math.log(d.k) for d in dims if d.categorical)

    def log_pdf(self, x: np.ndarray) -> np.ndarray:
        """Log density at each row of ``x``."""
        num, cat = ~self.cat, self.cat
        log_k = np.zeros((len(x), len(self.data) + 1))
        if num.any():
            h = self.bw[:, num]
            z = (x[:, None, num] - self.data[None, :, num]) / h[None]
            log_n = -0.5 * z**2 - np.log(h * math.sqrt(2 * math.pi))[None] - self.log_mass[None]
            log_k[:, :-1] += log_n.sum(axis=2)
        if cat.any():
            lam = self.bw[:, cat][None]
            k = np.array([d.k for d in self.dims])[cat]
            same = x[:, None, cat] == self.data[None, :, cat]
            log_k[:, :-1] += np.where(same, np.log1p(-lam), np.log(lam / (k - 1))).sum(axis=2)
        log_k[:, -1] = self.log_uniform
        peak = log_k.max(axis=1, keepdims=True)
        return peak[:, 0] + np.log(np.exp(log_k - peak).sum(axis=1)) - math.log(len(log_k[0]))

    def sample(self, gen: np.random.Generator, n: int) -> np.ndarray:
        """``n`` points, each from one mixture component: a point's kernel (truncated
        normals; categoricals kept with probability ``1 - bandwidth``, else another
        value) or the uniform component."""
        pick = gen.integers(len(self.data) + 1, size=n)
        fresh = pick == len(self.data)
        pick = np.minimum(pick, len(self.data) - 1)
        rows = self.data[pick]
        out = np.empty((n, len(self.dims)))
        for j, d in enumerate(self.dims):
            bw = self.bw[pick, j]
            if d.categorical:  # another value with probability bw; any from the uniform
                other = (rows[:, j] + 1 + gen.integers(d.k - 1, size=n)) % d.k
                col = np.where(gen.random(n) < bw, other, rows[:, j])
                out[:, j] = np.where(fresh, gen.integers(d.k, size=n), col)
                continue
            col = rows[:, j] + bw * gen.standard_normal(n)
            for _ in range(20):  # rejection sampling of the truncation to [0, 1]
                bad = (col < 0.0) | (col > 1.0)
                if not bad.any():
                    break
                col[bad] = rows[bad, j] + bw[bad] * gen.standard_normal(int(bad.sum()))
            out[:, j] = np.where(fresh, gen.random(n), np.clip(col, 0.0, 1.0))
        return out
