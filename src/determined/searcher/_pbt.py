"""Population-based training (PBT): truncate the worst, clone and explore the best."""

from __future__ import annotations

import copy
import math
import random
from typing import Any, Dict, List, Mapping, Set

from determined.config import Length, Unit
from determined.searcher._base import (
    WORST_METRIC,
    SearchContext,
    SearchMethod,
    decode_metric,
    encode_metric,
)
from determined.searcher._checks import check_float, check_int, check_length, read_length, require
from determined.searcher._hparams import iter_leaves, sample_one, set_path
from determined.searcher._operations import (
    Checkpoint,
    Close,
    Create,
    ExitedReason,
    Operation,
    Train,
    Validate,
)

__all__ = ["PBTSearch", "explore"]


def _get_path(tree: Mapping[str, Any], path: Any) -> Any:
    for name in path:
        tree = tree[name]
    return tree


def explore(
    space: Mapping[str, Any],
    hparams: Mapping[str, Any],
    rng: random.Random,
    resample_probability: float,
    perturb_factor: float,
) -> Dict[str, Any]:
    """A "nearby" assignment: each leaf (sorted-name order) is resampled with probability
    ``resample_probability``; otherwise numbers are multiplied by ``1 + perturb_factor`` or
    ``1 - perturb_factor`` (fair coin) and clamped to their range (int: ceil going up,
    floor going down, after rounding off float noise at 9 decimals; log: clamped to
    ``[base**minval, base**maxval]``). Constants and categoricals are kept.

    >>> space = {"n": {"type": "int", "minval": 1, "maxval": 10, "count": None},
    ...          "act": {"type": "categorical", "vals": ["relu", "tanh"]}}
    >>> explore(space, {"n": 5, "act": "tanh"}, random.Random(0), 0.0, 0.2)
    {'act': 'tanh', 'n': 4}
    >>> explore(space, {"n": 5, "act": "tanh"}, random.Random(1), 0.0, 0.2)
    {'act': 'tanh', 'n': 6}
    """
    out: Dict[str, Any] = {}
    for path, spec in iter_leaves(space):
        try:
            old = _get_path(hparams, path)
        except (KeyError, TypeError):
            set_path(out, path, sample_one(spec, rng))
            continue
        if rng.random() < resample_probability:
            set_path(out, path, sample_one(spec, rng))
            continue
        kind = spec.get("type") if isinstance(spec, Mapping) else "const"
        if kind not in ("int", "double", "log"):
            set_path(out, path, copy.deepcopy(old))
            continue
        up = rng.random() >= 0.5
        value = old * (1 + perturb_factor if up else 1 - perturb_factor)
        if kind == "int":
            value = round(value, 9)
            value = int(math.ceil(value) if up else math.floor(value))
            value = min(max(value, spec["minval"]), spec["maxval"])
        else:
            lo, hi = float(spec["minval"]), float(spec["maxval"])
            if kind == "log":
                lo, hi = float(spec["base"]) ** lo, float(spec["base"]) ** hi
            value = min(max(float(value), lo), hi)
        set_path(out, path, value)
    return out


