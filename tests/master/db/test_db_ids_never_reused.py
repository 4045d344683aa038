"""Ids are never given twice (migration 0017 on SQLite; PostgreSQL's sequences): a new
experiment, trial or checkpoint never takes the id of one deleted, also when the deleted
one was the newest; a database migrated from 0016 keeps its rows and links and starts
new ids above every id it still knows was used."""

import json

import sqlalchemy as sa

from determined.master.db import Store, _engine

CONFIG = {"description": "x", "searcher": {"name": "single"}}


def _trial(store: Store, exp: int, request: str = "r1") -> int:
    return store.create_trial(exp, request, {"lr": 0.1}, seed=1)


def _checkpoint(store: Store, trial: int, batches: int, uuid: str) -> int:
    return store.add_checkpoint(uuid, trial, batches, {"f": 1}, {}, "torch", "pickle").id


def test_the_newest_experiment_and_trial_deleted_leave_their_ids_unused(store: Store) -> None:
    first = store.create_experiment(CONFIG, b"m", "determined")
    first_trial = _trial(store, first)
    newest = store.create_experiment(CONFIG, b"m", "determined")
    newest_trials = [_trial(store, newest, r) for r in ("r1", "r2")]
    store.delete_experiment(newest)

    again = store.create_experiment(CONFIG, b"m", "determined")
    again_trial = _trial(store, again)
    assert again > newest > first
    assert again_trial > max(newest_trials) > first_trial

    # Also across a restart of the master (a new Store on the same database).
    store.delete_experiment(again)
    with Store(store.url) as restarted:
        restarted.upgrade()
        latest = restarted.create_experiment(CONFIG, b"m", "determined")
        assert latest > again
        assert _trial(restarted, latest) > again_trial
        assert [e.id for e in restarted.list_experiments()] == [first, latest]


def test_checkpoint_ids_deleted_by_a_rewind_are_not_reused(store: Store) -> None:
    trial = _trial(store, store.create_experiment(CONFIG, b"m", "determined"))
    kept = _checkpoint(store, trial, 10, "c-10")
    rewound = _checkpoint(store, trial, 20, "c-20")
    assert store.rollback_trial(trial, 10) == ["c-20"]
    assert [c.id for c in store.list_checkpoints(trial_id=trial)] == [kept]
    assert _checkpoint(store, trial, 20, "c-20-again") > rewound


def _rows(conn: sa.Connection, table: str) -> list:
    return [tuple(r) for r in conn.execute(sa.text(f"SELECT * FROM {table} ORDER BY 1, 2"))]


DATA_TABLES = ("users", "experiments", "trials", "checkpoints", "metrics", "trial_logs",
               "searcher_snapshots", "deleted_create_keys", "tasks", "auth_tokens")


def _snapshot(store: Store) -> dict:
    with store._engines.read.connect() as conn:
        return {t: _rows(conn, t) for t in DATA_TABLES}


def _autoincrement_tables(store: Store) -> set:
    if store._engines.backend != "sqlite":
        return set()
    with store._engines.read.connect() as conn:
        rows = conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
        return {name for name, sql in rows if "AUTOINCREMENT" in sql}


def _fill_0016(store: Store) -> dict:
    """At 0016: two experiments (a fork, one with a key) with trials, checkpoints,
    metrics, logs and a snapshot; a newest experiment deleted with its key; a later
    trial id named only by a TensorBoard task. Returns the ids."""
    parent = store.create_experiment(CONFIG, b"m", "determined")
    fork = store.create_experiment(CONFIG, b"m", "determined", parent_id=parent,
                                   create_key=("fork-key", "d1"))
    trials = [_trial(store, parent), _trial(store, fork)]
    for t in trials:
        store.add_training_metrics(t, 10, {"loss": 0.5})
        store.add_logs(t, ["a line", "another"])
        _checkpoint(store, t, 10, f"c-{t}")
    store.create_trial_token(trials[1])
    store.save_searcher_snapshot(fork, {"s": 1}, 3)
    # Deleted at the top: the key keeps its id; a trial of it is named by a TensorBoard.
    gone = store.create_experiment(CONFIG, b"m", "determined", create_key=("gone-key", "d2"))
    gone_trials = [_trial(store, gone, r) for r in ("r1", "r2")]
    store.create_task("tb1", "tensorboard", "determined",
                      {"experiment_ids": [], "trial_ids": [gone_trials[1]]}, None)
    store.delete_experiment(gone)
    return {"parent": parent, "fork": fork, "trials": trials, "gone": gone,
            "gone_trials": gone_trials}


