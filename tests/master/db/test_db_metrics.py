"""Metrics and logs: idempotence, bulk ingestion, concurrency and rate, on every backend."""

import datetime
import math
import re
import threading
from typing import Callable, List

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from determined.master.db import MetricsRow, NotFoundError, Store


def _in_threads(n: int, target: Callable[[int], None]) -> None:
    errors: List[BaseException] = []
    barrier = threading.Barrier(n)

    def run(i: int) -> None:
        barrier.wait()
        try:
            target(i)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_training_and_validation(store: Store, trial_id: int) -> None:
    batch = [{"loss": 0.5}, {"loss": 0.25}]
    assert store.add_training_metrics(trial_id, 2, {"loss": 0.375}, batch) is True
    assert store.add_validation_metrics(trial_id, 2, {"error": 0.1}) is True
    assert store.add_training_metrics(trial_id, 4, {"loss": 0.2}) is True
    rows = store.list_metrics(trial_id)
    keys = [(r.kind, r.total_batches) for r in rows]
    assert keys == [("training", 2), ("validation", 2), ("training", 4)]
    assert rows[0].metrics == {"loss": 0.375} and rows[0].batch_metrics == batch
    assert rows[1].batch_metrics is None and rows[2].batch_metrics is None
    assert rows[0].trial_id == trial_id and rows[0].end_time.tzinfo is not None
    assert [r.total_batches for r in store.list_metrics(trial_id, kind="validation")] == [2]
    with pytest.raises(ValueError, match="kind"):
        store.list_metrics(trial_id, kind="steps")


def test_report_again_keeps_first(store: Store, trial_id: int) -> None:
    assert store.add_training_metrics(trial_id, 100, {"loss": 1.0})
    assert store.add_training_metrics(trial_id, 100, {"loss": 2.0}) is False
    assert store.add_validation_metrics(trial_id, 100, {"error": 0.5})
    assert store.add_validation_metrics(trial_id, 100, {"error": 0.7}) is False
    bulk = [(trial_id, "training", 100, {"loss": 3.0}), (trial_id, "training", 200, {"loss": 4.0})]
    assert store.add_metrics_bulk(bulk) == 1
    assert [(r.kind, r.total_batches, r.metrics) for r in store.list_metrics(trial_id)] == [
        ("training", 100, {"loss": 1.0}),
        ("validation", 100, {"error": 0.5}),
        ("training", 200, {"loss": 4.0}),
    ]


def test_end_time_is_stored_as_other_times_are(store: Store, trial_id: int) -> None:
    """Metric rows bind their time once per call (not per row through SQLAlchemy): it
    must be stored in the form the other timestamps have, so that SQL compares them."""
    before = datetime.datetime.now(datetime.timezone.utc)
    store.add_training_metrics(trial_id, 1, {"loss": 0.5})
    store.add_training_metrics_many(trial_id, [(2, {"loss": 0.4}, None)])
    store.add_validation_metrics(trial_id, 2, {"error": 0.1})
    store.add_logs(trial_id, ["a line"])  # a timestamp bound by SQLAlchemy
    rows = store.list_metrics(trial_id)
    after = datetime.datetime.now(datetime.timezone.utc)
    assert all(before <= r.end_time <= after for r in rows)
    engine = sa.create_engine(store.url)
    try:
        with engine.connect() as conn:
            log_time = conn.exec_driver_sql("SELECT timestamp FROM trial_logs").scalar_one()
            ends = conn.exec_driver_sql("SELECT end_time FROM metrics").scalars().all()
    finally:
        engine.dispose()
    assert len(ends) == 3 and all(type(e) is type(log_time) for e in ends)
    if isinstance(log_time, str):  # SQLite: text, compared as text
        shape = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?")
        assert shape.fullmatch(log_time) and all(shape.fullmatch(e) for e in ends), (log_time, ends)
    else:  # PostgreSQL: timestamptz
        assert all(e.utcoffset() is not None for e in ends)


def test_non_finite_and_nested_values_round_trip(store: Store, trial_id: int) -> None:
    metrics = {
        "loss": math.nan, "up": math.inf, "down": -math.inf, "hist": [1, 2.5, None], "name": "NaN"
    }
    store.add_training_metrics(trial_id, 1, metrics, [{"loss": math.nan}])
    (row,) = store.list_metrics(trial_id)
    assert math.isnan(row.metrics["loss"]) and math.isnan(row.batch_metrics[0]["loss"])
    assert (row.metrics["up"], row.metrics["down"]) == (math.inf, -math.inf)
    assert row.metrics["hist"] == [1, 2.5, None] and row.metrics["name"] == "NaN"


def test_bulk_forms(store: Store, trial_id: int) -> None:
    rows = [
        MetricsRow(trial_id, "training", 10, {"loss": 1.0}, [{"loss": 1.0}]),
        (trial_id, "validation", 10, {"error": 0.5}),
        {"trial_id": trial_id, "kind": "training", "total_batches": 20, "metrics": {"loss": 0.5}},
    ]
    assert store.add_metrics_bulk(rows) == 3
    assert store.add_metrics_bulk([]) == 0
    assert store.add_metrics_bulk(iter(rows)) == 0
    assert len(store.list_metrics(trial_id)) == 3


