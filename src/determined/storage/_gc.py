"""Which checkpoints survive garbage collection (SPEC 5.3). Pure logic."""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterable, List, Optional, Set

from determined._metric_order import MetricOrder

__all__ = ["CheckpointRecord", "checkpoints_to_keep"]


@dataclasses.dataclass(frozen=True)
class CheckpointRecord:
    """A completed checkpoint as GC sees it.

    Attributes:
        order: any number increasing with creation time (e.g. end time or an id).
        metric: the searcher metric validated at this checkpoint's batch, if any.
    """

    uuid: str
    trial_id: int
    order: float
    metric: Optional[float] = None


def checkpoints_to_keep(
    checkpoints: Iterable[CheckpointRecord],
    save_experiment_best: int,
    save_trial_best: int,
    save_trial_latest: int,
    smaller_is_better: bool = True,
    protected: Iterable[str] = (),
) -> Set[str]:
    """UUIDs to keep: the union of each trial's newest ``save_trial_latest``, each
    trial's best ``save_trial_best``, the experiment's best ``save_experiment_best``,
    and ``protected`` ones (e.g. used as warm starts).

    Example (SPEC 5.3; trial 1 has checkpoints 1-5, trial 2 has 6-10):
        >>> m = {3: .6, 4: .5, 5: .4, 7: .2, 8: .3}
        >>> cks = [CheckpointRecord(str(i), 1 if i <= 5 else 2, i, m.get(i)) for i in range(1, 11)]
        >>> sorted(checkpoints_to_keep(cks, 0, 1, 1), key=int)
        ['5', '7', '10']
        >>> sorted(checkpoints_to_keep(cks, 2, 0, 0), key=int)
        ['7', '8']
    """
    order = MetricOrder(smaller_is_better)
    by_trial: Dict[int, List[CheckpointRecord]] = {}
    all_ckpts = list(checkpoints)
    for c in all_ckpts:
        by_trial.setdefault(c.trial_id, []).append(c)
    keep: Set[str] = set(protected) & {c.uuid for c in all_ckpts}

    def best(cands: List[CheckpointRecord], n: int) -> List[str]:
        # A NaN metric counts as unvalidated.
        validated = [c for c in cands if order.comparable(c.metric)]
        validated.sort(key=lambda c: (order.key(c.metric), c.order))
        return [c.uuid for c in validated[:n]]

    for cands in by_trial.values():
        if save_trial_latest:
            keep.update(c.uuid for c in sorted(cands, key=lambda c: -c.order)[:save_trial_latest])
        keep.update(best(cands, save_trial_best))
    keep.update(best(all_ckpts, save_experiment_best))
    return keep
