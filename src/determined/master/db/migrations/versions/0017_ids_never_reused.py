"""Experiment, trial and checkpoint ids are never reused (SQLite ``AUTOINCREMENT``), as
0011 did for metrics. Without it SQLite gives a new row the largest id in the table plus
one, so deleting the newest experiment (``det e delete``) made the next one take its id,
and its first trial the deleted trial's id: the ids users see in URLs, in the 410 of a
create retried after the delete (``deleted_create_keys``), in TensorBoard paths of the
checkpoint storage (``experiment/<E>/trial/<T>``, not deleted with the experiment) and in
their own scripts. Checkpoint ids (shown by the API) came back after a rewind deleted the
newest. PostgreSQL's sequences never reuse ids: nothing to do there.

The tables are recreated (batch mode; ``run_upgrade`` turns foreign keys off meanwhile
and checks them before the commit); the copy sets each table's sequence to its largest
id. The ids of experiments and trials already deleted are known where something still
names them: a deleted experiment's idempotency key (``deleted_create_keys``) and the
experiments and trials a TensorBoard task was started for (``tasks.config``). New ids
start above those too. Models, versions, logs and GPU samples keep their ids: no user
sees them, and log tails are per trial or task.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-30
"""

import json
from typing import Any, Dict, Iterable

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

#: Parents first (the order does not matter with foreign keys off, but reads better).
TABLES = ("experiments", "trials", "checkpoints")


def _recreate(autoincrement: bool) -> bool:
    """Recreate the tables with or without AUTOINCREMENT; False on PostgreSQL."""
    if op.get_bind().dialect.name != "sqlite":
        return False
    for table in TABLES:
        with op.batch_alter_table(table, recreate="always",
                                  table_kwargs={"sqlite_autoincrement": autoincrement}):
            pass
    return True


def _ints(value: Any) -> Iterable[int]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return []


def _deleted_ids(conn: sa.Connection) -> Dict[str, int]:
    """The largest experiment and trial ids named outside their tables (0: none)."""
    floor = {"experiments": 0, "trials": 0, "checkpoints": 0}
    floor["experiments"] = conn.scalar(
        sa.text("SELECT COALESCE(MAX(experiment_id), 0) FROM deleted_create_keys")) or 0
    for (text,) in conn.execute(sa.text("SELECT config FROM tasks")):
        try:
            config = json.loads(text)
        except (TypeError, ValueError):
            continue
        if isinstance(config, dict):
            for key, table in (("experiment_ids", "experiments"), ("trial_ids", "trials")):
                floor[table] = max([floor[table], *_ints(config.get(key))])
    return floor


def _seed_sequences(conn: sa.Connection) -> None:
    """Raise each table's sequence to the largest id it or a deleted row ever had."""
    for table, floor in _deleted_ids(conn).items():
        top = max(floor, conn.scalar(sa.text(f"SELECT COALESCE(MAX(id), 0) FROM {table}")) or 0)
        if top <= 0:
            continue
        seq = conn.scalar(sa.text("SELECT seq FROM sqlite_sequence WHERE name = :t"),
                          {"t": table})
        if seq is None:
            conn.execute(sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES (:t, :s)"),
                         {"t": table, "s": top})
        elif seq < top:
            conn.execute(sa.text("UPDATE sqlite_sequence SET seq = :s WHERE name = :t"),
                         {"t": table, "s": top})


def upgrade() -> None:
    if _recreate(True):
        _seed_sequences(op.get_bind())


def downgrade() -> None:
    _recreate(False)
