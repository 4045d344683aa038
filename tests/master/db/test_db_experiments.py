"""Experiments, searcher snapshots and model definitions, on every backend."""

import math

import pytest

from determined.master.db import ConflictError, NotFoundError, Store
from determined.master.db._types import RawJSON


def test_create_and_get(store: Store) -> None:
    config = {
        "description": "mnist",
        "labels": ["a", "b"],
        "resources": {"weight": 2.5, "max_slots": 4},
        "hyperparameters": {"lr": {"type": "double", "minval": 0.1, "maxval": 1.0}},
    }
    exp = store.create_experiment(config, b"\x00\x01tarball", "admin")
    got = store.get_experiment(exp)
    assert got.id == exp and got.state == "PAUSED" and got.owner == "admin"
    assert got.config == config
    assert (got.description, got.labels, got.weight, got.max_slots) == ("mnist", ["a", "b"], 2.5, 4)
    assert got.priority is None and got.progress is None and got.parent_id is None
    assert not got.archived and got.end_time is None and got.start_time.tzinfo is not None
    assert store.get_model_def(exp) == b"\x00\x01tarball"

    child = store.create_experiment({}, b"", "determined", parent_id=exp, state="ACTIVE")
    got_child = store.get_experiment(child)
    assert got_child.parent_id == exp and got_child.state == "ACTIVE" and got_child.weight == 1.0
    assert child > exp


def test_create_errors(store: Store, make_experiment) -> None:
    with pytest.raises(NotFoundError, match="user 'nobody'"):
        make_experiment(owner="nobody")
    with pytest.raises(NotFoundError, match="experiment 999"):
        make_experiment(parent_id=999)
    with pytest.raises(ValueError, match="Received: state='COMPLETED'"):
        make_experiment(state="COMPLETED")
    with pytest.raises(ValueError, match="config"):
        make_experiment(config=[1, 2])
    with pytest.raises(ValueError, match="model_def"):
        make_experiment(model_def="text")
    assert store.list_experiments(include_archived=True) == []


def test_create_key_is_stored_once_per_owner(store: Store, make_experiment) -> None:
    """An idempotency key is stored with its experiment; the same owner's second create
    with it stores nothing (ConflictError); another owner's key is another key."""
    assert store.experiment_for_create_key("admin", "k1") is None
    first = make_experiment(owner="admin", create_key=("k1", "d1"))
    assert store.experiment_for_create_key("admin", "k1") == (first, "d1")
    with pytest.raises(ConflictError, match="user 'admin' already created an experiment "
                                            "with idempotency key 'k1'"):
        make_experiment(owner="admin", create_key=("k1", "d2"))
    assert [e.id for e in store.list_experiments()] == [first]
    other = make_experiment(owner="determined", create_key=("k1", "d3"))
    assert store.experiment_for_create_key("determined", "k1") == (other, "d3")
    assert store.experiment_for_create_key("admin", "k1") == (first, "d1")
    make_experiment(owner="admin")  # no key: never collides
    make_experiment(owner="admin")
    with pytest.raises(ValueError, match="create_key"):
        make_experiment(owner="admin", create_key=("", "d"))


def test_a_deleted_experiments_key_is_kept_for_a_day(store: Store, make_experiment) -> None:
    """Deleting an experiment keeps its idempotency key (owner, digest, id) for
    CREATE_KEY_RETENTION; older keys are pruned at the next delete of a keyed experiment
    or by prune_deleted_create_keys (a master start)."""
    import datetime

    import sqlalchemy as sa

    from determined.master.db import _models as m
    from determined.master.db._experiments import CREATE_KEY_RETENTION
    from determined.master.db._types import utcnow

    def age(key: str, by: datetime.timedelta) -> None:
        table = m.DeletedCreateKey.__table__
        with store._engines.write.begin() as conn:
            conn.execute(table.update().where(table.c.create_key == key)
                         .values(deleted_at=utcnow() - by))

    def kept() -> list:
        with store._engines.read.connect() as conn:
            return sorted(r[0] for r in conn.execute(
                sa.text("SELECT create_key FROM deleted_create_keys")))

    first = make_experiment(owner="admin", create_key=("k1", "d1"))
    plain = make_experiment(owner="admin")
    store.delete_experiment(first)
    store.delete_experiment(plain)
    assert store.experiment_for_create_key("admin", "k1") is None
    assert store.deleted_experiment_for_create_key("admin", "k1") == (first, "d1")
    assert store.deleted_experiment_for_create_key("determined", "k1") is None
    assert kept() == ["k1"]

    age("k1", CREATE_KEY_RETENTION + datetime.timedelta(minutes=1))
    assert store.deleted_experiment_for_create_key("admin", "k1") is None  # expired
    second = make_experiment(owner="admin", create_key=("k2", "d2"))
    store.delete_experiment(second)  # prunes k1
    assert kept() == ["k2"]
    # The same key used again after it expired (not pruned yet) is kept anew.
    third = make_experiment(owner="admin", create_key=("k2", "d3"))
    store.delete_experiment(third)
    assert store.deleted_experiment_for_create_key("admin", "k2") == (third, "d3")
    age("k2", CREATE_KEY_RETENTION)
    assert store.prune_deleted_create_keys() == 1
    assert kept() == []


def test_missing_experiment(store: Store) -> None:
    for call in (
        lambda: store.get_experiment(42),
        lambda: store.get_model_def(42),
        lambda: store.set_experiment_state(42, "ACTIVE"),
        lambda: store.update_experiment(42, description="x"),
        lambda: store.save_searcher_snapshot(42, {}, 0),
        lambda: store.delete_experiment(42),
    ):
        with pytest.raises(NotFoundError, match="experiment 42 not found"):
            call()
    assert store.get_searcher_snapshot(42) is None


