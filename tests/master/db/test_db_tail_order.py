"""Live tails read "the rows after id X" (``det ... logs -f``, the web UI's ``/ui/events``):
that only works if a row can never become visible after a row with a larger id.

On PostgreSQL a sequence hands out the id at insert time, so two writer transactions
that overlap can commit out of id order: a follower that has already seen the larger
id never sees the smaller one. The writer tests below hold one writer's transaction open
after it has taken its id (another connection locks the row its foreign key checks),
lets a second writer try to commit meanwhile, opens a follower, and then checks that
the follower still gets the held row. On SQLite a held writer blocks before taking an
id (``BEGIN IMMEDIATE``); the same assertions hold there.
"""

import contextlib
import sqlite3
import threading
import time
import types
from typing import Any, Callable, Iterator, List

import pytest
import sqlalchemy as sa

from determined.master.api import _ui_queries as q
from determined.master.db import Store

pytestmark = pytest.mark.timeout(120)

# How long a second writer gets to commit while the first is held. Under load it may not
# manage to, and the test then passes without showing a reorder; it never fails by it.
SECOND_WRITER_WAIT_S = 3.0


@contextlib.contextmanager
def held(store: Store, table: str, key: Any) -> Iterator[None]:
    """Delay the writers of rows that refer to ``table``'s row ``key`` until the block
    ends: PostgreSQL, a row lock (their foreign key check waits on it, after the insert
    took its id); SQLite, the database's write lock (every writer waits, before taking
    an id)."""
    url = sa.engine.make_url(store.url)
    if store.backend == "sqlite":
        conn = sqlite3.connect(url.database, isolation_level=None, timeout=30)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.rollback()
            conn.close()
        return
    import psycopg

    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        conn.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE", (key,))
        try:
            yield
        finally:
            conn.rollback()


