"""Routes the web UI needs (``/api/v1/ui/...``), documented in the OpenAPI schema.

- ``GET /ui/experiments``: the experiment list with filters (state, owner, label,
  archived, text), sort and pagination, plus the owners and labels to filter by.
- ``GET /ui/experiments/{id}``: summary, config (object and YAML), the config as
  submitted (``original_config``, object and YAML: the fork tab's start), trials (each
  with ``error_summary``, one line of its error: the whole is the trial's), metric
  names, what the trials' steps count (``step_unit``).
- ``GET /ui/experiments/{id}/metrics``: one metric's series for many trials, each
  downsampled on the server to at most ``max_points`` points that keep its shape.
- ``GET /ui/experiments/{id}/rungs``: for adaptive searchers, the searcher's brackets
  and rungs, the trials it judged at each and which it promoted (``_rungs.py``).
- ``GET /ui/experiments/{id}/hparam-importance``: how much of the searcher metric's
  spread each hyperparameter explains (``_importance.py`` says how).
- ``GET /ui/trials/{id}/metrics``: a trial's series, per workload or per batch.
- ``GET /ui/trials/{id}/workloads``: a trial's workloads, paginated, and the trial (with
  its whole ``error``).
- ``GET /ui/trials/{id}/logs``: log lines, with a case-insensitive text search of the
  lines as the UI shows them (``common.log_view``: a traceback's paths in the model directory).
- ``GET /ui/cluster``: agents, slots, the trial and experiment on each slot.
- ``GET /ui/events``: a live channel (server-sent events) for experiment, trial and
  task state changes, new metrics and new log lines (of a trial or a task), the
  model registry (the model list, one model's versions), and why things wait.

Writes (pause, kill, labels, fork...) go through the ordinary API routes, so the UI
can do nothing the API would refuse.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any, AsyncIterator, Dict, List, Literal, Optional, Tuple

import fastapi
import numpy as np
import yaml
from fastapi import Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from determined.config import global_batch_size, masked_config, step_unit
from determined.master import scheduler
from determined.master._core import Master
from determined.master.api import _ui_queries as q
from determined.master.api._agents import agents_listing
from determined.master.api._downsample import minmax_buckets
from determined.master.api._experiments import waiting_json
from determined.master.api._importance import hparam_importance
from determined.master.api._registry import model_json, model_versions_json
from determined.master.api._rungs import experiment_rungs as rungs_json
from determined.master.db import NotFoundError
from determined.master.tasks import PREFIX as TASK_PREFIX
from determined.master.views import checkpoint_json

__all__ = ["ui_router"]

SORT_KEYS = ("id", "description", "owner", "state", "progress", "start_time", "end_time",
             "duration", "best_metric", "num_trials")
EVENT_POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0


def clean(value: Any) -> Any:
    """``value`` with NaN and infinite floats as None (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


def _sort_key(key: str) -> Any:
    def get(row: Dict[str, Any]) -> Tuple[int, Any]:
        v = row.get(key)
        if v is None:
            return (1, 0)
        return (0, v.lower() if isinstance(v, str) else v)
    return get


def _matches(row: Dict[str, Any], text: str) -> bool:
    text = text.lower()
    return (text in str(row["id"]) or text in row["description"].lower()
            or text in row["owner"].lower() or any(text in lab.lower() for lab in row["labels"]))


def _series(rows: List[Any], metric: str, max_points: int,
            start: Optional[float]) -> Dict[str, Any]:
    batches = [r.total_batches for r in rows]
    values = [_number((r.metrics or {}).get(metric)) for r in rows]
    times = [r.end_time.timestamp() - (start or 0.0) for r in rows]
    index = list(range(len(rows)))
    if len(rows) > max_points:
        kept, _ = minmax_buckets(index, values, max_points)
        index = [int(i) for i in kept]
    return {"batches": [batches[i] for i in index], "values": clean([values[i] for i in index]),
            "time": [round(times[i], 3) for i in index], "count": len(rows)}


def _per_batch_series(rows: List[Any], metric: str, max_points: int,
                      start: Optional[float]) -> Dict[str, Any]:
    values: List[float] = []
    firsts: List[int] = []
    counts: List[int] = []
    ends: List[float] = []
    previous = 0
    for r in rows:
        per = q.per_batch_values(r.batch_json, metric)
        values.extend(per)
        firsts.append(r.total_batches - len(per) if per else previous)
        counts.append(len(per))
        ends.append(r.end_time.timestamp() - (start or 0.0))
        previous = r.total_batches
    n = len(values)
    counts_a = np.asarray(counts, dtype=np.int64)
    offsets = np.repeat(np.cumsum(counts_a) - counts_a, counts_a)
    batches = np.repeat(np.asarray(firsts, dtype=np.int64), counts_a) + (np.arange(n) - offsets) + 1
    times = np.repeat(np.asarray(ends, dtype=float), counts_a)
    ys = np.asarray(values, dtype=float)
    if n > max_points:
        kept, _ = minmax_buckets(np.arange(n), ys, max_points)
        idx = kept.astype(np.int64)
        batches, ys, times = batches[idx], ys[idx], times[idx]
    return {"batches": batches.tolist(), "values": clean(ys.tolist()),
            "time": np.round(times, 3).tolist(), "count": n}


def _metric_names(rows: List[Any]) -> List[str]:
    names: Dict[str, None] = {}
    for r in rows:
        for k, v in (r.metrics or {}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                names.setdefault(k, None)
    return sorted(names)


def _rows_sample(master: Master, trial_ids: List[int], kind: str) -> List[Any]:
    rows = q.metric_rows(master.store, trial_ids, kind) if trial_ids else []
    return rows[:200] + rows[-200:]


def _event(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(clean(data), default=str)}\n\n"


def ui_router(master: Master) -> fastapi.APIRouter:
    """The ``/api/v1/ui`` routes of ``master`` (include it with the auth dependency)."""
    api = fastapi.APIRouter(prefix="/api/v1/ui", tags=["web ui"])
    store = master.store

    def experiment(id: int) -> Dict[str, Any]:
        store.get_experiment(id)  # 404 first
        return q.experiment_rows(store, [id])[0]

    @api.get("/experiments")
    def list_experiments(
        state: Optional[str] = Query(None, description="comma-separated states"),
        owner: Optional[str] = Query(None, description="only this user's experiments"),
        label: Optional[str] = Query(None, description="only experiments with this label"),
        archived: Literal["false", "true", "any"] = Query(
            "false", description="false: hide archived; true: only archived; any: both"),
        text: Optional[str] = Query(None, description="matches id, description, owner, labels"),
        sort: Literal[SORT_KEYS] = Query("id"),  # type: ignore[valid-type]
        order: Literal["asc", "desc"] = Query("desc"),
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=10000),
    ) -> Dict[str, Any]:
        """Experiments, filtered, sorted and paginated; ``total`` counts all matches."""
        rows = q.experiment_rows(store)
        owners = sorted({r["owner"] for r in rows})
        labels = sorted({lab for r in rows for lab in r["labels"]})
        if archived != "any":
            rows = [r for r in rows if r["archived"] == (archived == "true")]
        if state:
            wanted = {s.strip().upper() for s in state.split(",") if s.strip()}
            rows = [r for r in rows if r["state"] in wanted]
        if owner:
            rows = [r for r in rows if r["owner"] == owner]
        if label:
            rows = [r for r in rows if label in r["labels"]]
        if text:
            rows = [r for r in rows if _matches(r, text)]
        present = [r for r in rows if r.get(sort) is not None]
        missing = [r for r in rows if r.get(sort) is None]
        present.sort(key=_sort_key(sort), reverse=order == "desc")
        rows = present + missing
        return clean({"experiments": rows[offset:offset + limit], "total": len(rows),
                      "owners": owners, "labels": labels})

    @api.get("/experiments/{id}")
    def get_experiment(id: int) -> Dict[str, Any]:
        """Summary, config (``config`` and ``config_yaml``), the config as submitted
        (``original_config`` and ``original_config_yaml``; the expanded config for
        experiments made before it was kept), trials, metric names and what the trials'
        steps count (``step_unit``: ``batch``, or a script's ``epoch``...)."""
        out = experiment(id)
        config = masked_config(store.get_experiment(id).config)
        original = store.get_experiment_original_config(id)
        original = config if original is None else masked_config(original)
        trials = q.trial_rows(store, id)
        ids = [t["id"] for t in trials]
        for t in trials:
            t["records_per_batch"] = global_batch_size(t["hparams"])
        out.update(config=config, config_yaml=yaml.safe_dump(config, sort_keys=False),
                   original_config=original,
                   original_config_yaml=yaml.safe_dump(original, sort_keys=False),
                   trials=trials, step_unit=step_unit(config),
                   metric_names={"training": _metric_names(_rows_sample(master, ids, "training")),
                                 "validation": _metric_names(
                                     _rows_sample(master, ids, "validation"))})
        out["last_metric_id"], out["last_log_id"] = q.max_ids(store, ids)
        return clean(out)

    @api.get("/experiments/{id}/metrics")
    def experiment_metrics(
        id: int,
        metric: str = Query(..., description="e.g. loss or validation_loss"),
        kind: Literal["training", "validation"] = Query("validation"),
        trial_ids: Optional[str] = Query(None, description="comma-separated; default all"),
        max_points: int = Query(2000, ge=4, le=100000,
                                description="at most this many points per trial"),
    ) -> Dict[str, Any]:
        """One metric of many trials; each series keeps at most ``max_points`` points
        (first, lowest, highest and last of equal buckets). ``time`` is seconds since the
        trial started; ``last_id`` is the newest metrics row read (for ``/ui/events``)."""
        store.get_experiment(id)
        trials = {t.id: t for t in store.list_trials(id)}
        if trial_ids:
            try:
                wanted = [int(x) for x in trial_ids.split(",") if x.strip()]
            except ValueError:
                raise fastapi.HTTPException(400, "Expected trial_ids to be comma-separated "
                                                 f"integers. Received: trial_ids={trial_ids!r}")
            ids = [t for t in wanted if t in trials]
        else:
            ids = list(trials)
        rows = q.metric_rows(store, ids, kind)
        by_trial: Dict[int, List[Any]] = {t: [] for t in ids}
        last_id = 0
        for r in rows:
            by_trial[r.trial_id].append(r)
            last_id = max(last_id, r.id)
        series = []
        for tid in ids:
            s = _series(by_trial[tid], metric, max_points, trials[tid].start_time.timestamp())
            s.update(trial_id=tid, records_per_batch=global_batch_size(trials[tid].hparams))
            series.append(s)
        return {"metric": metric, "kind": kind, "series": series, "last_id": last_id}

    @api.get("/experiments/{id}/hparam-importance")
    def experiment_hparam_importance(id: int) -> Dict[str, Any]:
        """Each varying hyperparameter's importance for the searcher metric (each trial's
        best validation): omega squared of a one-way analysis of variance over trials
        grouped by the hyperparameter's value (quantile bins for many numbers); ``share``
        sums to 1. Needs at least 3 trials with a validation."""
        out = experiment(id)
        result = hparam_importance(q.trial_rows(store, id))
        result["metric"] = out["metric"]
        return clean(result)

    @api.get("/experiments/{id}/rungs")
    def experiment_rungs(id: int) -> Dict[str, Any]:
        """The searcher's own rungs (adaptive searchers): its brackets with their rung
        lengths, and per rung the trials it judged there, best first, with the metric
        it recorded and whether it promoted them (``_rungs`` says more); empty lists
        for a searcher without rungs."""
        return clean(rungs_json(master, id))

    @api.get("/trials/{id}/metrics")
    def trial_metrics(
        id: int, metric: str = Query(...),
        kind: Literal["training", "validation"] = Query("training"),
        per_batch: bool = Query(False, description="per-batch values of training workloads"),
        max_points: int = Query(2000, ge=4, le=100000),
    ) -> Dict[str, Any]:
        """One metric of one trial, per workload or (training) per batch, downsampled."""
        tr = store.get_trial(id)
        rows = q.metric_rows(store, [id], kind, with_batches=per_batch)
        start = tr.start_time.timestamp()
        s = (_per_batch_series(rows, metric, max_points, start) if per_batch and kind == "training"
             else _series(rows, metric, max_points, start))
        s.update(trial_id=id, metric=metric, kind=kind,
                 last_id=max((r.id for r in rows), default=0))
        return s

    @api.get("/trials/{id}/workloads")
    def trial_workloads(id: int, offset: int = Query(0, ge=0),
                        limit: int = Query(100, ge=1, le=10000),
                        order: Literal["asc", "desc"] = Query("asc")) -> Dict[str, Any]:
        """The trial's workloads (training and validation), by batches; metric names;
        the newest metrics row and log line ids (for ``/ui/events``)."""
        trial = q.trial_row(store, id)  # 404 for an unknown trial
        # One query for both kinds: with one per kind, a training row stored between
        # them could be missing while a later validation row set last_metric_id, and
        # the page would drop that row's live event as already counted.
        rows = [r for r in q.metric_rows(store, [id], None)
                if r.kind in ("training", "validation")]
        rows.sort(key=lambda r: (r.total_batches, r.kind), reverse=order == "desc")
        out = [{"id": r.id, "kind": r.kind, "total_batches": r.total_batches,
                "end_time": r.end_time.isoformat(), "metrics": r.metrics}
               for r in rows[offset:offset + limit]]
        training = [r for r in rows if r.kind == "training"]
        validation = [r for r in rows if r.kind == "validation"]
        return clean({"workloads": out, "total": len(rows),
                      "trial": trial,
                      "metric_names": {"training": _metric_names(training[:200] + training[-200:]),
                                       "validation": _metric_names(validation)},
                      "last_metric_id": max((r.id for r in rows), default=0),
                      "last_log_id": q.max_ids(store, [id])[1]})

    @api.get("/trials/{id}/logs")
    def trial_logs(id: int, search: str = Query("", description="case-insensitive text"),
                   after_id: int = Query(0, ge=0), limit: int = Query(1000, ge=1, le=100000)
                   ) -> Dict[str, Any]:
        """Log lines with ``id > after_id`` containing ``search``, oldest first."""
        store.get_trial(id)
        lines = q.log_lines(store, id, search, after_id, limit)
        return {"logs": [{"id": r.id, "timestamp": r.timestamp.isoformat(), "line": r.line}
                         for r in lines]}

    @api.get("/cluster")
    def cluster() -> Dict[str, Any]:
        """Agents and slots with the trial and experiment on each busy slot, or the task
        (command, notebook, shell, TensorBoard: ``task_id`` as the task list has it, and
        ``task_kind`` while it lives)."""
        listing = agents_listing(master)
        total = used = 0
        for agent in listing["agents"]:
            total += agent["slots"]
            used += agent["used_slots"]
            for slot in agent["slot_tasks"]:
                task = slot.get("task") or ""
                slot["trial_id"] = slot["experiment_id"] = None
                slot["task_id"] = slot["task_kind"] = None
                if task.startswith(TASK_PREFIX):  # the scheduler's id of a task: task-<id>
                    slot["task_id"] = task[len(TASK_PREFIX):]
                    slot["task_kind"] = master.tasks.kind_of(slot["task_id"])
                trial_id = scheduler.trial_of_task(task)
                if trial_id is not None:
                    try:
                        tr = store.get_trial(trial_id)
                        slot["trial_id"], slot["experiment_id"] = tr.id, tr.experiment_id
                    except Exception:  # the trial is gone: show the task id only
                        pass
        return {"agents": listing["agents"], "slots": total, "used_slots": used,
                "utilization": used / total if total else 0.0}

    @api.get("/events", response_class=StreamingResponse,
             responses={200: {"content": {"text/event-stream": {}}}})
    async def events(
        request: Request,
        experiments: bool = Query(False, description="changes of the experiment list"),
        experiment_id: Optional[int] = Query(None, description="its trials and metrics"),
        trial_id: Optional[int] = Query(None, description="its state, metrics and logs"),
        metrics_after: Optional[int] = Query(
            None, ge=0, description="send metrics rows after this id; omitted: those stored "
                                    "after the stream opens"),
        logs_after: Optional[int] = Query(
            None, ge=0, description="send log lines after this id; omitted: those stored "
                                    "after the stream opens"),
        tasks: bool = Query(False, description="changes of the task list"),
        task_id: Optional[str] = Query(None, description="its new log lines"),
        task_logs_after: Optional[int] = Query(
            None, ge=0, description="send its lines after this id; omitted: those stored "
                                    "after the stream opens"),
        models: bool = Query(False, description="changes of the model registry's list"),
        model: Optional[str] = Query(None, description="this registry model's changes"),
        waiting: bool = Query(False, description="why the followed experiments, trials "
                                                 "and tasks wait, when that changes"),
    ) -> StreamingResponse:
        """Server-sent events, checked every 0.5 s: ``experiments`` (changed list rows),
        ``trials`` (changed trials of ``experiment_id``), ``metrics`` (new metrics rows
        of its or ``trial_id``'s trials), ``logs`` (new lines of ``trial_id``), ``tasks``
        (changed and removed rows of the task list, as ``GET /tasks``),
        ``task_logs`` (new lines of ``task_id``), ``models`` (changed models, as
        ``GET /models`` shows them, and the names of removed ones) and ``model``
        (``model``'s versions, as ``GET /models/{name}/versions``, when it changed;
        ``{"model": null, "versions": []}`` once it is deleted) and, with ``waiting``,
        ``waiting`` (as ``GET /waiting``, narrowed to what the stream follows:
        ``experiment_id``, else every experiment with ``experiments``; its trials or
        ``trial_id``; tasks with ``tasks``), sent on connecting and then only when a reason
        appears, changes or clears.

        The stream's first bytes (the comment ``: connected``) come once the state that
        later events change was read: a page that loads on receiving them misses
        nothing. A tail whose ``*_after`` id is omitted starts at the newest row at that
        moment, so a page can open the stream before it loads anything."""
        if experiment_id is not None:
            store.get_experiment(experiment_id)
        if trial_id is not None:
            store.get_trial(trial_id)
        if task_id is not None:
            store.get_task(task_id)
        if model is not None:
            store.get_model(model)
        feed = _Feed(master, experiments, experiment_id, trial_id, metrics_after, logs_after)
        feed.follow_tasks(tasks, task_id, task_logs_after)
        feed.follow_models(models, model)
        feed.follow_waiting(waiting)

        async def stream() -> AsyncIterator[str]:
            # The first poll reads the state later changes are measured against.
            first = await run_in_threadpool(feed.poll)
            yield ": connected\n\n" + "".join(first)
            quiet_since = time.monotonic()
            while True:
                await asyncio.sleep(EVENT_POLL_SECONDS)
                if await request.is_disconnected():
                    break
                chunks = await run_in_threadpool(feed.poll)
                if chunks:
                    quiet_since = time.monotonic()
                    yield "".join(chunks)
                elif time.monotonic() - quiet_since > KEEPALIVE_SECONDS:
                    quiet_since = time.monotonic()
                    yield ": keepalive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return api


class _Feed:
    """What changed since the last poll, as server-sent event chunks."""

    def __init__(self, master: Master, experiments: bool, experiment_id: Optional[int],
                 trial_id: Optional[int], metrics_after: Optional[int],
                 logs_after: Optional[int]):
        """A tail whose ``*_after`` id is None starts at the newest row of the first poll."""
        self.master = master
        self.store = master.store
        self.experiments = experiments
        self.experiment_id = experiment_id
        self.trial_id = trial_id
        # -1 until the first poll: the tail starts at the newest row then.
        self.metrics_after = -1 if metrics_after is None else metrics_after
        self.logs_after = -1 if logs_after is None else logs_after
        self.seen_experiments: Optional[Dict[int, Any]] = None
        self.seen_trials: Dict[int, Any] = {}
        self.polled = False  # the first poll reads the state later changes are measured against
        self.tasks = False
        self.task_id: Optional[str] = None
        self.task_logs_after = 0
        self.seen_tasks: Optional[Dict[str, str]] = None
        self.models = False
        self.model: Optional[str] = None
        self.seen_models: Optional[Dict[str, Any]] = None
        self.waiting = False
        self.seen_waiting: Optional[Dict[str, Dict[str, Any]]] = None

    def follow_tasks(self, tasks: bool, task_id: Optional[str],
                     logs_after: Optional[int]) -> None:
        """Also send changes of the task list and new lines of ``task_id``."""
        self.tasks, self.task_id = tasks, task_id
        self.task_logs_after = -1 if logs_after is None else logs_after

    def _poll_tasks(self) -> List[str]:
        from determined.master.api._tasks import task_json

        out: List[str] = []
        if self.tasks:
            rows = {t.id: task_json(t) for t in self.store.list_tasks()}
            view = {i: json.dumps(r, default=str, sort_keys=True) for i, r in rows.items()}
            if self.seen_tasks is not None:
                changed = [rows[i] for i, v in view.items() if self.seen_tasks.get(i) != v]
                removed = [i for i in self.seen_tasks if i not in view]
                if changed or removed:
                    out.append(_event("tasks", {"changed": changed, "removed": removed}))
            self.seen_tasks = view
        if self.task_id is not None:
            lines = self.store.get_task_logs(self.task_id, after_id=self.task_logs_after,
                                             limit=5000)
            if lines:
                self.task_logs_after = lines[-1].id
                out.append(_event("task_logs", [{"id": r.id, "timestamp": r.timestamp.isoformat(),
                                                 "line": r.line} for r in lines]))
        return out

    def follow_models(self, models: bool, model: Optional[str]) -> None:
        """Also send changes of the model list and of model ``model``."""
        self.models, self.model = models, model

    def _poll_models(self) -> List[str]:
        if not self.models and self.model is None:
            return []
        view = q.model_fingerprints(self.store)
        seen, self.seen_models = self.seen_models, view
        if seen is None:
            return []
        changed = {n for n, v in view.items() if seen.get(n) != v}
        removed = [n for n in seen if n not in view]
        out: List[str] = []
        if self.models and (changed or removed):
            # One listing, not a query per model; a model deleted since the fingerprints
            # were read is missing from it and reported as removed at the next poll.
            rows = [model_json(r) for r in self.store.list_models() if r.name in changed]
            out.append(_event("models", {"changed": rows, "removed": removed}))
        name = self.model
        if name is not None and (name in changed or name in removed):
            try:
                versions = model_versions_json(self.store, name, checkpoint_json)
            except NotFoundError:
                versions = {"model": None, "versions": []}
            out.append(_event("model", versions))
        return out

    def follow_waiting(self, waiting: bool) -> None:
        """Also send why what the stream follows waits."""
        self.waiting = waiting

    def _poll_waiting(self, trial_ids: List[int]) -> List[str]:
        """Why what the stream follows waits: on the first poll, then on each change."""
        if not self.waiting:
            return []
        waits = waiting_json(self.master)
        trials = {str(t) for t in trial_ids}
        one = None if self.experiment_id is None else str(self.experiment_id)
        view = {"tasks": waits["tasks"] if self.tasks else {},
                "trials": {k: w for k, w in waits["trials"].items() if k in trials},
                "experiments": {k: w for k, w in waits["experiments"].items()
                                if k == one or (one is None and self.experiments)}}
        if view == self.seen_waiting:
            return []
        self.seen_waiting = view
        return [_event("waiting", view)]

    def _start_tails(self) -> None:
        """Tails without a start id start at the newest rows now (the first poll)."""
        if min(self.metrics_after, self.logs_after, self.task_logs_after) < 0:
            metrics, logs, task_logs = q.newest_ids(self.store, self.trial_id, self.task_id)
            self.metrics_after = metrics if self.metrics_after < 0 else self.metrics_after
            self.logs_after = logs if self.logs_after < 0 else self.logs_after
            self.task_logs_after = task_logs if self.task_logs_after < 0 else self.task_logs_after

    def poll(self) -> List[str]:
        self._start_tails()
        out: List[str] = self._poll_tasks() + self._poll_models()
        if self.experiments:
            view = q.experiment_fingerprints(self.store)
            if self.seen_experiments is not None:
                ids = [i for i, v in view.items() if self.seen_experiments.get(i) != v]
                removed = [i for i in self.seen_experiments if i not in view]
                if ids or removed:
                    changed = q.experiment_rows(self.store, ids) if ids else []
                    out.append(_event("experiments", {"changed": changed, "removed": removed}))
            self.seen_experiments = view
        trial_ids: List[int] = []
        if self.experiment_id is not None:
            trials = q.trial_rows(self.store, self.experiment_id)
            trial_ids = [t["id"] for t in trials]
            changed = []
            for t in trials:
                v = json.dumps(t, default=str)
                if self.seen_trials.get(t["id"]) != v:
                    self.seen_trials[t["id"]] = v
                    t["records_per_batch"] = global_batch_size(t["hparams"])
                    changed.append(t)
            if changed and self.polled:
                out.append(_event("trials", changed))
        if self.trial_id is not None:
            if self.experiment_id is None:
                tr = self.store.get_trial(self.trial_id)
                v = (tr.state, tr.total_batches, tr.restarts, tr.best_validation, tr.error)
                if self.seen_trials.get(tr.id) != v:
                    self.seen_trials[tr.id] = v
                    if self.polled:
                        out.append(_event("trials", [q.trial_row(self.store, tr.id)]))
            if self.trial_id not in trial_ids:
                trial_ids.append(self.trial_id)
            lines = q.new_log_lines(self.store, self.trial_id, self.logs_after)
            if lines:
                self.logs_after = lines[-1].id
                out.append(_event("logs", [{"id": r.id, "timestamp": r.timestamp.isoformat(),
                                            "line": r.line} for r in lines]))
        out += self._poll_waiting(trial_ids)
        if trial_ids:
            rows = q.new_metric_rows(self.store, trial_ids, self.metrics_after)
            if rows:
                self.metrics_after = rows[-1].id
                out.append(_event("metrics", [
                    {"id": r.id, "trial_id": r.trial_id, "kind": r.kind,
                     "total_batches": r.total_batches, "end_time": r.end_time.timestamp(),
                     "metrics": r.metrics} for r in rows]))
        self.polled = True
        return out
