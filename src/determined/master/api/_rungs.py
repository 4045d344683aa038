"""The searcher's rungs as the web UI shows them (``GET /ui/experiments/{id}/rungs``).

The rungs are the searcher's own: each bracket with its rung lengths (in the searcher's
unit, or time-metric values), and per rung the trials the searcher judged there, with
the metric it recorded and whether it promoted them. They come from the running
experiment's core, or, for an ended one (or a master that has not restored it), from
the stored searcher snapshot.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional

from determined import engine
from determined.common.entrypoint import length_unit
from determined.master._core import Master
from determined.master.api import _ui_queries as q

__all__ = ["experiment_rungs"]

logger = logging.getLogger("determined.master")


def _table(master: Master, exp: Any) -> Optional[List[Any]]:
    """The experiment's rung table: the live core's, else the stored snapshot's."""
    live, table = master.experiments.rung_table(exp.id)
    if live:
        return table
    snap = master.store.get_searcher_snapshot(exp.id)
    if snap is None:
        return None
    try:
        return engine.ExperimentCore.restore(exp.config, snap.snapshot).rung_table()
    except Exception as e:  # noqa: BLE001 - an unreadable snapshot: no rungs to show
        logger.warning("experiment %s: cannot read the searcher snapshot for its rungs: %s",
                       exp.id, e)
        return None


def experiment_rungs(master: Master, id: int) -> Dict[str, Any]:
    """The rungs answer for experiment ``id`` (its NaN metrics left for the caller to
    clean): ``brackets`` (each ``bracket`` index and rung ``lengths``) and ``rungs``
    (flat, bracket by bracket: ``bracket``, ``rung``, ``length`` and the ``trials``
    judged there, best first, each ``trial_id``, ``metric``, ``promoted``); both empty
    for a searcher without rungs or an experiment without a snapshot."""
    exp = master.store.get_experiment(id)
    metric, smaller = q.searcher_metric(exp.config)
    searcher = exp.config.get("searcher", {})
    time_metric = searcher.get("time_metric")
    unit = None
    if not time_metric:
        lengths = [searcher.get(k) for k in ("max_length", "budget")]
        unit = next((length_unit(v) for v in lengths if isinstance(v, dict) and len(v) == 1),
                    None)
    out: Dict[str, Any] = {"searcher": searcher.get("name"), "metric": metric,
                           "smaller_is_better": smaller, "unit": unit,
                           "time_metric": time_metric or None, "brackets": [], "rungs": []}
    table = _table(master, exp)
    if not table:
        return out
    trial_ids = {int(t.request_id): t.id for t in master.store.list_trials(id)}
    for b in table:
        out["brackets"].append({"bracket": b.bracket, "lengths": list(b.lengths)})
        for i, (length, results) in enumerate(zip(b.lengths, b.results)):
            entries = [{"trial_id": trial_ids[r.request_id], "metric": r.metric,
                        "promoted": r.promoted}
                       for r in results if r.request_id in trial_ids]
            out["rungs"].append({"bracket": b.bracket, "rung": i, "length": length,
                                 "trials": entries})
    return out
