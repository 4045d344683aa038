"""Rung lengths and bracket layouts shared by the adaptive family (SPEC section 3)."""

from __future__ import annotations

import bisect
import dataclasses
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from determined.searcher._checks import check_choice, check_float, check_int

__all__ = ["MODES", "BracketRungs", "Rung", "RungResult", "bracket_rungs",
           "check_halving_options", "floor_log", "halving_options",
           "rung_lengths"]

MODES = ("aggressive", "standard", "conservative")


class Rung:
    """One rung of an ASHA bracket: its results, best first, and the trials it awaits."""

    def __init__(self) -> None:
        # Sorted by metric (ties: earlier result first): [request_id, metric, promoted].
        self.results: List[List[Any]] = []
        self.outstanding = 0

    def insert(self, request_id: int, metric: float) -> int:
        """Rank a result; returns its index (0 = best)."""
        index = bisect.bisect_right([r[1] for r in self.results], metric)
        self.results.insert(index, [request_id, metric, False])
        return index


@dataclasses.dataclass(frozen=True)
class RungResult:
    """A result a bracket recorded at a rung: the trial's request id, its metric as the
    searcher ranked it (signed: smaller is better; infinite for a trial that exited), and
    whether the bracket promoted the trial from this rung (continued it, for a
    time-metric bracket)."""

    request_id: int
    metric: float
    promoted: bool


@dataclasses.dataclass(frozen=True)
class BracketRungs:
    """One bracket's rungs: ``lengths[i]`` is rung ``i``'s training length in the
    searcher's unit (a time-metric value for a time-metric search) and ``results[i]``
    its results, best first."""

    bracket: int
    lengths: Tuple[int, ...]
    results: Tuple[Tuple[RungResult, ...], ...]

    @classmethod
    def of(cls, bracket: int, lengths: Sequence[int],
           results: Sequence[Sequence[Sequence[Any]]]) -> "BracketRungs":
        """From per-rung ``[request_id, metric, promoted]`` lists (copied)."""
        return cls(bracket, tuple(int(n) for n in lengths), tuple(
            tuple(RungResult(int(r), float(m), bool(p)) for r, m, p in rung)
            for rung in results))


def halving_options(cfg: Mapping[str, Any]) -> Dict[str, Any]:
    """``divisor``, ``max_rungs`` and ``mode`` of a searcher config, defaults filled in:
    keyword arguments for any adaptive method.

    >>> halving_options({"name": "adaptive_asha", "max_rungs": 3})
    {'divisor': 4.0, 'max_rungs': 3, 'mode': 'standard'}
    """
    return {"divisor": cfg.get("divisor", 4.0), "max_rungs": cfg.get("max_rungs", 5),
            "mode": cfg.get("mode", "standard")}


def check_halving_options(divisor: Any, max_rungs: Any, mode: Any) -> Tuple[float, int, str]:
    """``(divisor, max_rungs, mode)`` if ``divisor > 1``, ``max_rungs >= 1`` and ``mode`` is
    one of :data:`MODES`; else ``ValueError`` naming the argument."""
    return (check_float("divisor", divisor, min_value=1.0, min_exclusive=True),
            check_int("max_rungs", max_rungs, min_value=1), check_choice("mode", mode, MODES))


def rung_lengths(max_length: int, divisor: float, num_rungs: int) -> List[int]:
    """``L_i = max(floor(max_length / divisor**(R-1-i)), 1)`` for i in 0..R-1.

    >>> rung_lengths(16, 4.0, 3)
    [1, 4, 16]
    """
    return [
        max(int(max_length / divisor ** (num_rungs - 1 - i)), 1) for i in range(num_rungs)
    ]


def bracket_rungs(mode: str, max_rungs: int) -> List[int]:
    """Rung counts of the brackets for ``mode``, most rungs first.

    >>> bracket_rungs("standard", 5), bracket_rungs("conservative", 3)
    ([5, 4, 3], [3, 2, 1])
    """
    if mode == "aggressive":
        return [max_rungs]
    if mode == "standard":
        return list(range(max_rungs, (max_rungs - 1) // 2, -1))
    if mode == "conservative":
        return list(range(max_rungs, 0, -1))
    raise ValueError(f"Expected mode to be one of {list(MODES)}. Received: mode={mode!r}")


def floor_log(n: int, base: float) -> int:
    """The largest k >= 0 with ``base**k <= n`` (exact for integer powers).

    >>> floor_log(64, 4.0), floor_log(63, 4.0), floor_log(1, 4.0)
    (3, 2, 0)
    """
    k = 0
    while base ** (k + 1) <= n * (1 + 1e-12):
        k += 1
    return k