@pytest.mark.parametrize(
    "row, match",
    [
        ((1, "steps", 10, {}), "kind"),
        ((1, "training", -1, {}), "total_batches"),
        ((1, "training", 10, [1]), "metrics"),
        ((1, "training"), "Expected rows\\[0\\]"),
        (dict(trial_id=1, kind="training", total_batches=1, metrics={}, extra=1), "extra"),
        ((1, "training", 1, {}, "not a list"), "batch_metrics"),
    ],
)
def test_bulk_checks_rows(store: Store, row, match) -> None:
    with pytest.raises(ValueError, match=match):
        store.add_metrics_bulk([row])


def test_values_that_are_not_json_are_refused_before_the_write(store: Store,
                                                               trial_id: int) -> None:
    with pytest.raises(ValueError, match="row.metrics to be JSON-serializable"):
        store.add_training_metrics(trial_id, 1, {"loss": object()})
    with pytest.raises(ValueError, match=r"reports\[1\].batch_metrics"):
        store.add_training_metrics_many(trial_id, [(1, {}, None), (2, {}, [{"x": object()}])])
    cycle: dict = {}
    cycle["self"] = cycle
    with pytest.raises(ValueError, match="rows\\[0\\].metrics"):
        store.add_metrics_bulk([(trial_id, "validation", 1, cycle)])
    assert store.list_metrics(trial_id) == []
    assert store.add_training_metrics(trial_id, 1, {"loss": 0.5}) is True


def test_many_training_reports_checked_and_stored_once(store: Store, trial_id: int) -> None:
    reports = [(b, {"loss": 1.0 / b}, [{"loss": 0.5}] * 2, 64) for b in range(1, 6)]
    assert store.add_training_metrics_many(trial_id, reports) == 5
    assert store.add_training_metrics_many(trial_id, reports[3:] + [(6, {}, None)]) == 1
    rows = store.list_metrics(trial_id)
    assert [(r.total_batches, r.metrics.get("loss")) for r in rows] == [
        (1, 1.0), (2, 0.5), (3, 1 / 3), (4, 0.25), (5, 0.2), (6, None)]
    assert rows[2].metrics == {"loss": 1 / 3} and rows[0].batch_metrics == [{"loss": 0.5}] * 2
    assert store.get_trial(trial_id).total_batches == 6
    assert store.add_training_metrics_many(trial_id, []) == 0
    for bad, match in [([(7, {})], r"reports\[0\] to be \(total_batches"),
                       ([(7, {}, None), ("8", {}, None)], r"reports\[1\].total_batches"),
                       ([(7, [], None)], r"reports\[0\].metrics"),
                       ([(7, {}, None, -1)], r"reports\[0\].num_inputs"),
                       ([7], r"reports\[0\] to be")]:
        with pytest.raises(ValueError, match=match):
            store.add_training_metrics_many(trial_id, bad)
    assert len(store.list_metrics(trial_id)) == 6


def test_unknown_trial(store: Store, trial_id: int) -> None:
    with pytest.raises(NotFoundError, match="trial 999"):
        store.add_training_metrics(999, 1, {})
    with pytest.raises(NotFoundError, match="trial 999"):
        store.add_logs(999, ["x"])
    # A bulk call is one transaction: nothing of it is stored.
    with pytest.raises(NotFoundError, match="trial 999"):
        store.add_metrics_bulk([(trial_id, "training", 1, {}), (999, "training", 1, {})])
    assert store.list_metrics(trial_id) == []
    assert store.add_training_metrics(trial_id, 1, {}) is True


def test_a_bad_writer_does_not_fail_its_group(store: Store, trial_id: int) -> None:
    def work(i: int) -> None:
        if i % 5 == 0:
            with pytest.raises(NotFoundError):
                store.add_training_metrics(10_000 + i, 1, {"loss": 0.0})
        else:
            for b in range(20):
                assert store.add_training_metrics(trial_id, i * 1000 + b, {"loss": 0.0})

    _in_threads(20, work)
    assert len(store.list_metrics(trial_id)) == 16 * 20


def test_logs(store: Store, trial_id: int, make_experiment) -> None:
    assert store.get_logs(trial_id) == []
    assert store.add_logs(trial_id, [f"line {i}" for i in range(10)]) == 10
    assert store.add_logs(trial_id, []) == 0
    other = store.create_trial(make_experiment(), "r", {}, 1)
    store.add_logs(other, ["other trial"])
    logs = store.get_logs(trial_id)
    assert [line.line for line in logs] == [f"line {i}" for i in range(10)]
    assert [line.id for line in logs] == sorted(line.id for line in logs)
    ident, timestamp, text = logs[0]
    assert text == "line 0" and timestamp.tzinfo is not None
    assert [x.line for x in store.get_logs(trial_id, limit=3)] == ["line 0", "line 1", "line 2"]
    assert [x.line for x in store.get_logs(trial_id, tail=3)] == ["line 7", "line 8", "line 9"]
    assert [x.line for x in store.get_logs(trial_id, after_id=logs[7].id)] == ["line 8", "line 9"]
    assert store.get_logs(trial_id, after_id=logs[-1].id) == []
    assert store.get_logs(trial_id, tail=0) == []
    assert [x.line for x in store.get_logs(other)] == ["other trial"]
    with pytest.raises(ValueError, match="lines"):
        store.add_logs(trial_id, "not a list")
    with pytest.raises(ValueError, match="lines\\[1\\]"):
        store.add_logs(trial_id, ["ok", 5])


