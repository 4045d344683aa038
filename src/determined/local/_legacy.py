"""Import a local directory written by an older version (plain files per experiment:
``experiment.json``, ``metrics.jsonl``, ``searcher.json``, ``trials/<id>.log``) into
its new database, keeping every experiment and trial id. Runs once, when the
database is created; the old files stay where they are."""

from __future__ import annotations

import datetime
import json
import logging
import os
from typing import Any, Dict, List, Optional

import sqlalchemy as sa

from determined.master.db import Store
from determined.master.db import _models as m

__all__ = ["import_legacy"]

logger = logging.getLogger("determined.local")

_TRIAL_STATES = {"COMPLETED": "COMPLETED", "ERROR": "ERROR", "CANCELED": "CANCELED"}
_EXPERIMENT_STATES = {"ACTIVE", "PAUSED", "COMPLETED", "ERROR", "CANCELED"}


def _time(value: Any) -> Optional[datetime.datetime]:
    if not isinstance(value, (int, float)):
        return None
    return datetime.datetime.fromtimestamp(value, datetime.timezone.utc)


def _metrics(exp_dir: str) -> List[Dict[str, Any]]:
    """Rows of ``metrics.jsonl``, rolled-back rows removed, first of duplicates kept."""
    rows: List[Dict[str, Any]] = []
    path = os.path.join(exp_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return rows
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed driver
            if row.get("kind") == "rollback":
                rows = [r for r in rows if not (r["trial_id"] == row["trial_id"]
                                                and r["batches"] > row["batches"])]
            elif row.get("kind") in ("training", "validation"):
                rows.append(row)
    seen, out = set(), []
    for r in rows:
        key = (r["trial_id"], r["kind"], r["batches"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def import_legacy(store: Store, local_dir: str, owner: str) -> int:
    """Copy every old-format experiment of ``local_dir`` into ``store``; returns how many."""
    root = os.path.join(local_dir, "experiments")
    names = sorted((n for n in os.listdir(root) if n.isdigit()), key=int) \
        if os.path.isdir(root) else []
    imported = 0
    for name in names:
        exp_dir = os.path.join(root, name)
        state = _read_json(os.path.join(exp_dir, "experiment.json"))
        if state is None:
            continue
        _import_one(store, exp_dir, state, owner)
        imported += 1
    if imported:
        logger.info("imported %d local experiments of an older version from %s", imported, root)
    return imported


def _import_one(store: Store, exp_dir: str, state: Dict[str, Any], owner: str) -> None:

    now = datetime.datetime.now(datetime.timezone.utc)
    config = state["config"]
    exp_state = state.get("state") if state.get("state") in _EXPERIMENT_STATES else "ERROR"
    end = _time(state.get("end_time"))
    with store._write() as s:  # explicit ids: the store's API numbers new rows itself
        owner_id = s.scalar(sa.select(m.User.id).where(m.User.username == owner))
        s.add(m.Experiment(
            id=int(state["id"]), state=exp_state, config=config, model_def=b"",
            owner_id=owner_id, parent_id=None, archived=False,
            description=config.get("description") or "", labels=list(config.get("labels") or []),
            weight=1.0, priority=None, max_slots=None, progress=state.get("progress"),
            start_time=_time(state.get("start_time")) or now,
            end_time=end if exp_state in ("COMPLETED", "ERROR", "CANCELED") else None,
        ))
        s.flush()
        for t in state.get("trials", []):
            s.add(m.Trial(
                id=int(t["trial_id"]), experiment_id=int(state["id"]),
                request_id=str(t["request_id"]), state=_TRIAL_STATES.get(t.get("state"), "ACTIVE"),
                hparams=t.get("hparams") or {}, seed=int(t.get("seed") or 0),
                warm_start_checkpoint=t.get("warm_start"), restarts=int(t.get("restarts") or 0),
                total_batches=int(t.get("batches") or 0),
                start_time=_time(t.get("start_time")) or now,
                end_time=_time(t.get("end_time")), latest_checkpoint=t.get("latest_checkpoint"),
                best_validation=t.get("best_metric"),
            ))
        s.flush()
        trial_ids = {int(t["trial_id"]) for t in state.get("trials", [])}
        for r in _metrics(exp_dir):
            if r["trial_id"] in trial_ids:
                s.add(m.Metrics(trial_id=r["trial_id"], kind=r["kind"], total_batches=r["batches"],
                                end_time=_time(r.get("time")) or now, metrics=r.get("metrics") or {},
                                batch_metrics=None, num_inputs=None))
        for c in state.get("checkpoints", []):
            if c.get("trial_id") in trial_ids:
                s.add(m.Checkpoint(
                    uuid=c["uuid"], trial_id=c["trial_id"], total_batches=int(c["batches"]),
                    state="DELETED" if c.get("state") == "DELETED" else "COMPLETED",
                    resources={}, metadata_={}, framework="", format="", determined_version="",
                    start_time=_time(c.get("time")) or now, end_time=_time(c.get("time")) or now,
                ))
        snapshot = _read_json(os.path.join(exp_dir, "searcher.json"))
        if snapshot is not None:
            snapshot["local"] = {"model_dir": state.get("model_dir"),
                                 "source_checkpoint_path": state.get("source_checkpoint_path")}
            s.add(m.SearcherSnapshot(experiment_id=int(state["id"]), snapshot=snapshot,
                                     events_applied=int(snapshot.get("events", 0))))
        for tid in trial_ids:
            path = os.path.join(exp_dir, "trials", f"{tid}.log")
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
            except OSError:
                continue
            for line in lines:
                s.add(m.TrialLog(trial_id=tid, timestamp=now, line=line))
