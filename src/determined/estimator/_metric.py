"""``make_metric``: Estimator metrics computed by a Python reducer over every batch.

The update op hands each batch's NumPy value to the reducer's ``accumulate``;
the value op returns ``cross_slot_reduce`` over the per-slot results (one slot
here). Both are ``py_func`` ops, so the reducer runs in this process. The
Estimator builds a fresh evaluation graph, and so calls ``make_metric`` again,
for every validation: create ``MetricReducer`` instances inside ``model_fn``.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, List, Tuple, Union

import numpy as np
import tensorflow as tf

from determined.errors import InvalidTrialError

__all__ = ["MetricReducer", "make_metric"]


class MetricReducer(abc.ABC):
    """Reduce a validation metric in two steps: per batch on each slot, then across slots.

    Example::

        class MyAvgMetricReducer(det.estimator.MetricReducer):
            def __init__(self):
                self.sum = 0
                self.counts = 0

            def accumulate(self, metric):
                self.sum += sum(metric)
                self.counts += 1
                return self.sum, self.counts

            def cross_slot_reduce(self, per_slot_metrics):
                sums, counts = zip(*per_slot_metrics)
                return sum(sums) / sum(counts)
    """

    @abc.abstractmethod
    def accumulate(self, metric: Any) -> Any:
        """Called with each batch's metric value; return the slot's accumulated state."""

    @abc.abstractmethod
    def cross_slot_reduce(self, per_slot_metrics: List[Any]) -> Any:
        """Combine the final ``accumulate`` results of every slot into the metric."""


class _FunctionReducer(MetricReducer):
    """Buffers every batch's value and applies ``fn`` to the list at the end."""

    def __init__(self, fn: Callable[[List[Any]], Any]):
        self.fn = fn
        self.values: List[Any] = []

    def accumulate(self, metric: Any) -> Any:
        self.values.append(metric)
        return self.values

    def cross_slot_reduce(self, per_slot_metrics: List[Any]) -> Any:
        return self.fn([value for slot in per_slot_metrics for value in slot])


def _flatten(metric: Any) -> Tuple[List[Any], Callable[[List[Any]], Any]]:
    def check(t: Any, where: str) -> Any:
        if not tf.is_tensor(t) and not isinstance(t, tf.Variable):
            raise InvalidTrialError(
                "context.experimental.make_metric(metric=...) expects a tensor, a list of "
                "tensors or a flat dict of tensors (nested structures are not supported). "
                f"Received {where}: {type(t).__name__}"
            )
        return t

    if isinstance(metric, dict):
        keys = sorted(metric)
        tensors = [check(metric[k], f"metric[{k!r}]") for k in keys]
        return tensors, lambda values: dict(zip(keys, values))
    if isinstance(metric, (list, tuple)):
        tensors = [check(t, f"metric[{i}]") for i, t in enumerate(metric)]
        return tensors, lambda values: list(values)
    return [check(metric, "metric")], lambda values: values[0]


def make_metric(
    metric: Any,
    reducer: Union[Callable[[List[Any]], Any], MetricReducer],
    numpy_dtype: Any,
) -> Tuple[Any, Any]:
    """An Estimator ``eval_metric_ops`` entry ``(value_op, update_op)`` computed by ``reducer``.

    Args:
        metric: a tensor, a list of tensors or a flat dict of tensors, evaluated per batch.
        reducer: a function over the list of per-batch values, or a :class:`MetricReducer`.
        numpy_dtype: the result's dtype; anything ``np.dtype()`` accepts.

    Returns:
        ``(value_op, update_op)`` for ``EstimatorSpec(eval_metric_ops={name: ...})``.
    """
    try:
        dtype = np.dtype(numpy_dtype)
        tf_dtype = tf.as_dtype(dtype)
    except TypeError:
        raise InvalidTrialError(
            "context.experimental.make_metric(numpy_dtype=...) must be a NumPy dtype (anything "
            f"np.dtype() accepts, e.g. np.float32). Received: numpy_dtype={numpy_dtype!r}"
        ) from None
    if isinstance(reducer, MetricReducer):
        impl: MetricReducer = reducer
    elif callable(reducer):
        impl = _FunctionReducer(reducer)
    else:
        raise InvalidTrialError(
            "context.experimental.make_metric(reducer=...) must be a function or a "
            f"det.estimator.MetricReducer. Received: {type(reducer).__name__}"
        )
    tensors, rebuild = _flatten(metric)
    state: dict = {"last": None, "seen": False}

    def update(*values: Any) -> np.int64:
        state["last"] = impl.accumulate(rebuild(list(values)))
        state["seen"] = True
        return np.int64(0)

    def value() -> Any:
        if not state["seen"]:
            raise ValueError("make_metric: no batch was evaluated before reading the metric")
        return np.asarray(impl.cross_slot_reduce([state["last"]]), dtype=dtype)

    update_op = tf.compat.v1.py_func(update, tensors, tf.int64, stateful=True,
                                     name="det_metric_update")
    value_op = tf.compat.v1.py_func(value, [], tf_dtype, stateful=True, name="det_metric_value")
    return value_op, update_op
