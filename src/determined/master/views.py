"""The JSON the read routes of the REST API answer with, built from a
:class:`~determined.master.db.Store`.

One definition for both readers of a store: the master's API (``api/_experiments.py``,
``api/_operations.py``) and ``--local`` commands, which read the SQLite file of the
local directory through :class:`determined.local.LocalClient`. No web framework here.
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional

from determined.config import masked_config
from determined.master.db import Store
from determined.master.db._experiments import GIT_FIELDS

__all__ = ["checkpoint_json", "experiment_json", "experiments_json", "iso", "log_lines_json",
           "logs_json", "model_def_json", "trial_json", "trial_with_metrics_json",
           "workloads_json"]


def iso(t: Any) -> Optional[str]:
    return t.isoformat() if t is not None else None


def trial_json(t: Any) -> Dict[str, Any]:
    return {
        "id": t.id, "experiment_id": t.experiment_id, "request_id": t.request_id,
        "state": t.state, "hparams": t.hparams, "seed": t.seed, "restarts": t.restarts,
        "total_batches": t.total_batches, "latest_checkpoint": t.latest_checkpoint,
        "best_validation": t.best_validation, "warm_start_checkpoint": t.warm_start_checkpoint,
        "warm_start_checkpoint_id": t.warm_start_checkpoint_id,
        "start_time": iso(t.start_time), "end_time": iso(t.end_time),
        "error": t.error,
    }


def checkpoint_json(c: Any) -> Dict[str, Any]:
    return {
        "id": c.id, "uuid": c.uuid, "trial_id": c.trial_id, "experiment_id": c.experiment_id,
        "total_batches": c.total_batches, "state": c.state, "resources": c.resources,
        "metadata": c.metadata, "framework": c.framework, "format": c.format,
        "determined_version": c.determined_version, "start_time": iso(c.start_time),
        "end_time": iso(c.end_time), "validation": c.validation,
    }


def experiment_json(store: Store, id: int, with_config: bool = True) -> Dict[str, Any]:
    """``GET /experiments/{id}`` (with its config and trials) or a row of the list."""
    e = store.get_experiment(id)
    trials = store.list_trials(id)
    out = {
        "id": e.id, "state": e.state, "description": e.description, "labels": e.labels,
        "archived": e.archived, "progress": e.progress or 0.0, "owner": e.owner,
        "weight": e.weight, "priority": e.priority, "max_slots": e.max_slots,
        "start_time": iso(e.start_time), "end_time": iso(e.end_time),
        "searcher": e.config.get("searcher", {}).get("name"),
        "num_trials": len(trials),
        **(e.git or dict.fromkeys(GIT_FIELDS)),
    }
    if with_config:
        out["config"] = masked_config(e.config)  # credentials stay in the stored config
        out["trials"] = [trial_json(t) for t in trials]
    return out


def experiments_json(store: Store, archived: bool = False,
                     owner: Optional[str] = None) -> List[Dict[str, Any]]:
    """``GET /experiments``: the rows, archived ones too if ``archived``."""
    return [experiment_json(store, e.id, with_config=False)
            for e in store.list_experiments(include_archived=archived, owner=owner)]


def trial_with_metrics_json(store: Store, id: int) -> Dict[str, Any]:
    """``GET /trials/{id}``: the trial and every workload's averaged metrics."""
    out = trial_json(store.get_trial(id))
    out["metrics"] = [
        {"kind": m.kind, "total_batches": m.total_batches, "metrics": m.metrics,
         "end_time": iso(m.end_time)}
        for m in store.list_metrics(id)
    ]
    return out


def workloads_json(store: Store, id: int) -> Dict[str, Any]:
    """``GET /trials/{id}/workloads``: with per-batch metrics and ``num_inputs``."""
    store.get_trial(id)
    return {"workloads": [
        {"kind": w.kind, "total_batches": w.total_batches, "end_time": iso(w.end_time),
         "metrics": w.metrics, "batch_metrics": w.batch_metrics, "num_inputs": w.num_inputs}
        for w in store.list_workloads(id)
    ]}


def logs_json(store: Store, id: int, after_id: int = 0, limit: int = 1000,
              tail: Optional[int] = None, complete: Optional[bool] = None) -> Dict[str, Any]:
    """``GET /trials/{id}/logs`` (``complete``: see :func:`log_lines_json`)."""
    store.get_trial(id)
    return log_lines_json(store.get_logs(id, after_id=after_id, limit=limit, tail=tail),
                          complete)


def log_lines_json(lines: List[Any], complete: Optional[bool] = None) -> Dict[str, Any]:
    """``{"logs": [{id, timestamp, line}], "complete": bool}``: a page of a trial's or a
    task's log. ``complete`` (left out where None: a reader that cannot tell) says the
    log had every line it will ever have before this page was read: it ended, and a
    follower that reads on to a short page has them all."""
    out: Dict[str, Any] = {"logs": [{"id": line.id, "timestamp": iso(line.timestamp),
                                     "line": line.line} for line in lines]}
    if complete is not None:
        out["complete"] = complete
    return out


def model_def_json(store: Store, id: int) -> Dict[str, Any]:
    """``GET /experiments/{id}/model_def``: ``{"b64_tgz": base64 of the tar.gz}``."""
    store.get_experiment(id)
    return {"b64_tgz": base64.b64encode(store.get_model_def(id)).decode("ascii")}