class PBTSearch(SearchMethod):
    """Population-based training.

    Round 0 creates ``population_size`` random trials, each ``Train(length_per_round)``
    then ``Validate``. When every member has reported (or exited), and rounds remain:
    members are ranked by signed metric (ties by request id; exited members last), the
    worst ``k = floor(truncate_fraction * population_size)`` are closed, each of the best
    ``k`` gets a ``Checkpoint`` and a child ``Create(checkpoint_of=parent)`` with explored
    hparams, and the other survivors train one more round. After ``num_rounds`` rounds
    every member is closed.

    Exited members are never given work. To keep the population constant, every member
    that exited and was not among the worst ``k`` is replaced by one more child, the
    parents cycling through the live survivors best first. If no member is alive the
    search ends.

    Args:
        population_size: Members per round (>= 1).
        num_rounds: Rounds (>= 1).
        length_per_round: Training per member per round.
        truncate_fraction: Fraction replaced each round, in [0, 0.5].
        resample_probability: Chance each hparam is resampled on explore, in [0, 1].
        perturb_factor: Multiplicative perturbation on explore, in [0, 1].
        hyperparameters: The space children explore in.

    Example:
        >>> from determined.config import Length
        >>> m = PBTSearch(8, 3, Length.from_dict({"batches": 50}), 0.25, 0.2, 0.2, {})
    """

    name = "pbt"

    def __init__(
        self,
        population_size: int,
        num_rounds: int,
        length_per_round: Length,
        truncate_fraction: float,
        resample_probability: float,
        perturb_factor: float,
        hyperparameters: Mapping[str, Any],
    ) -> None:
        self.population_size = check_int("population_size", population_size, min_value=1)
        self.num_rounds = check_int("num_rounds", num_rounds, min_value=1)
        self.length_per_round = check_length("length_per_round", length_per_round)
        self.truncate_fraction = check_float(
            "truncate_fraction", truncate_fraction, min_value=0.0, max_value=0.5
        )
        self.resample_probability = check_float(
            "resample_probability", resample_probability, min_value=0.0, max_value=1.0
        )
        self.perturb_factor = check_float(
            "perturb_factor", perturb_factor, min_value=0.0, max_value=1.0
        )
        self.hyperparameters = hyperparameters
        self.members: List[int] = []
        self.rounds_done = 0
        self._hparams: Dict[int, Dict[str, Any]] = {}
        self._targets: Dict[int, int] = {}
        self._metrics: Dict[int, float] = {}
        self._dead: Set[int] = set()
        self._closed: Set[int] = set()

    @classmethod
    def from_config(
        cls, cfg: Mapping[str, Any], hyperparameters: Mapping[str, Any]
    ) -> "PBTSearch":
        replace = require(cfg, "replace_function")
        exp = require(cfg, "explore_function")
        return cls(
            require(cfg, "population_size"),
            require(cfg, "num_rounds"),
            read_length(cfg, "length_per_round"),
            require(replace, "truncate_fraction", "searcher.replace_function"),
            require(exp, "resample_probability", "searcher.explore_function"),
            require(exp, "perturb_factor", "searcher.explore_function"),
            hyperparameters,
        )

    @property
    def unit(self) -> Unit:
        return self.length_per_round.unit

    def _start(self, create: Create) -> List[Operation]:
        rid = create.request_id
        self._hparams[rid] = copy.deepcopy(create.hparams)
        self._targets[rid] = self.length_per_round.units
        return [create, Train(rid, self.length_per_round), Validate(rid)]

    def initial_operations(self, ctx: SearchContext) -> List[Operation]:
        ops: List[Operation] = []
        for _ in range(self.population_size):
            create = ctx.create()
            self.members.append(create.request_id)
            ops += self._start(create)
        return ops

    def on_validation_completed(
        self, ctx: SearchContext, request_id: int, metric: float
    ) -> List[Operation]:
        self._metrics[request_id] = metric
        return self._maybe_advance(ctx)

    def on_trial_exited_early(
        self, ctx: SearchContext, request_id: int, reason: ExitedReason
    ) -> List[Operation]:
        if request_id in self._closed:
            return []
        self._dead.add(request_id)
        self._closed.add(request_id)
        if request_id in self.members:
            self._metrics.setdefault(request_id, WORST_METRIC)
        return self._maybe_advance(ctx)

    def _close(self, request_id: int, ops: List[Operation]) -> None:
        if request_id not in self._closed:
            self._closed.add(request_id)
            ops.append(Close(request_id))

    def _maybe_advance(self, ctx: SearchContext) -> List[Operation]:
        if not self.members or any(r not in self._metrics for r in self.members):
            return []
        ops: List[Operation] = []
        self.rounds_done += 1
        if self.rounds_done >= self.num_rounds:
            for rid in self.members:
                self._close(rid, ops)
            self.members, self._metrics = [], {}
            return ops

        def key(rid: int) -> Any:
            return (WORST_METRIC if rid in self._dead else self._metrics[rid], rid)

        ranked = sorted(self.members, key=key)
        k = int(self.truncate_fraction * self.population_size)
        survivors = [r for r in ranked[: len(ranked) - k] if r not in self._dead]
        for rid in ranked[len(ranked) - k :]:
            self._close(rid, ops)
        self.members, self._metrics = [], {}
        if not survivors:
            return ops

        checkpointed: Set[int] = set()
        children: List[int] = []
        for j in range(self.population_size - len(survivors)):
            parent = survivors[j % len(survivors)]
            if parent not in checkpointed:
                checkpointed.add(parent)
                ops.append(Checkpoint(parent))
            hparams = explore(
                self.hyperparameters,
                self._hparams[parent],
                ctx.rng,
                self.resample_probability,
                self.perturb_factor,
            )
            create = ctx.create(hparams, checkpoint_of=parent)
            children.append(create.request_id)
            ops += self._start(create)
        for rid in survivors:
            self._targets[rid] += self.length_per_round.units
            length = self.length_per_round.with_units(self._targets[rid])
            ops += [Train(rid, length), Validate(rid)]
        self.members = survivors + children
        return ops

    def progress(self, units_done: int) -> float:
        total = self.population_size * self.num_rounds * self.length_per_round.units
        return units_done / total

    def state_dict(self) -> Dict[str, Any]:
        return {
            "members": list(self.members),
            "rounds_done": self.rounds_done,
            "hparams": [[r, h] for r, h in self._hparams.items()],
            "targets": [[r, t] for r, t in self._targets.items()],
            "metrics": [[r, encode_metric(m)] for r, m in self._metrics.items()],
            "dead": sorted(self._dead),
            "closed": sorted(self._closed),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.members = [int(r) for r in state["members"]]
        self.rounds_done = int(state["rounds_done"])
        self._hparams = {int(r): copy.deepcopy(h) for r, h in state["hparams"]}
        self._targets = {int(r): int(t) for r, t in state["targets"]}
        self._metrics = {int(r): decode_metric(m) for r, m in state["metrics"]}
        self._dead = {int(r) for r in state["dead"]}
        self._closed = {int(r) for r in state["closed"]}
