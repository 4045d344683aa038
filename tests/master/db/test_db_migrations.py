"""Migrations: idempotent, concurrent-safe, and in step with the ORM models."""

import threading

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from determined.master.db import NotFoundError, Store
from determined.master.db._models import Base


def test_upgrade_twice_is_a_no_op(db_url: str) -> None:
    store = Store(db_url)
    try:
        assert store.schema_revision() is None
        head = store.upgrade()
        assert head == "0017"
        exp = store.create_experiment({"a": 1}, b"x", "admin")
        assert store.upgrade() == head
        assert store.schema_revision() == head
        assert store.get_experiment(exp).config == {"a": 1}
        assert [u.username for u in store.list_users()] == ["admin", "determined"]
    finally:
        store.close()
    # A new store (a master restart) upgrades the same database again.
    with Store(db_url) as again:
        assert again.upgrade() == head
        assert again.get_experiment(exp).owner == "admin"


def test_concurrent_upgrades(db_url: str) -> None:
    stores = [Store(db_url) for _ in range(4)]
    results, errors = [], []

    def up(s: Store) -> None:
        try:
            results.append(s.upgrade())
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=up, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert results == ["0017"] * 4
        assert len(stores[0].list_users()) == 2
    finally:
        for s in stores:
            s.close()