def wait_for_lock_wait(store: Store) -> None:
    """On PostgreSQL, return once a session of the store's database waits on a lock (the
    held writer, its id taken). SQLite's held writer waits in its busy handler, which
    nothing shows; the order of the writers does not matter there."""
    if store.backend == "sqlite":
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with store._read() as s:
            waiting = s.scalar(sa.text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"))
        if waiting:
            return
        time.sleep(0.02)
    raise AssertionError("the held writer never waited on the lock")


class Writer(threading.Thread):
    """A store call on its own thread (as the master's request handlers make them)."""

    def __init__(self, call: Callable[[], Any]):
        super().__init__(daemon=True)
        self.call = call
        self.error: Any = None

    def run(self) -> None:
        try:
            self.call()
        except BaseException as e:  # noqa: BLE001 - reported by finish()
            self.error = e

    def finish(self) -> None:
        self.join(60)
        assert not self.is_alive(), "a writer never finished"
        assert self.error is None, self.error


def _tasks(store: Store, *ids: str) -> None:
    for id in ids:
        store.create_task(id, "command", "determined", {"entrypoint": "true"}, None)


def _newest_id(store: Store, table: str) -> int:
    """The newest id of all rows of ``table``: where a follower of every owner's rows
    stands once it has read everything visible."""
    with store._read() as s:
        return int(s.scalar(sa.text(f"SELECT max(id) FROM {table}")) or 0)


def test_task_log_line_committed_late_reaches_a_follower(store: Store) -> None:
    """Two tasks log at once; a follower that read every line visible between the two
    commits still gets the held task's line."""
    _tasks(store, "held", "other")
    with held(store, "tasks", "held"):
        first = Writer(lambda: store.add_task_logs("held", ["committed last"]))
        first.start()
        wait_for_lock_wait(store)
        second = Writer(lambda: store.add_task_logs("other", ["committed first"]))
        second.start()
        second.join(SECOND_WRITER_WAIT_S)
        opened_at = _newest_id(store, "task_logs")
    first.finish()
    second.finish()
    assert [x.line for x in store.get_task_logs("held", after_id=opened_at)] == [
        "committed last"]
    assert [x.line for x in store.get_task_logs("other")] == ["committed first"]


def _trials(store: Store, n: int) -> List[int]:
    exp = store.create_experiment(config={"description": "tails", "searcher": {"name": "grid"}},
                                  model_def=b"model", owner="determined")
    return [store.create_trial(exp, f"r{i}", {"i": i}, seed=i) for i in range(n)]


def _metrics_follow(store: Store, trial_ids: List[int], second_store: Store) -> None:
    """The experiment page follows every trial's metrics with one id: it must get the
    held trial's row although the other trial's row was stored while it was held."""
    held_trial, other_trial = trial_ids
    with held(store, "trials", held_trial):
        first = Writer(lambda: store.add_training_metrics(held_trial, 10, {"loss": 1.0}))
        first.start()
        wait_for_lock_wait(store)
        second = Writer(lambda: second_store.add_training_metrics(other_trial, 10, {"loss": 2.0}))
        second.start()
        second.join(SECOND_WRITER_WAIT_S)
        seen = q.new_metric_rows(store, trial_ids, 0)
        cursor = max((r.id for r in seen), default=0)
    first.finish()
    second.finish()
    later = q.new_metric_rows(store, trial_ids, cursor)
    assert sorted(r.trial_id for r in seen + later) == sorted(trial_ids)


def test_metrics_of_two_trials_reach_one_follower(store: Store) -> None:
    """Metrics of several trials, as one master stores them (the group-commit writer)."""
    _metrics_follow(store, _trials(store, 2), store)


def test_metrics_of_two_writers_on_one_database_reach_one_follower(store: Store) -> None:
    """Two stores on one database (two master processes, or a tool beside the master):
    their writers still commit the tail tables' rows in id order."""
    with Store(store.url) as second:
        _metrics_follow(store, _trials(store, 2), second)


def test_trial_log_line_committed_late_reaches_a_follower(store: Store) -> None:
    """Trial logs: a second process's line cannot overtake a held one either."""
    held_trial, other_trial = _trials(store, 2)
    with Store(store.url) as second, held(store, "trials", held_trial):
        first = Writer(lambda: store.add_logs(held_trial, ["committed last"]))
        first.start()
        wait_for_lock_wait(store)
        other = Writer(lambda: second.add_logs(other_trial, ["committed first"]))
        other.start()
        other.join(SECOND_WRITER_WAIT_S)
        opened_at = _newest_id(store, "trial_logs")
    first.finish()
    other.finish()
    assert [x.line for x in store.get_logs(held_trial, after_id=opened_at)] == ["committed last"]


def test_tail_ids_come_one_at_a_time_on_postgres(postgres_server) -> None:
    """Sequences that cache ids per connection would hand a later transaction a smaller
    id even from a single writer: the tail tables' sequences must not cache."""
    with Store(postgres_server.new_database(migrated=True)) as store, store._read() as s:
        caches = {name: cache for name, cache in s.execute(sa.text(
            "SELECT sequencename, cache_size FROM pg_sequences "
            "WHERE sequencename IN ('metrics_id_seq', 'trial_logs_id_seq', 'task_logs_id_seq')"))}
    assert caches == {"metrics_id_seq": 1, "trial_logs_id_seq": 1, "task_logs_id_seq": 1}


def test_ui_channel_log_tails_survive_the_newest_lines_being_deleted(store: Store) -> None:
    """A trial page's channel opened without ``logs_after`` starts at the newest line;
    the experiment whose lines were the newest is deleted, and SQLite gives the next
    line (of the followed trial) an id that is no longer the largest ever: it is sent."""
    from determined.master.api._ui import _Feed

    (deleted_trial,), (followed,) = _trials(store, 1), _trials(store, 1)
    store.add_logs(followed, ["before the page opened"])
    store.add_logs(deleted_trial, ["the newest line, soon deleted"])
    store.create_task("followed-task", "command", "determined", {"entrypoint": "true"}, None)
    feed = _Feed(types.SimpleNamespace(store=store), False, None, followed, None, None)
    feed.follow_tasks(False, "followed-task", None)
    assert not any("logs" in chunk for chunk in feed.poll())
    store.delete_experiment(store.get_trial(deleted_trial).experiment_id)
    store.add_logs(followed, ["after the page opened"])
    store.add_task_logs("followed-task", ["a task's line"])
    sent = "".join(feed.poll())
    assert "after the page opened" in sent and "before the page opened" not in sent
    assert "a task's line" in sent
