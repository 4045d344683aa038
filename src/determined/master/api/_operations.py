"""Master-parity routes (issue 9 part 5): workloads with per-batch metrics, checkpoint
metadata, experiment deletion, checkpoint GC policy, config templates, the master's
log, and draining agents and slots.

- ``GET /trials/{id}/workloads`` -> ``{"workloads": [{kind, total_batches, end_time,
  metrics, batch_metrics, num_inputs}]}``.
- ``POST /checkpoints/{uuid}/metadata`` ``{metadata}`` merges top-level keys;
  ``DELETE /checkpoints/{uuid}/metadata?keys=a&keys=b`` drops keys; both answer
  ``{"metadata": ...}`` (the experiment's owner or an admin).
- ``DELETE /experiments/{id}`` (its owner or an admin; finished experiments only, shown by
  no TensorBoard task, else 409 naming it): marks its checkpoints DELETED, deletes them
  and its TensorBoard event files (``tensorboard/[<cluster id>/]experiment/<id>/``) from
  storage, then its records and files on the master -> ``{"id", "deleted_checkpoints",
  "deleted_tensorboard": bool, "deleted_tensorboard_files": N}``. Files that cannot be
  deleted are a 503 and the experiment is kept (a retry finishes). ``?dry_run=true``
  makes the same checks (the same 403/404/409) and deletes nothing -> ``{"id",
  "checkpoints": N, "tensorboard_files": N}`` (what a deletion would remove): ``det e
  delete`` asks only then.
- ``GET /experiments/{id}/gc-preview?save_experiment_best=&save_trial_best=&
  save_trial_latest=`` -> ``{"checkpoints": [...]}`` that policy would delete;
  ``PATCH /experiments/{id}/gc-policy`` ``{save_*}`` stores it and, for a finished
  experiment, marks them DELETED and deletes their files now -> ``{"deleted": [uuid...]}``
  (files a crash left are deleted when the master starts again).
- ``GET /templates``, ``GET|PUT|DELETE /templates/{name}`` (``PUT`` ``{config}``):
  ``{name, config, owner}``; anyone reads, only the owner (whoever made it) or an
  admin overwrites or deletes (403 otherwise); ``PUT`` refuses unknown or wrongly
  typed fields with a 400 naming them (``_template_check``).
- ``GET /master/logs?after_id=&limit=&tail=`` -> ``{"logs": [{id, timestamp, level, line}]}``.
- ``POST /agents/{id}/enable|disable`` and ``POST /agents/{id}/slots/{slot}/enable|disable``
  (admins): a disabled agent or slot gets no new trials; running ones go on.

Slow I/O (deleting checkpoint files, removing directories) happens outside
``Master.lock``.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import fastapi
import pydantic
from fastapi import Depends, Query

from determined.config import check_config_tree
from determined.master._core import Master
from determined.master import views
from determined.master._master_log import MASTER_LOG
from determined.master.api._auth import check_owner, require_admin
from determined.master.api._errors import fail
from determined.master.api._template_check import check_template
from determined.master.db import TERMINAL_STATES, NotFoundError, User
from determined.master.views import iso
from determined.storage import CheckpointRecord, build_storage, checkpoints_to_keep

__all__ = ["operations_router", "gc_candidates"]

logger = logging.getLogger("determined.master")


class _Body(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class Metadata(_Body):
    metadata: Dict[str, Any]


class GCPolicy(_Body):
    save_experiment_best: int = pydantic.Field(ge=0)
    save_trial_best: int = pydantic.Field(ge=0)
    save_trial_latest: int = pydantic.Field(ge=0)


class TemplateBody(_Body):
    config: Dict[str, Any]


def _checkpoint_json(c: Any) -> Dict[str, Any]:
    return {"uuid": c.uuid, "trial_id": c.trial_id, "experiment_id": c.experiment_id,
            "total_batches": c.total_batches, "state": c.state, "validation": c.validation,
            "end_time": iso(c.end_time)}


def gc_candidates(master: Master, exp_id: int, policy: Dict[str, int]) -> List[Any]:
    """COMPLETED checkpoints of the experiment that ``policy`` (``save_*`` counts) would
    delete; warm-start sources and registered model versions are always kept."""
    exp = master.store.get_experiment(exp_id)
    searcher = exp.config.get("searcher") or {}
    metric_name = searcher.get("metric")
    ckpts = master.store.list_checkpoints(experiment_id=exp_id, states=["COMPLETED"])
    protected = master.store.protected_checkpoints(c.uuid for c in ckpts)
    records = []
    for c in ckpts:
        metric = (c.validation or {}).get(metric_name)
        usable = isinstance(metric, (int, float)) and metric == metric  # not NaN
        records.append(CheckpointRecord(c.uuid, c.trial_id,
                                        c.end_time.timestamp() if c.end_time else time.time(),
                                        float(metric) if usable else None))
    keep = checkpoints_to_keep(records, policy["save_experiment_best"],
                               policy["save_trial_best"], policy["save_trial_latest"],
                               bool(searcher.get("smaller_is_better", True)), protected)
    return [c for c in ckpts if c.uuid not in keep]


def operations_router(master: Master, caller: Any) -> fastapi.APIRouter:
    """The routes above; ``caller`` is the dependency giving the calling user."""
    api = fastapi.APIRouter(prefix="/api/v1", tags=["operations"])
    store = master.store
    Caller = Depends(caller)
    templates_lock = threading.Lock()  # only these routes write templates

    # -- workloads ------------------------------------------------------------------------

    @api.get("/trials/{id}/workloads")
    def trial_workloads(id: int) -> Dict[str, Any]:
        return views.workloads_json(store, id)

    # -- checkpoint metadata ------------------------------------------------------------------

    def _checkpoint_owner(uuid: str, user: User) -> None:
        ckpt = store.get_checkpoint(uuid)
        owner = store.get_experiment(ckpt.experiment_id).owner
        check_owner(user, owner, f"checkpoint {uuid}", "edit the metadata of")

    @api.post("/checkpoints/{uuid}/metadata")
    def add_checkpoint_metadata(uuid: str, body: Metadata, user: User = Caller) -> Dict[str, Any]:
        _checkpoint_owner(uuid, user)
        return {"metadata": store.add_checkpoint_metadata(uuid, body.metadata)}

    @api.delete("/checkpoints/{uuid}/metadata")
    def remove_checkpoint_metadata(uuid: str, keys: List[str] = Query(...),
                                   user: User = Caller) -> Dict[str, Any]:
        _checkpoint_owner(uuid, user)
        return {"metadata": store.remove_checkpoint_metadata(uuid, keys)}

    # -- experiment deletion and GC -------------------------------------------------------------

    def _delete_files(exp_id: int, config: Dict[str, Any], uuids: List[str],
                      tensorboard: Optional[str] = None) -> Tuple[List[str], Optional[int]]:
        """Delete checkpoint files and, with ``tensorboard`` (a storage path), the event
        files under it (no lock held). Returns the uuids whose files are gone and how
        many event files were deleted (None: they could not be)."""
        storage = build_storage(config["checkpoint_storage"])
        gone = []
        for uuid in uuids:
            try:
                storage.delete(uuid)
                gone.append(uuid)
            except Exception as e:  # noqa: BLE001 - a retry or a restart tries again
                logger.warning("experiment %s: could not delete checkpoint %s: %s", exp_id,
                               uuid, e)
        events: Optional[int] = None
        if tensorboard is not None:
            try:
                events = storage.delete_dir(tensorboard)
            except Exception as e:  # noqa: BLE001 - a retry tries again
                logger.warning("experiment %s: could not delete its TensorBoard files at "
                               "%s: %s", exp_id, storage.describe_dir(tensorboard), e)
        return gone, events

    def _tensorboard_files(exp_id: int, config: Dict[str, Any], path: str) -> int:
        """How many event files the experiment has in storage (503 if it cannot tell)."""
        storage = build_storage(config["checkpoint_storage"])
        try:
            return len(storage.list_dir(path))
        except Exception as e:  # noqa: BLE001 - the deletion would fail as well
            raise fail(503, f"Cannot list the TensorBoard files of experiment {exp_id} at "
                            f"{storage.describe_dir(path)}: {e}") from None

    @api.delete("/experiments/{id}")
    def delete_experiment(id: int, dry_run: bool = False,
                          user: User = Caller) -> Dict[str, Any]:
        exp = store.get_experiment(id)
        check_owner(user, exp.owner, f"experiment {id}", "delete")  # as 0.13
        # A finished experiment never runs again: no lock keeps this true.
        if exp.state not in TERMINAL_STATES or master.experiments.is_live(id):
            raise fail(409, f"Experiment {id} is {exp.state}; only finished experiments "
                            "(COMPLETED, CANCELED, ERROR) can be deleted: kill it first")
        ckpts = store.list_checkpoints(experiment_id=id)
        registered = store.registered_checkpoints(c.uuid for c in ckpts)
        if registered:
            raise fail(409, f"Experiment {id} has checkpoints registered as model versions "
                            f"({', '.join(sorted(registered))}); delete those models first")
        # Its event files go too: a TensorBoard over them would show runs vanishing (and,
        # over shared_fs, links to nothing). Killing it could end another user's task.
        boards = master.tasks.tensorboards_showing(id)
        if boards:
            shown = ", ".join(t + (" (stopping)" if stopping else "") for t, stopping in boards)
            raise fail(409, f"Experiment {id} is shown by TensorBoard {shown}, "
                            "whose files deleting it removes; kill it first (det tensorboard "
                            f"kill {' '.join(t for t, _ in boards)}) and wait for it to end, "
                            "or until it stops when idle")
        tensorboard = master.tensorboard_paths.experiment_path(id)
        live = [c.uuid for c in ckpts if c.state != "DELETED"]
        if dry_run:
            return {"id": id, "checkpoints": len(live),
                    "tensorboard_files": _tensorboard_files(id, exp.config, tensorboard)}
        for uuid in live:  # marked first, as GC does; the files of every one, DELETED
            store.set_checkpoint_state(uuid, "DELETED")  # before too (a retry finishes)
        every = [c.uuid for c in ckpts]
        found, events = _delete_files(id, exp.config, every, tensorboard)
        gone = set(found)
        if len(gone) < len(every):
            raise fail(503, f"Could not delete {len(every) - len(gone)} checkpoint(s) of "
                            f"experiment {id} (see `det master logs`); the experiment is kept")
        if events is None:
            raise fail(503, f"Could not delete the TensorBoard files of experiment {id} "
                            "(see `det master logs`); the experiment is kept: delete it "
                            "again to finish")
        gone &= set(live)
        store.delete_experiment(id)
        shutil.rmtree(os.path.join(master.config.data_dir, "experiments", str(id)),
                      ignore_errors=True)
        logger.info("experiment %s deleted by %s (%d checkpoint(s) and %d TensorBoard "
                    "file(s) removed from storage)", id, user.username, len(gone), events)
        return {"id": id, "deleted_checkpoints": sorted(gone),
                "deleted_tensorboard": events > 0, "deleted_tensorboard_files": events}

    @api.get("/experiments/{id}/gc-preview")
    def gc_preview(id: int, save_experiment_best: int = Query(..., ge=0),
                   save_trial_best: int = Query(..., ge=0),
                   save_trial_latest: int = Query(..., ge=0)) -> Dict[str, Any]:
        policy = {"save_experiment_best": save_experiment_best,
                  "save_trial_best": save_trial_best, "save_trial_latest": save_trial_latest}
        return {"checkpoints": [_checkpoint_json(c) for c in gc_candidates(master, id, policy)]}

    @api.patch("/experiments/{id}/gc-policy")
    def set_gc_policy(id: int, body: GCPolicy, user: User = Caller) -> Dict[str, Any]:
        policy = body.model_dump()
        exp = store.get_experiment(id)
        check_owner(user, exp.owner, f"experiment {id}", "change the GC policy of")
        config = dict(exp.config)
        config["checkpoint_storage"] = {**(config.get("checkpoint_storage") or {}), **policy}
        store.update_experiment(id, config=config)  # stored first: a run ending now reads it
        if master.experiments.update_gc_policy(id, policy):
            return {"deleted": [], "applies": "when the experiment ends"}
        doomed = [c.uuid for c in gc_candidates(master, id, policy)]
        for uuid in doomed:  # marked first: a crash leaks files, never leaves a record
            store.set_checkpoint_state(uuid, "DELETED")  # without them (a restart deletes)
        _delete_files(id, config, doomed)
        return {"deleted": doomed, "applies": "now"}

    # -- templates ---------------------------------------------------------------------------

    @api.get("/templates")
    def list_templates() -> Dict[str, Any]:
        return {"templates": store.list_template_records()}

    @api.get("/templates/{name}")
    def get_template(name: str) -> Dict[str, Any]:
        return store.get_template_record(name)

    def _template_owner(name: str, user: User, action: str) -> Optional[str]:
        """The existing template's owner after checking that ``user`` may change it
        (403 otherwise); None when there is no such template."""
        try:
            owner = store.get_template_record(name)["owner"]
        except NotFoundError:
            return None
        if owner is None:  # made before templates had owners
            require_admin(user, f"{action} template {name!r} (it has no owner)")
        else:
            check_owner(user, owner, f"template {name!r}", action)
        return owner

    @api.put("/templates/{name}")
    def put_template(name: str, body: TemplateBody, user: User = Caller) -> Dict[str, Any]:
        if not name.strip() or len(name) > 255:
            raise fail(400, f"Expected a template name of 1-255 characters. Received: {name!r}")
        limits = master.config.limits
        check_config_tree(body.config, limits.max_config_keys, limits.max_config_depth)
        check_template(name, body.config)
        with templates_lock:  # the owner check and the write, with no change between
            _template_owner(name, user, "overwrite")
            store.set_template(name, body.config, owner=user.username)
        return store.get_template_record(name)

    @api.delete("/templates/{name}")
    def delete_template(name: str, user: User = Caller) -> Dict[str, Any]:
        with templates_lock:
            store.get_template_record(name)  # 404 first
            _template_owner(name, user, "delete")
            store.delete_template(name)
        return {"name": name}

    # -- the master's log --------------------------------------------------------------------

    @api.get("/master/logs")
    def master_logs(after_id: int = Query(0, ge=0), limit: int = Query(1000, ge=0, le=10000),
                    tail: Optional[int] = Query(None, ge=0)) -> Dict[str, Any]:
        return {"logs": MASTER_LOG.read(after_id=after_id, limit=limit, tail=tail)}

    # -- draining agents and slots -----------------------------------------------------------

    def _refresh_flags() -> None:
        master.set_scheduling_flags(store.scheduling_flags())

    for _verb in ("enable", "disable"):
        def _agent(agent_id: str, user: User = Caller, _v: str = _verb) -> Dict[str, Any]:
            require_admin(user, f"{_v} agents")
            store.set_agent_enabled(agent_id, _v == "enable")
            _refresh_flags()
            return {"id": agent_id, "enabled": _v == "enable"}

        def _slot(agent_id: str, slot_id: int, user: User = Caller,
                  _v: str = _verb) -> Dict[str, Any]:
            require_admin(user, f"{_v} slots")
            disabled = store.set_slot_enabled(agent_id, slot_id, _v == "enable")
            _refresh_flags()
            return {"agent_id": agent_id, "slot_id": slot_id, "enabled": _v == "enable",
                    "disabled_slots": disabled}

        api.add_api_route(f"/agents/{{agent_id}}/{_verb}", _agent, methods=["POST"],
                          name=f"{_verb}_agent")
        api.add_api_route(f"/agents/{{agent_id}}/slots/{{slot_id}}/{_verb}", _slot,
                          methods=["POST"], name=f"{_verb}_slot")

    # Flags stored by an earlier master apply from the start.
    master.rm.flags = store.scheduling_flags()
    return api
