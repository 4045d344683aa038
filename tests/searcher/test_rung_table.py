"""The rung table a bracket search reports: its own brackets, rung lengths and results."""

import collections
import json
import math
from typing import Any, Dict, List

from determined.searcher import (
    BracketRungs,
    Close,
    Create,
    ExitedReason,
    Searcher,
    Train,
    Validate,
    make_searcher,
)

from ._helpers import METRIC, curve, make_config


def _drive(searcher: Searcher, exit_ids=(), larger_is_better=False) -> Dict[int, List[Any]]:
    """Run the search to the end, trials in request-id order; returns each trial's
    ``(length, metric)`` validations."""
    queue = collections.deque(searcher.start())
    hparams: Dict[int, Any] = {}
    length: Dict[int, int] = {}
    seen: Dict[int, List[Any]] = collections.defaultdict(list)
    while queue:
        op = queue.popleft()
        if isinstance(op, Create):
            hparams[op.request_id] = op.hparams
            queue.extend(searcher.on_trial_created(op.request_id))
        elif isinstance(op, Train):
            length[op.request_id] = op.length.units
        elif isinstance(op, Validate):
            rid = op.request_id
            if rid in exit_ids:
                queue.extend(searcher.on_trial_exited_early(rid, ExitedReason.ERRORED))
                continue
            value = curve(hparams[rid], length[rid], rid)
            value = -value if larger_is_better else value
            seen[rid].append((length[rid], value))
            queue.extend(searcher.on_validation_completed(rid, {METRIC: value}))
        elif isinstance(op, Close):
            if not searcher.is_finished(op.request_id):
                queue.extend(searcher.on_trial_closed(op.request_id))
    return seen


def _two_brackets(**fields):
    # standard mode, 3 rungs: brackets of rungs [4, 16, 64] and [16, 64] batches.
    return make_config("adaptive_asha", max_trials=16, max_rungs=3,
                       max_length={"batches": 64}, **fields)


def _check(table: List[BracketRungs], seen: Dict[int, List[Any]], bad=()) -> None:
    for bracket in table:
        for i, (at, rung) in enumerate(zip(bracket.lengths, bracket.results)):
            for r in rung:
                lengths = [n for n, _ in seen.get(r.request_id, [])]
                if r.request_id in bad:
                    assert math.isnan(r.metric)
                    continue
                # The trial trained exactly to this rung's length and was judged there.
                assert at in lengths and (at, r.metric) in seen[r.request_id]
                if i + 1 < len(bracket.lengths):
                    assert r.promoted == (bracket.lengths[i + 1] in lengths)
                else:
                    assert not r.promoted


def test_adaptive_asha_reports_each_bracket_with_its_own_rungs() -> None:
    config = _two_brackets()
    searcher = make_searcher(config)
    seen = _drive(searcher)
    table = searcher.rung_table()
    assert [(b.bracket, b.lengths) for b in table] == [(0, (4, 16, 64)), (1, (16, 64))]
    first = {r.request_id for r in table[0].results[0]}
    second = {r.request_id for r in table[1].results[0]}
    # Every trial starts in exactly one bracket, at that bracket's first rung.
    assert first and second and not first & second
    assert first | second == set(searcher.request_ids)
    for rid in second:
        assert seen[rid][0][0] == 16  # first trained to 16: never judged at 4
    for rid in first:
        assert seen[rid][0][0] == 4
    # The first bracket's 16-batch rung holds only its own promotees.
    assert {r.request_id for r in table[0].results[1]} <= first
    assert {r.request_id for r in table[0].results[1]} == {
        r.request_id for r in table[0].results[0] if r.promoted}
    _check(table, seen)
    for bracket in table:
        for rung in bracket.results:
            metrics = [r.metric for r in rung]
            assert metrics == sorted(metrics)  # best first (smaller is better)
    # The same table after a snapshot round trip (what the master shows after a restart).
    restored = Searcher.restore(config, json.loads(json.dumps(searcher.snapshot())))
    assert restored.rung_table() == table


def test_rung_metrics_are_as_validated_and_exited_trials_have_none() -> None:
    searcher = make_searcher(_two_brackets(smaller_is_better=False))
    seen = _drive(searcher, exit_ids={3}, larger_is_better=True)
    table = searcher.rung_table()
    _check(table, seen, bad={3})
    rung = table[0].results[0]
    metrics = [r.metric for r in rung if not math.isnan(r.metric)]
    assert metrics == sorted(metrics, reverse=True)  # best first: largest
    assert all(m < 0 for m in metrics)  # as reported, not sign-flipped
    assert rung[-1].request_id == 3 and not rung[-1].promoted


def test_synchronous_halving_reports_its_plans() -> None:
    searcher = make_searcher(make_config("adaptive_simple", max_trials=20, max_rungs=3,
                                         max_length={"batches": 16}))
    seen = _drive(searcher)
    table = searcher.rung_table()
    assert [(b.lengths, [len(r) for r in b.results]) for b in table] == [
        ((1, 4, 16), [10, 2, 1]), ((4, 16), [10, 2])]
    _check(table, seen)


def test_searches_without_rungs_have_no_table() -> None:
    for name in ("single", "random", "grid"):
        fields = {"max_trials": 2} if name == "random" else {}
        searcher = make_searcher(make_config(name, **fields))
        assert searcher.rung_table() is None


def test_time_metric_brackets_report_rungs_at_time_values() -> None:
    config = make_config("adaptive_asha", max_trials=8, divisor=2.0, max_rungs=3,
                         mode="aggressive", max_concurrent_trials=2, time_metric="batches",
                         max_time=64)
    del config["searcher"]["max_length"]
    s = make_searcher(config)
    s.start()
    for rid in (1, 2):
        s.on_trial_created(rid)
    s.on_validation_reported(1, {METRIC: 0.5, "batches": 16})  # continues at rung 0
    s.on_validation_reported(2, {METRIC: 0.9, "batches": 40})  # stopped at rung 0
    (bracket,) = s.rung_table()
    assert bracket.lengths == (16, 32, 64)
    assert [(r.request_id, r.metric, r.promoted) for r in bracket.results[0]] == [
        (1, 0.5, True), (2, 0.9, False)]
    assert bracket.results[1:] == ((), ())