def test_0017_keeps_the_rows_and_never_reuses_ids_known_used(db_url: str) -> None:
    sqlite = db_url.startswith("sqlite")
    with Store(db_url) as store:
        assert _engine.run_upgrade(store._engines, "0016")[1] == "0016"
        ids = _fill_0016(store)
        before = _snapshot(store)
        assert _autoincrement_tables(store) == ({"metrics"} if sqlite else set())

        assert store.upgrade() == "0017"
        assert _snapshot(store) == before
        assert _autoincrement_tables(store) == (
            {"metrics", "experiments", "trials", "checkpoints"} if sqlite else set())
        if sqlite:
            with store._engines.read.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall() == []
                seqs = dict(conn.exec_driver_sql("SELECT name, seq FROM sqlite_sequence").all())
            assert seqs["experiments"] == ids["gone"]
            assert seqs["trials"] == ids["gone_trials"][1]
        assert store.get_experiment(ids["fork"]).parent_id == ids["parent"]
        assert store.deleted_experiment_for_create_key("determined", "gone-key") == (
            ids["gone"], "d2")

        # New ids start above the deleted experiment and the trial the task names.
        new = store.create_experiment(CONFIG, b"m", "determined")
        new_trial = _trial(store, new)
        assert new > ids["gone"] and new_trial > ids["gone_trials"][1]
        # Deleting the newest and creating again gives new ids.
        store.delete_experiment(new)
        newer = store.create_experiment(CONFIG, b"m", "determined")
        assert newer > new and _trial(store, newer) > new_trial

        # Foreign keys still act: deleting the parent unlinks the fork; the fork's
        # deletion cascades to its trial's rows.
        store.delete_experiment(ids["parent"])
        assert store.get_experiment(ids["fork"]).parent_id is None
        store.delete_experiment(ids["fork"])
        with store._engines.read.connect() as conn:
            for table in ("trials", "checkpoints", "metrics", "trial_logs", "auth_tokens",
                          "searcher_snapshots"):
                left = conn.execute(sa.text(
                    f"SELECT COUNT(*) FROM {table} WHERE "
                    + ("experiment_id" if table in ("trials", "searcher_snapshots")
                       else "trial_id") + " IN (:a, :b, :c, :d)"),
                    {"a": ids["parent"], "b": ids["fork"], "c": ids["trials"][0],
                     "d": ids["trials"][1]}).scalar()
                assert left == 0, table


def test_0017_downgrades_and_upgrades_again_keeping_the_rows(db_url: str) -> None:
    sqlite = db_url.startswith("sqlite")
    with Store(db_url) as store:
        assert _engine.run_upgrade(store._engines, "0016")[1] == "0016"
        ids = _fill_0016(store)
        before = _snapshot(store)
        assert store.upgrade() == "0017"

        assert _engine.run_downgrade(store._engines, "0016") == ("0017", "0016")
        assert _snapshot(store) == before
        assert _autoincrement_tables(store) == ({"metrics"} if sqlite else set())
        assert store.get_experiment(ids["fork"]).parent_id == ids["parent"]

        assert store.upgrade() == "0017"
        assert _snapshot(store) == before
        assert store.create_experiment(CONFIG, b"m", "determined") > ids["gone"]


def test_0017_reads_only_the_ids_in_task_configs(db_url: str) -> None:
    """Task configs of any shape (a notebook's, ids not lists, bad JSON) seed nothing and
    break nothing; an empty database gets no sequence below 1."""
    with Store(db_url) as store:
        assert _engine.run_upgrade(store._engines, "0016")[1] == "0016"
        store.create_task("nb", "notebook", "determined", {"description": "n"}, None)
        store.create_task("tb", "tensorboard", "determined",
                          {"experiment_ids": "7", "trial_ids": [True, 3.5, None]}, None)
        if db_url.startswith("sqlite"):
            with store._engines.write.begin() as conn:
                conn.execute(sa.text("UPDATE tasks SET config = :c WHERE id = 'nb'"),
                             {"c": "{not json"})
        assert store.upgrade() == "0017"
        exp = store.create_experiment(CONFIG, b"m", "determined")
        assert exp == 1 and _trial(store, exp) == 1
        tb = store.get_task("tb").config
        assert json.dumps(tb["experiment_ids"]) == '"7"'


def test_a_fresh_database_never_reuses_ids(db_url: str, tmp_path) -> None:
    """A database made from scratch gets the same tables as one migrated with rows, and
    so does one made from the models (they declare what the migrations build)."""
    from determined.master.db._models import Base

    sqlite = db_url.startswith("sqlite")
    with Store(db_url) as store:
        store.upgrade()
        assert _autoincrement_tables(store) == (
            {"metrics", "experiments", "trials", "checkpoints"} if sqlite else set())
    engine = sa.create_engine(f"sqlite:///{tmp_path}/from_models.db")
    try:
        Base.metadata.create_all(engine)
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
            from_models = {name for name, sql in rows if "AUTOINCREMENT" in sql}
    finally:
        engine.dispose()
    assert from_models == {"metrics", "experiments", "trials", "checkpoints"}