def test_migrations_match_models(db_url: str) -> None:
    with Store(db_url) as store:
        store.upgrade()
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True})
            diff = compare_metadata(ctx, Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_seeded_users(store: Store) -> None:
    admin = store.get_user("admin")
    assert admin.admin and admin.active and not admin.has_password
    determined = store.get_user("determined")
    assert not determined.admin and determined.active
    assert store.check_user_password("admin", "")
    assert store.check_user_password("determined", "")
    with pytest.raises(NotFoundError, match="user 'nobody' not found"):
        store.get_user("nobody")


@pytest.mark.parametrize(
    "url",
    ["sqlite://", "sqlite:///:memory:", "mysql://x@y/z", "not a url"],
)
def test_bad_urls(url: str) -> None:
    with pytest.raises(ValueError, match="Expected"):
        Store(url)


def test_experiments_before_0012_have_no_original_config(db_url: str) -> None:
    """An experiment stored before 0012 keeps working (no submitted config: readers fall
    back to the expanded one); one created after keeps its config as submitted."""
    from determined.master.db import _engine
    from determined.master.db._types import JSONText, UTCDateTime, utcnow

    with Store(db_url) as store:
        assert _engine.run_upgrade(store._engines, "0011")[1] == "0011"
        table = sa.table("experiments", *(sa.column(n) for n in (
            "state", "model_def", "owner_id", "description", "archived", "weight")),
            sa.column("config", JSONText()), sa.column("labels", JSONText()),
            sa.column("start_time", UTCDateTime()))
        with store._engines.write.begin() as conn:
            owner = conn.execute(sa.text("SELECT id FROM users WHERE username = 'admin'")).scalar()
            conn.execute(table.insert().values(
                state="COMPLETED", config={"searcher": {"name": "single"}}, model_def=b"x",
                owner_id=owner, description="old", labels=[], archived=False, weight=1.0,
                start_time=utcnow()))
        assert store.upgrade() == "0017"
        [old] = store.list_experiments()
        assert (old.description, old.config) == ("old", {"searcher": {"name": "single"}})
        assert store.get_experiment_original_config(old.id) is None
        submitted = {"searcher": {"name": "single", "metric": "loss"}, "description": "new"}
        new = store.create_experiment({**submitted, "records_per_epoch": 0}, b"y", "admin",
                                      original_config=submitted)
        assert store.get_experiment_original_config(new) == submitted
        assert store.get_experiment(new).config["records_per_epoch"] == 0
        with pytest.raises(NotFoundError):
            store.get_experiment_original_config(new + 1)


def test_experiments_before_0014_have_no_create_key(db_url: str) -> None:
    """0014 adds the create key to a database holding experiments: theirs is NULL (and
    NULLs never collide); a key stored after is found and unique per owner."""
    from determined.master.db import ConflictError, _engine

    with Store(db_url) as store:
        assert _engine.run_upgrade(store._engines, "0013")[1] == "0013"
        with store._engines.write.begin() as conn:
            owner = conn.execute(sa.text("SELECT id FROM users WHERE username = 'admin'")).scalar()
            for _ in range(2):
                conn.execute(sa.text(
                    "INSERT INTO experiments (state, config, model_def, owner_id, description, "
                    "labels, archived, weight, start_time) VALUES ('PAUSED', '{}', :m, :o, "
                    "'old', '[]', :f, 1.0, '2026-11-29 00:00:00')"),
                    {"m": b"x", "o": owner, "f": False})
        assert store.upgrade() == "0017"
        assert [e.description for e in store.list_experiments()] == ["old", "old"]
        new = store.create_experiment({}, b"y", "admin", create_key=("key", "digest"))
        assert store.experiment_for_create_key("admin", "key") == (new, "digest")
        with pytest.raises(ConflictError):
            store.create_experiment({}, b"y", "admin", create_key=("key", "digest"))


def test_0015_dates_the_pause_of_experiments_already_paused(db_url: str) -> None:
    """0015 adds ``paused_at``: an experiment PAUSED before it gets its searcher snapshot's
    last save (a pause saves one), or its start without one; others none. After, pausing
    dates it and any other state clears it."""
    from determined.master.db import _engine

    def paused_at(store):
        with store._engines.read.connect() as conn:
            rows = conn.execute(sa.text("SELECT description, paused_at FROM experiments"))
            return {d: (None if p is None else str(p)[:19]) for d, p in rows}

    with Store(db_url) as store:
        assert _engine.run_upgrade(store._engines, "0014")[1] == "0014"
        with store._engines.write.begin() as conn:
            owner = conn.execute(sa.text("SELECT id FROM users WHERE username = 'admin'")).scalar()
            for name, state in (("snap", "PAUSED"), ("bare", "PAUSED"), ("runs", "ACTIVE")):
                conn.execute(sa.text(
                    "INSERT INTO experiments (state, config, model_def, owner_id, description, "
                    "labels, archived, weight, start_time) VALUES (:s, '{}', :m, :o, :d, '[]', "
                    ":f, 1.0, '2026-11-29 00:00:00')"),
                    {"s": state, "m": b"x", "o": owner, "d": name, "f": False})
            snap = conn.execute(sa.text(
                "SELECT id FROM experiments WHERE description = 'snap'")).scalar()
            conn.execute(sa.text(
                "INSERT INTO searcher_snapshots (experiment_id, snapshot, events_applied, "
                "updated_at) VALUES (:e, '{}', 3, '2026-11-29 01:02:03')"), {"e": snap})
        assert store.upgrade() == "0017"
        assert paused_at(store) == {"snap": "2026-11-29 01:02:03",
                                    "bare": "2026-11-29 00:00:00", "runs": None}
        runs = next(e.id for e in store.list_experiments() if e.description == "runs")
        store.set_experiment_state(snap, "ACTIVE")
        store.set_experiment_state(runs, "PAUSED")
        after = paused_at(store)
        assert after["snap"] is None and after["runs"] is not None
        made_paused = store.create_experiment({"description": "made"}, b"y", "admin")
        assert paused_at(store)["made"] == str(store.get_experiment(made_paused).start_time)[:19]


def test_0016_keeps_the_keys_of_experiments_deleted_after_it(db_url: str) -> None:
    """0016 adds ``deleted_create_keys``: an experiment created with a key before it and
    deleted after keeps its key there (owner, digest, id); its owner's removal drops it."""
    from determined.master.db import _engine

    with Store(db_url) as store:
        assert _engine.run_upgrade(store._engines, "0015")[1] == "0015"
        with store._engines.write.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO users (username, admin, active, created_at) "
                "VALUES ('carol', :f, :t, '2026-11-29 00:00:00')"), {"f": False, "t": True})
            owner = conn.execute(sa.text("SELECT id FROM users WHERE username = 'carol'")).scalar()
            conn.execute(sa.text(
                "INSERT INTO experiments (state, config, model_def, owner_id, description, "
                "labels, archived, weight, start_time, create_key, create_digest) VALUES "
                "('CANCELED', '{}', :m, :o, 'keyed', '[]', :f, 1.0, '2026-11-29 00:00:00', "
                "'old-key', 'old-digest')"), {"m": b"x", "o": owner, "f": False})
        assert store.upgrade() == "0017"
        (exp,) = [e.id for e in store.list_experiments()]
        assert store.experiment_for_create_key("carol", "old-key") == (exp, "old-digest")
        store.delete_experiment(exp)
        assert store.experiment_for_create_key("carol", "old-key") is None
        assert store.deleted_experiment_for_create_key("carol", "old-key") == (exp, "old-digest")
        with store._engines.write.begin() as conn:
            conn.execute(sa.text("DELETE FROM users WHERE username = 'carol'"))
        with store._engines.read.connect() as conn:
            assert conn.execute(sa.text("SELECT COUNT(*) FROM deleted_create_keys")).scalar() == 0
