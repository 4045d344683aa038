"""Experiments and trials on the REST API (``/api/v1``).

- ``POST /experiments`` ``{config, model_def (base64 tar.gz), activate, git?}`` ->
  ``{id, warnings}`` (201). With an ``Idempotency-Key`` header, a key its user sent
  before answers that experiment (same body: a retry whose answer was lost) or 422
  (another body); a key whose experiment was deleted less than a day ago, 410 naming it
  (``deleted_create_keys``: a late retry never creates it again);
  ``GET /experiments?archived&user``; ``GET /experiments/{id}``;
  ``PATCH /experiments/{id}`` (description, labels, weight, priority, max_slots);
  ``POST /experiments/{id}/{pause|activate|cancel|kill|archive|unarchive}``;
  ``GET /experiments/{id}/trials|checkpoints|model_def``.
- ``GET /waiting``: why each waiting task, trial and experiment waits (the web UI's
  notes); experiments, trials and tasks as JSON carry the same as ``waiting``.
- ``GET /trials/{id}`` (with metrics; ``error``: why its process last failed, or
  null), ``POST /trials/{id}/kill``,
  ``GET /trials/{id}/logs?after_id&limit&tail`` -> ``{"logs": [{id, timestamp, line}],
  "complete"}`` (``complete``: the trial ended and its log has all its lines, see
  ``views.log_lines_json``); ``GET /checkpoints/{uuid}``.

Live experiments are changed only through the master's
:class:`~determined.master.experiments.Experiments`; everything else is read from the
store. Only the owner or an admin may change an experiment or kill its trials.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any, Callable, Dict, Optional, Tuple

import fastapi
from fastapi import Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from determined.common.api import IDEMPOTENCY_HEADER, MAX_CONTEXT_BYTES
from determined.experiment_validation import validate_experiment
from determined.config import (check_config_json, check_config_text, config_warnings,
                               masked_fields, parse_yaml, unmasked_config)
from determined.errors import InvalidConfigError
from determined.master import scheduler, views
from determined.master._core import Master
from determined.master._waits import never_fits
from determined.master.api import _models as models
from determined.master.api._auth import check_owner
from determined.master.api._errors import APIError
from determined.master.api._json_body import json_body, json_body_doc
from determined.master.db import ConflictError, User
from determined.master.experiments import NotFinishedError
from determined.master.experiments._service import RUN_ACTIONS
from determined.master.tasks import PREFIX as TASK_PREFIX

__all__ = ["experiment_json", "experiments_router", "waiting_json"]

_MAX_KEY_LENGTH = 255


def experiment_json(master: Master, id: int, with_config: bool = True) -> Dict[str, Any]:
    """An experiment with its trials; with the config, each trial also says whether it
    holds slots now (``running``; else an ACTIVE one waits)."""
    out = views.experiment_json(master.store, id, with_config)
    wait = master.experiment_waits().get(id)
    out["waiting"] = wait.as_json() if wait is not None else None
    if with_config:
        held = {task_id for task_id, _ in master.slot_holders()}
        for trial in out["trials"]:
            trial["running"] = scheduler.trial_task_id(trial["id"]) in held
            trial["waiting"] = _trial_wait(master, trial["id"])
    return out


def _trial_wait(master: Master, trial_id: int) -> Optional[Dict[str, Any]]:
    """Why the trial waits for slots (``{reason, detail, impossible}``), or None."""
    wait = master.waiting.of(scheduler.trial_task_id(trial_id))
    return wait.as_json() if wait is not None else None


def waiting_json(master: Master) -> Dict[str, Dict[str, Any]]:
    """Why pending things wait, as ``GET /waiting`` (and the UI's live channel) says it."""
    out: Dict[str, Dict[str, Any]] = {"tasks": {}, "trials": {}, "experiments": {}}
    for task_id, wait in master.waiting.all().items():
        trial_id = scheduler.trial_of_task(task_id)
        if trial_id is not None:
            out["trials"][str(trial_id)] = wait.as_json()
        elif task_id.startswith(TASK_PREFIX):
            out["tasks"][task_id[len(TASK_PREFIX):]] = wait.as_json()
    for exp_id, wait in master.experiment_waits().items():
        out["experiments"][str(exp_id)] = wait.as_json()
    return out


def _submitted(raw: Any) -> Optional[Dict[str, Any]]:
    """The config as submitted, kept for the UI's fork (a copy: validation may change
    ``raw``); None where JSON cannot hold it (YAML dates, binary, sets...): the fork
    then starts from the expanded config, as for experiments made before it was kept."""
    if not isinstance(raw, dict):
        return None
    try:
        return json.loads(json.dumps(raw))
    except (TypeError, ValueError):
        return None


def _create_key(request: Request, raw: bytes) -> Optional[Tuple[str, str]]:
    """``(Idempotency-Key, SHA-256 of the body)`` of a create, or None without the header."""
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None:
        return None
    if not key or len(key) > _MAX_KEY_LENGTH or not key.isprintable():
        raise APIError(400, f"Expected the {IDEMPOTENCY_HEADER} header to be 1 to "
                            f"{_MAX_KEY_LENGTH} printable characters. Received: {key[:80]!r} "
                            f"({len(key)} characters)")
    return key, hashlib.sha256(raw).hexdigest()


def trial_with_wait(master: Master, trial: Dict[str, Any]) -> Dict[str, Any]:
    trial["waiting"] = _trial_wait(master, trial["id"])
    return trial


def experiments_router(master: Master, caller: Callable[..., User]) -> fastapi.APIRouter:
    """The experiment and trial routes; ``caller`` resolves the calling user."""
    api = fastapi.APIRouter(prefix="/api/v1")
    Caller = Depends(caller)
    store, experiments = master.store, master.experiments

    @api.post("/experiments", status_code=201, openapi_extra={
        **json_body_doc(models.CreateExperiment),
        "parameters": [{"name": IDEMPOTENCY_HEADER, "in": "header", "required": False,
                        "schema": {"type": "string", "minLength": 1,
                                   "maxLength": _MAX_KEY_LENGTH},
                        "description": "one random key per create; a retry sends the "
                                       "same and is answered the experiment it made"}]})
    async def create_experiment(request: Request, user: User = Caller) -> Dict[str, Any]:
        # The body is read here, not by FastAPI: its config's keys and depth are
        # bounded before anything is decoded (limits.*; the body's size by BodyLimit).
        raw = await request.body()
        limits = master.config.limits
        await run_in_threadpool(check_config_json, raw, limits.max_config_keys,
                                limits.max_config_depth)
        key = _create_key(request, raw)
        if key is not None:
            done = await run_in_threadpool(_created_before, key, user)
            if done is not None:
                return done
        body = await json_body(request, models.CreateExperiment)
        try:
            return await run_in_threadpool(_create_experiment, body, user, key)
        except ConflictError:
            # The same key's other request stored its experiment meanwhile.
            done = await run_in_threadpool(_created_before, key, user) if key else None
            if done is None:
                raise
            return done

    def _created_before(key: Tuple[str, str], user: User) -> Optional[Dict[str, Any]]:
        """The answer of the create ``user`` made with this idempotency key, or None;
        the same key with another body: 422."""
        found = store.experiment_for_create_key(user.username, key[0])
        if found is None:
            _refuse_deleted(key, user)
            return None
        exp_id, digest = found
        if digest != key[1]:
            raise APIError(422, f"{IDEMPOTENCY_HEADER} {key[0]!r} was already used to create "
                                f"experiment {exp_id} with a different request body; send a "
                                "new key to create another experiment")
        original = store.get_experiment_original_config(exp_id)
        return {"id": exp_id, "warnings": config_warnings(original) if original else []}

    def _refuse_deleted(key: Tuple[str, str], user: User) -> None:
        """410 when the key made an experiment since deleted (kept for a day): a late
        retry must not create it again."""
        gone = store.deleted_experiment_for_create_key(user.username, key[0])
        if gone is None:
            return
        exp_id, digest = gone
        if digest != key[1]:
            raise APIError(422, f"{IDEMPOTENCY_HEADER} {key[0]!r} was already used to create "
                                f"experiment {exp_id} (since deleted) with a different "
                                "request body; send a new key to create another experiment")
        raise APIError(410, f"{IDEMPOTENCY_HEADER} {key[0]!r} already created experiment "
                            f"{exp_id}, which was deleted; this create is not made again. "
                            "Send a new key (det e create does) to create another experiment")

    def _fill_masked(raw: Any, parent_id: Optional[int], user: User) -> Any:
        """``raw`` with the credentials a fork got back masked (``***``) taken from its
        parent's stored config; only the parent's owner (or an admin) may reuse them.
        A mask left (no parent, or none to reuse) is refused by the config's checks."""
        if parent_id is None:
            return raw
        parent = store.get_experiment(parent_id)  # 404 for an unknown parent
        if not masked_fields(raw):
            return raw
        check_owner(user, parent.owner, f"experiment {parent_id}", "reuse the credentials of")
        return unmasked_config(raw, parent.config)

    def _create_experiment(body: models.CreateExperiment, user: User,
                           key: Optional[Tuple[str, str]]) -> Dict[str, Any]:
        limits = master.config.limits
        try:
            packed = base64.b64decode(body.model_def, validate=True)
        except (binascii.Error, ValueError):
            raise APIError(400, "model_def is not valid base64",
                           [{"field": "model_def", "message": "expected base64 of a tar.gz"}])
        if len(packed) > MAX_CONTEXT_BYTES:
            raise APIError(413, f"The context directory is {len(packed) / 1e6:.1f} MB packed; the "
                                f"limit is {MAX_CONTEXT_BYTES / 1e6:.0f} MB. Exclude large files "
                                "with a .detignore file.")
        raw: Any = body.config
        if isinstance(raw, str):
            check_config_text(raw, limits.max_config_bytes, limits.max_config_keys,
                              limits.max_config_depth)
            try:
                raw = parse_yaml(raw)
            except InvalidConfigError:
                raise  # a 400 like any invalid config: "not valid YAML", "Expected a mapping"
            except Exception as e:
                raise APIError(400, f"The config is not valid YAML: {e}") from None
        raw = _fill_masked(raw, body.parent_id, user)
        original = _submitted(raw)
        # Everything that could fail later is checked before the experiment is stored.
        rm = master.config.resource_manager
        valid = validate_experiment(raw, default_storage=master.config.checkpoint_storage,
                                    context=packed, max_context_ratio=limits.max_context_ratio,
                                    context_ratio_floor=limits.min_context_ratio_bytes,
                                    trials_run_here=rm.type == "embedded" and rm.slots > 0)
        config = valid.config
        too_large = never_fits(
            master.rm, master.store, "resources.slots_per_trial",
            int((config.get("resources") or {}).get("slots_per_trial") or 1))
        if too_large is not None:
            raise APIError(400, too_large, [{"field": "resources.slots_per_trial",
                                             "message": too_large}])
        exp_id = experiments.create(
            config, packed, body.activate, owner=user.username,
            git=body.git.model_dump() if body.git else None,
            context_bytes=valid.context.unpacked_bytes if valid.context else len(packed),
            original_config=original, parent_id=body.parent_id, create_key=key)
        # Fields accepted without effect here (container-only), one line each.
        return {"id": exp_id, "warnings": config_warnings(raw) if isinstance(raw, dict) else []}

    @api.get("/experiments")
    def list_experiments(archived: bool = False, user: Optional[str] = Query(
            None, description="only this user's experiments")) -> Dict[str, Any]:
        if user is not None:
            store.get_user(user)  # 404 for an unknown user
        rows = views.experiments_json(store, archived, user)
        waits = master.experiment_waits()
        for row in rows:
            wait = waits.get(row["id"])
            row["waiting"] = wait.as_json() if wait is not None else None
        return {"experiments": rows}

    @api.get("/experiments/{id}")
    def get_experiment(id: int) -> Dict[str, Any]:
        return experiment_json(master, id)

    def _action(id: int, action: str, user: User) -> Dict[str, Any]:
        check_owner(user, store.get_experiment(id).owner, f"experiment {id}", action)
        if action in RUN_ACTIONS:
            experiments.act(id, action)
        else:
            try:
                experiments.set_archived(id, action == "archive")
            except NotFinishedError as e:
                raise APIError(409, f"Experiment {id} is {e}; only finished experiments "
                                    f"(COMPLETED, CANCELED, ERROR) can be {action}d") from None
        return experiment_json(master, id, with_config=False)

    for _verb in RUN_ACTIONS + ("archive", "unarchive"):
        def _handler(id: int, user: User = Caller, _v: str = _verb) -> Dict[str, Any]:
            return _action(id, _v, user)
        api.add_api_route(f"/experiments/{{id}}/{_verb}", _handler, methods=["POST"],
                          name=f"{_verb}_experiment")

    @api.patch("/experiments/{id}")
    def patch_experiment(id: int, body: models.Patch, user: User = Caller) -> Dict[str, Any]:
        check_owner(user, store.get_experiment(id).owner, f"experiment {id}", "edit")
        changes = body.model_dump(exclude_none=True)
        store.update_experiment(id, **changes)
        experiments.update_resources(id, {k: v for k, v in changes.items()
                                          if k in ("weight", "priority", "max_slots")})
        return experiment_json(master, id, with_config=False)

    @api.get("/experiments/{id}/trials")
    def list_trials(id: int) -> Dict[str, Any]:
        store.get_experiment(id)
        return {"trials": [trial_with_wait(master, views.trial_json(t))
                           for t in store.list_trials(id)]}

    @api.get("/experiments/{id}/checkpoints")
    def list_checkpoints(id: int) -> Dict[str, Any]:
        store.get_experiment(id)
        return {"checkpoints": [views.checkpoint_json(c)
                                for c in store.list_checkpoints(experiment_id=id)]}

    @api.get("/experiments/{id}/model_def")
    def get_model_def(id: int) -> Dict[str, Any]:
        """The uploaded context directory: ``{"b64_tgz": base64 of the tar.gz}``."""
        return views.model_def_json(store, id)

    @api.get("/trials/{id}")
    def get_trial(id: int) -> Dict[str, Any]:
        return trial_with_wait(master, views.trial_with_metrics_json(store, id))

    @api.post("/trials/{id}/kill")
    def kill_trial(id: int, user: User = Caller) -> Dict[str, Any]:
        exp_id = store.get_trial(id).experiment_id
        check_owner(user, store.get_experiment(exp_id).owner, f"trial {id}", "kill")
        experiments.kill_trial(id)
        return trial_with_wait(master, views.trial_json(store.get_trial(id)))

    @api.get("/trials/{id}/logs")
    def get_logs(id: int, after_id: int = Query(0, ge=0), limit: int = Query(1000, ge=0),
                 tail: Optional[int] = Query(None, ge=0)) -> Dict[str, Any]:
        complete = master.trial_log_complete(id)  # before the read: see log_lines_json
        return views.logs_json(store, id, after_id, limit, tail, complete)

    @api.get("/waiting")
    def list_waiting() -> Dict[str, Any]:
        """Why pending things wait: ``{"tasks": {id: wait}, "trials": {id: wait},
        "experiments": {id: wait}}`` with ``wait`` = ``{reason, detail, impossible}``."""
        return waiting_json(master)

    @api.get("/checkpoints/{uuid}")
    def get_checkpoint(uuid: str) -> Dict[str, Any]:
        return views.checkpoint_json(store.get_checkpoint(uuid))

    return api