def test_list_filters(store: Store, make_experiment) -> None:
    store.create_user("alice")
    a = make_experiment(owner="alice")
    b = make_experiment()
    c = make_experiment()
    store.update_experiment(b, archived=True)
    assert [e.id for e in store.list_experiments()] == [a, c]
    assert [e.id for e in store.list_experiments(include_archived=True)] == [a, b, c]
    assert [e.id for e in store.list_experiments(owner="alice")] == [a]
    mine = store.list_experiments(include_archived=True, owner="determined")
    assert [e.id for e in mine] == [b, c]
    assert store.list_experiments(owner="nobody") == []


def test_update_experiment(store: Store, make_experiment) -> None:
    exp = make_experiment()
    before = store.get_experiment(exp)
    after = store.update_experiment(
        exp, description="new", labels=["x"], archived=True, weight=0.5, priority=3,
        max_slots=2, progress=0.25,
    )
    assert (after.description, after.labels, after.archived) == ("new", ["x"], True)
    assert (after.weight, after.priority, after.max_slots, after.progress) == (0.5, 3, 2, 0.25)
    assert after.state == before.state and after.config == before.config
    assert store.get_experiment(exp) == after
    cleared = store.update_experiment(exp, max_slots=None, priority=None, progress=None)
    assert (cleared.max_slots, cleared.priority, cleared.progress) == (None, None, None)
    assert cleared.description == "new"  # untouched
    new_config = {**before.config, "checkpoint_storage": {"save_trial_best": 3}}
    assert store.update_experiment(exp, config=new_config).config == new_config


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"weight": -1}, "weight"),
        ({"weight": math.inf}, "weight"),
        ({"progress": 1.5}, "progress"),
        ({"labels": "abc"}, "labels"),
        ({"archived": 1}, "archived"),
        ({"max_slots": -2}, "max_slots"),
        ({"priority": 1.5}, "priority"),
        ({"description": None}, "description"),
    ],
)
def test_update_experiment_checks_arguments(store: Store, make_experiment, kwargs, name) -> None:
    exp = make_experiment()
    with pytest.raises(ValueError, match=f"Expected {name} .*Received: {name}="):
        store.update_experiment(exp, **kwargs)


def test_searcher_snapshot(store: Store, make_experiment) -> None:
    exp = make_experiment()
    assert store.get_searcher_snapshot(exp) is None
    store.save_searcher_snapshot(exp, {"rungs": [1, 2], "best": math.inf}, 3)
    snap = store.get_searcher_snapshot(exp)
    assert snap.experiment_id == exp and snap.events_applied == 3
    assert snap.snapshot == {"rungs": [1, 2], "best": math.inf}
    store.save_searcher_snapshot(exp, {"rungs": [1, 2, 3], "nan": math.nan}, 7)
    snap2 = store.get_searcher_snapshot(exp)
    assert snap2.events_applied == 7 and snap2.snapshot["rungs"] == [1, 2, 3]
    assert math.isnan(snap2.snapshot["nan"]) and snap2.updated_at >= snap.updated_at
    with pytest.raises(ValueError, match="events_applied"):
        store.save_searcher_snapshot(exp, {}, -1)


def test_searcher_snapshot_given_encoded(store: Store, make_experiment) -> None:
    exp = make_experiment()
    store.save_searcher_snapshot(exp, RawJSON('{"rungs":[1,2],"best":Infinity}'), 2)
    assert store.get_searcher_snapshot(exp).snapshot == {"rungs": [1, 2], "best": math.inf}
    with pytest.raises(ValueError, match="snapshot"):
        store.save_searcher_snapshot(exp, RawJSON("[1, 2]"), 3)


def test_delete_experiment_cascades(store: Store, make_experiment) -> None:
    exp = make_experiment()
    keep = make_experiment()
    trial = store.create_trial(exp, "r1", {}, 1)
    other = store.create_trial(keep, "r1", {}, 1)
    store.add_training_metrics(trial, 10, {"loss": 1.0})
    store.add_checkpoint("c1", trial, 10, {}, {}, "f", "cloudpickle")
    store.add_logs(trial, ["hello"])
    token = store.create_trial_token(trial)
    store.save_searcher_snapshot(exp, {"a": 1}, 1)
    store.delete_experiment(exp)
    with pytest.raises(NotFoundError):
        store.get_trial(trial)
    with pytest.raises(NotFoundError):
        store.get_checkpoint("c1")
    assert store.list_metrics(trial) == [] and store.get_logs(trial) == []
    assert store.check_trial_token(token) is None and store.get_searcher_snapshot(exp) is None
    assert store.get_trial(other).experiment_id == keep


def test_trial_ids_are_unique_cluster_wide(store: Store, make_experiment) -> None:
    ids = [store.create_trial(make_experiment(), "r1", {}, 0) for _ in range(3)]
    assert len(set(ids)) == 3


def test_closed_store(db_url: str) -> None:
    from determined.master.db import StoreError

    store = Store(db_url)
    store.upgrade()
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_experiments()
    with pytest.raises(StoreError, match="closed"):
        store.add_logs(1, ["x"])


def test_conflict_error_is_store_error() -> None:
    from determined.errors import DeterminedError

    assert issubclass(ConflictError, DeterminedError)
    assert issubclass(NotFoundError, LookupError)
