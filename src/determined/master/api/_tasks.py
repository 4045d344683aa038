"""Tasks on the REST API: ``/api/v1/tasks`` (commands, notebooks, shells, TensorBoards).

- ``POST /tasks`` ``{kind, config, context?, experiment_ids?, trial_ids?}`` -> the task
  (201). ``config``: a mapping or YAML text (see ``master/tasks/_spec.py``);
  ``context``: base64 of a tar.gz (``det ... -c DIR``); TensorBoards name
  ``experiment_ids`` and/or ``trial_ids``.
- ``GET /tasks?kind=K&all=true`` -> ``{"tasks": [...]}`` (the caller's own, all with
  ``all``); ``GET /tasks/{id}``; ``GET /tasks/{id}/logs?after_id&limit&tail`` ->
  ``{"logs": [{id, timestamp, line}], "complete"}`` (``complete``: the task ended and
  its log has all its lines); ``POST /tasks/{id}/kill``.

A task as JSON: ``{id, kind, owner, state, description, config, slots, agent_id,
slot_ids, exit_code, end_reason, start_time, end_time, url, waiting}`` where ``url`` is
``/proxy/<id>/`` for notebooks, shells and TensorBoards (null for commands), and
``state`` is PENDING, RUNNING or TERMINATED; ``waiting`` says why a PENDING task waits
(``{reason, detail, impossible}``, see ``scheduler.waiting_reasons``; null otherwise).
A task needing more slots than a cluster that cannot grow has is refused (400). Only
the owner or an admin may kill a task or open it through the proxy.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Dict, List, Optional, Union

import fastapi
import pydantic
from fastapi import Depends, Query

from determined.common.api import MAX_CONTEXT_BYTES
from determined.common.api._context_archive import check_context_archive
from determined.config import check_config_text, check_config_tree, parse_yaml
from determined.errors import DeterminedError
from determined.master._core import Master
from determined.master._waits import never_fits
from determined.master.api._auth import Auth, check_owner
from determined.master.api._errors import fail
from determined.master.db import User
from determined.master.db._states import ACTIVE
from determined.master.db._tasks import TaskRecord
from determined.master.scheduler import Wait
from determined.master.tasks import (
    KINDS,
    PREFIX,
    SERVICE_KINDS,
    default_description,
    validate_task_config,
)
from determined.master.views import iso, log_lines_json

__all__ = ["task_json", "tasks_router", "tensorboard_runs"]


class CreateTask(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    kind: str = pydantic.Field(description="command, notebook, shell or tensorboard")
    config: Union[Dict[str, Any], str, None] = None
    context: Optional[str] = pydantic.Field(default=None, description="base64 of a tar.gz")
    experiment_ids: List[int] = pydantic.Field(default_factory=list)
    trial_ids: List[int] = pydantic.Field(default_factory=list)


def task_json(t: TaskRecord, wait: Optional[Wait] = None) -> Dict[str, Any]:
    """A task as JSON; ``waiting`` says why a PENDING one waits (``wait``), else null."""
    return {"waiting": wait.as_json() if wait is not None and t.state == "PENDING" else None,"id": t.id, "kind": t.kind, "owner": t.owner, "state": t.state,
            "description": t.description, "config": t.config,
            "slots": t.config.get("resources", {}).get("slots", 0),
            "agent_id": t.agent_id, "slot_ids": t.slot_ids, "exit_code": t.exit_code,
            "end_reason": t.end_reason, "start_time": iso(t.start_time),
            "end_time": iso(t.end_time),
            "url": f"/proxy/{t.id}/" if t.kind in SERVICE_KINDS else None}


def _run_name(trial: Any) -> str:
    def flat(prefix: str, value: Any) -> List[str]:
        if isinstance(value, dict):
            return [p for k, v in sorted(value.items()) for p in flat(f"{prefix}{k}.", v)]
        return [f"{prefix[:-1]}={value}"]

    hparams = ", ".join(flat("", trial.hparams or {}))
    return f"trial_{trial.id} ({hparams})" if hparams else f"trial_{trial.id}"


def tensorboard_runs(master: Master, experiment_ids: List[int],
                     trial_ids: List[int]) -> List[Dict[str, Any]]:
    """One run per chosen trial: its name and where its event files are synced."""
    trials = []
    for exp_id in experiment_ids:
        master.store.get_experiment(exp_id)  # 404
        trials.extend(master.store.list_trials(exp_id))
    for trial_id in trial_ids:
        trials.append(master.store.get_trial(trial_id))
    runs, seen = [], set()
    for trial in trials:
        if trial.id in seen:
            continue
        seen.add(trial.id)
        exp = master.store.get_experiment(trial.experiment_id)
        storage = exp.config.get("checkpoint_storage") or master.config.checkpoint_storage
        runs.append({"name": _run_name(trial), "trial_id": trial.id,
                     "experiment_id": trial.experiment_id, "storage": storage,
                     "sync_path": master.tensorboard_paths.sync_path(trial.experiment_id,
                                                                      trial.id)})
    return runs


def _check_tensorboard_data(master: Master, runs: List[Dict[str, Any]]) -> None:
    """Refuse a TensorBoard that would stay empty: no chosen trial has trained a batch and
    none of their experiments is ACTIVE (so none will without the user's doing)."""
    trials = [master.store.get_trial(run["trial_id"]) for run in runs]
    if any(t.total_batches > 0 or t.best_validation is not None for t in trials):
        return
    exp_ids = sorted({t.experiment_id for t in trials})
    states = {e: master.store.get_experiment(e).state for e in exp_ids}
    if ACTIVE in states.values():
        return
    named = ", ".join(f"experiment {e} ({states[e]})" for e in exp_ids)
    raise fail(400, f"No metrics to show: the trials of {named} have not trained a batch "
                    "yet. Start a TensorBoard once they have (or activate the experiment).")


def _check_fits(master: Master, config: Dict[str, Any]) -> None:
    """Refuse a task needing more slots than a cluster that cannot grow will ever have
    (with remote agents, one may join later: the task waits and says why)."""
    error = never_fits(master.rm, master.store, "resources.slots",
                       int(config.get("resources", {}).get("slots") or 0))
    if error is not None:
        raise fail(400, error)


def tasks_router(master: Master, auth: Auth) -> fastapi.APIRouter:
    """The ``/api/v1/tasks`` routes (include with ``Depends(auth.resolve)``)."""
    api = fastapi.APIRouter(prefix="/api/v1", tags=["tasks"])
    Caller = Depends(auth.caller)

    @api.post("/tasks", status_code=201)
    def create_task(body: CreateTask, user: User = Caller) -> Dict[str, Any]:
        if body.kind not in KINDS:
            raise fail(400, f"Expected kind to be one of {', '.join(KINDS)}. "
                            f"Received: kind={body.kind!r}")
        raw: Any = body.config
        limits = master.config.limits
        if isinstance(raw, str):
            check_config_text(raw, limits.max_config_bytes, limits.max_config_keys,
                              limits.max_config_depth)
            try:
                raw = parse_yaml(raw)
            except Exception as e:
                raise fail(400, f"The task config is not valid YAML: {e}") from None
        elif isinstance(raw, dict):
            check_config_tree(raw, limits.max_config_keys, limits.max_config_depth)
        config = validate_task_config(body.kind, raw)
        context = None
        if body.context:
            try:
                context = base64.b64decode(body.context, validate=True)
            except (binascii.Error, ValueError):
                raise fail(400, "context is not valid base64 (expected a tar.gz)") from None
            if len(context) > MAX_CONTEXT_BYTES:
                raise fail(413, f"The context directory is {len(context) / 1e6:.1f} MB "
                                f"packed; the limit is {MAX_CONTEXT_BYTES / 1e6:.0f} MB. "
                                "Exclude large files with a .detignore file.")
            try:
                check_context_archive(context, max_ratio=limits.max_context_ratio,
                                      ratio_floor=limits.min_context_ratio_bytes)
            except DeterminedError as e:
                raise fail(400, f"context: {e}") from None
        extra = None
        if body.kind == "tensorboard":
            if not body.experiment_ids and not body.trial_ids:
                raise fail(400, "A TensorBoard needs experiment_ids or trial_ids. "
                                "Received: neither")
            runs = tensorboard_runs(master, body.experiment_ids, body.trial_ids)
            if not runs:
                raise fail(400, "The experiments named have no trials yet")
            _check_tensorboard_data(master, runs)
            extra = {"runs": runs}
            config["experiment_ids"] = list(body.experiment_ids)
            config["trial_ids"] = list(body.trial_ids)
        if not config["description"]:
            config["description"] = default_description(
                body.kind, config, body.experiment_ids, body.trial_ids)
        _check_fits(master, config)
        record = master.tasks.create(body.kind, user.username, config, context, extra)
        return task_json(record)

    @api.get("/tasks")
    def list_tasks(kind: Optional[str] = Query(None), all: bool = Query(False),
                   user: User = Caller) -> Dict[str, Any]:
        if kind is not None and kind not in KINDS:
            raise fail(400, f"Expected kind to be one of {', '.join(KINDS)}. "
                            f"Received: kind={kind!r}")
        owner = None if all else user.username
        return {"tasks": [task_json(t, master.waiting.of(PREFIX + t.id))
                          for t in master.store.list_tasks(owner=owner, kind=kind)]}

    @api.get("/tasks/{id}")
    def get_task(id: str) -> Dict[str, Any]:
        return task_json(master.store.get_task(id), master.waiting.of(PREFIX + id))

    @api.get("/tasks/{id}/logs")
    def get_task_logs(id: str, after_id: int = Query(0, ge=0), limit: int = Query(1000, ge=0),
                      tail: Optional[int] = Query(None, ge=0)) -> Dict[str, Any]:
        # A task's output and the master's lines about it are stored before it turns
        # TERMINATED, so a log read after that state was seen is the rest of it.
        complete = master.store.get_task(id).state == "TERMINATED"
        return log_lines_json(master.store.get_task_logs(id, after_id=after_id, limit=limit,
                                                         tail=tail), complete)

    @api.post("/tasks/{id}/kill")
    def kill_task(id: str, user: User = Caller) -> Dict[str, Any]:
        task = master.store.get_task(id)
        check_owner(user, task.owner, f"task {id}", "kill")
        master.tasks.kill(id)
        return task_json(master.store.get_task(id))

    return api

