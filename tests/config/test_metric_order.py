"""The one metric order: NaN (or no value) is never better and sorts last, for either
direction; the GC, the engine's best checkpoint, the in-process host and the searcher's
signed metric all follow it."""

import math

import pytest

from determined._metric_order import MetricOrder
from determined.config import MetricOrder as Exported
from determined.engine._checkpoints import best_checkpoint
from determined.harness._host import OpKind, TrialOp
from determined.harness._inprocess import InProcessHost
from determined.storage._gc import CheckpointRecord, checkpoints_to_keep

NAN = float("nan")


@pytest.mark.parametrize("smaller", [True, False])
def test_nan_is_never_better_and_sorts_last(smaller):
    order = MetricOrder(smaller)
    good, bad = (0.1, 0.9) if smaller else (0.9, 0.1)
    assert order.better(good, bad) and not order.better(bad, good)
    assert order.better(bad, None) and order.better(bad, NAN)
    assert not order.better(NAN, bad) and not order.better(NAN, None)
    assert not order.better(math.inf if smaller else -math.inf, bad)
    assert not order.better(None, bad) and not order.better("0.1", bad)
    ranked = sorted([NAN, bad, None, good], key=order.key)
    assert ranked[:2] == [good, bad] and math.isnan(ranked[2]) and ranked[3] is None
    assert order.best([NAN, bad, good, None]) == good
    assert order.best([NAN, None]) is None
    assert order.signed(NAN) == math.inf and order.signed(good) == order.sign * good


def test_order_of_a_config_and_the_package_face():
    assert MetricOrder.of({"searcher": {"smaller_is_better": False}}) == MetricOrder(False)
    assert MetricOrder.of({}) == MetricOrder(True)
    assert Exported is MetricOrder


def test_gc_and_best_checkpoint_skip_nan_when_larger_is_better():
    records = [CheckpointRecord("b", 1, 2, NAN), CheckpointRecord("a", 1, 1, 0.5),
               CheckpointRecord("c", 1, 3, 0.7), CheckpointRecord("d", 1, 4, None)]
    assert checkpoints_to_keep(records, 1, 0, 0, smaller_is_better=False) == {"c"}
    assert checkpoints_to_keep(records, 1, 0, 0, smaller_is_better=True) == {"a"}
    ckpts = {u: {"deleted": False, "metric": r.metric, "order": r.order}
             for u, r in zip("bacd", records)}
    assert best_checkpoint(ckpts, smaller_is_better=False) == "c"


def test_in_process_host_never_calls_nan_the_best():
    host = InProcessHost([TrialOp(OpKind.CLOSE)], smaller_is_better=False)
    assert not host.is_best_validation(NAN)
    assert host.is_best_validation(0.2)
    assert not host.is_best_validation(NAN)
    assert host.is_best_validation(0.3) and not host.is_best_validation(0.1)