def test_concurrent_writers_lose_nothing(store: Store, make_experiment) -> None:
    exp = make_experiment()
    trials = [store.create_trial(exp, f"r{i}", {}, i) for i in range(8)]

    def work(i: int) -> None:
        trial = trials[i % len(trials)]
        for b in range(15):
            batches = (i // len(trials)) * 1000 + b
            store.add_training_metrics(trial, batches, {"loss": float(b)})
            if b % 5 == 0:
                store.add_metrics_bulk([(trial, "validation", batches, {"e": 1.0})])
                store.add_logs(trial, [f"{i}-{b}-a", f"{i}-{b}-b"])
                store.update_trial(trial, total_batches=batches)
                store.add_checkpoint(f"ck-{i}-{b}", trial, batches, {}, {}, "f", "cloudpickle")
                store.save_searcher_snapshot(exp, {"i": i, "b": b}, b)

    _in_threads(24, work)
    metrics = [m for t in trials for m in store.list_metrics(t)]
    assert len([m for m in metrics if m.kind == "training"]) == 24 * 15
    assert len([m for m in metrics if m.kind == "validation"]) == 24 * 3
    assert sum(len(store.get_logs(t, limit=10_000)) for t in trials) == 24 * 3 * 2
    assert len(store.list_checkpoints(experiment_id=exp)) == 24 * 3


def test_concurrent_duplicates_stored_once(store: Store, trial_id: int) -> None:
    wins: List[bool] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        for b in range(10):
            ok = store.add_training_metrics(trial_id, b, {"from": i})
            with lock:
                wins.append(ok)

    _in_threads(10, work)
    assert sum(wins) == 10 and len(wins) == 100
    assert [r.total_batches for r in store.list_metrics(trial_id)] == list(range(10))


def test_fifty_concurrent_reporters_store_every_row(store: Store, make_experiment) -> None:
    """50 concurrent reporters mixing single, bulk and validation writes: every row is
    stored once (the rate is measured by benchmarks/cluster/ingest.py, not here)."""
    reporters, rows = 50, 40
    exp = make_experiment()
    trials = [store.create_trial(exp, f"r{i}", {}, i) for i in range(reporters)]
    per_batch = [{"loss": 0.5, "accuracy": 0.9}] * 10

    def report(i: int) -> None:
        for b in range(rows):
            if b % 2:
                store.add_training_metrics(trials[i], b, {"loss": 0.5}, per_batch)
            elif b % 4 == 0:
                store.add_metrics_bulk([(trials[i], "training", b, {"loss": 0.5}, per_batch)])
            else:
                store.add_validation_metrics(trials[i], b, {"error": 0.5})

    _in_threads(reporters, report)
    for t in trials:
        stored = store.list_metrics(t)
        assert [r.total_batches for r in stored] == list(range(rows))
        assert all(r.batch_metrics == per_batch for r in stored if r.kind == "training")


_ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("report"), st.sampled_from(["training", "validation"]), st.integers(0, 6)
        ),
        st.tuples(st.just("rollback"), st.integers(0, 6)),
    ),
    max_size=15,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_ops)
def test_reports_and_rollbacks_match_a_model(store: Store, make_experiment, ops) -> None:
    """Whatever the order of reports and rollbacks, the store holds exactly the first
    report of each (kind, batches) since the last rollback below it."""
    trial = store.create_trial(make_experiment(), "r", {}, 0)
    model = {}
    for n, op in enumerate(ops):
        if op[0] == "report":
            _, kind, batches = op
            fresh = (kind, batches) not in model
            assert store.add_metrics_bulk([(trial, kind, batches, {"n": n})]) == int(fresh)
            model.setdefault((kind, batches), n)
        else:
            store.rollback_trial(trial, op[1])
            model = {k: v for k, v in model.items() if k[1] <= op[1]}
    stored = {(r.kind, r.total_batches): r.metrics["n"] for r in store.list_metrics(trial)}
    assert stored == model


def test_concurrent_creates_of_one_request(store: Store, make_experiment) -> None:
    from determined.master.db import ConflictError

    exp = make_experiment()
    outcomes: List[str] = []

    def work(i: int) -> None:
        try:
            store.create_trial(exp, "same", {}, i)
            outcomes.append("created")
        except ConflictError:
            outcomes.append("conflict")

    _in_threads(8, work)
    assert sorted(outcomes) == ["conflict"] * 7 + ["created"]
    assert len(store.list_trials(exp)) == 1
