"""What a finished local run returns: built once at its end from the experiment core's
trials and the records in the local directory (no copy is kept while it runs)."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Mapping, Optional

from determined import engine
from determined.master.db import Store

__all__ = ["ExperimentResult", "experiment_result"]


@dataclasses.dataclass
class ExperimentResult:
    """A local experiment at the end of its run.

    ``trials`` holds one summary per trial, by trial id (what ``det experiment create
    --local --json`` prints): ``trial_id``, ``request_id``, ``hparams``, ``seed``,
    ``state`` (as recorded), ``batches``, ``best_metric``, ``latest_validation``
    (metrics by name), ``latest_checkpoint``, ``restarts``, ``error``, ``warm_start``,
    ``start_time`` (its first process started) and ``end_time`` (it ended), in Unix
    seconds or None.
    ``best_trial`` is one of them (the best validation metric), or None.
    """

    experiment_id: int
    state: str
    trials: List[Dict[str, Any]]
    best_trial: Optional[Dict[str, Any]]
    best_checkpoint: Optional[str]
    best_checkpoint_path: Optional[str]
    directory: str
    reason: str = ""

    def to_dict(self) -> Dict[str, Any]:
        """The JSON form (``--json``)."""
        return {"experiment_id": self.experiment_id, "state": self.state,
                "best_trial": self.best_trial, "best_checkpoint": self.best_checkpoint,
                "best_checkpoint_path": self.best_checkpoint_path,
                "directory": self.directory, "trials": self.trials}


def experiment_result(core: engine.ExperimentCore, store: Store, experiment_id: int,
                      storage: Any, directory: str, started: Mapping[int, float],
                      errors: Mapping[int, str], state: Optional[str] = None
                      ) -> ExperimentResult:
    """The result of the run ``core`` drove, whose records are in ``store``.

    Args:
        storage: the checkpoint storage (it names the best checkpoint's location).
        started: request id -> when the trial's first process started.
        errors: request id -> the error text the trial's process last reported.
        state: the experiment's state if the driver ended the run itself (else the
            core's).
    """
    rows: Dict[int, Dict[str, Any]] = {}
    for rec in store.list_trials(experiment_id):
        r = int(rec.request_id)
        t = core.trials.get(r)
        if t is None:
            continue  # created after the last snapshot of an interrupted run
        validations = store.list_metrics(rec.id, kind="validation")
        rows[r] = {
            "trial_id": rec.id, "request_id": r, "hparams": t.hparams, "seed": t.seed,
            "state": rec.state, "batches": t.batches, "best_metric": t.best_metric,
            "latest_validation": validations[-1].metrics if validations else None,
            "latest_checkpoint": t.latest_checkpoint, "restarts": t.restarts,
            "error": errors.get(r) or t.error, "warm_start": t.warm_start,
            "start_time": started.get(r),
            "end_time": rec.end_time.timestamp() if rec.end_time else None,
        }
    best = core.best_trial()
    best_uuid = core.best_checkpoint()
    return ExperimentResult(
        experiment_id=experiment_id,
        state=state or core.state.value,
        trials=sorted(rows.values(), key=lambda row: row["trial_id"]),
        best_trial=rows.get(best) if best is not None else None,
        best_checkpoint=best_uuid,
        best_checkpoint_path=storage.describe(best_uuid) if best_uuid else None,
        directory=directory,
        reason=core.reason,
    )
