"""Contexts of Estimator trials and of the Estimator Native API."""

from __future__ import annotations

from typing import Any, Callable, List, Tuple, Union

from determined.errors import InvalidTrialError
from determined.estimator._metric import MetricReducer, make_metric
from determined.harness import TrialEnv
from determined.tensorflow._data_context import DatasetCacheContext, TFDataContext

__all__ = [
    "EstimatorContext",
    "EstimatorTrialContext",
    "EstimatorExperimentalContext",
]


class EstimatorExperimentalContext(DatasetCacheContext):
    """Experimental features of an Estimator trial, reached as ``context.experimental``."""

    def make_metric(
        self,
        metric: Any,
        reducer: Union[Callable[[List[Any]], Any], MetricReducer],
        numpy_dtype: Any,
    ) -> Tuple[Any, Any]:
        """An Estimator-compatible validation metric reduced in Python.

        Args:
            metric: a tensor, a list of tensors or a flat dict of tensors.
            reducer: a function over the list of per-batch values of ``metric``, or a
                :class:`~determined.estimator.MetricReducer`.
            numpy_dtype: the dtype of the result (anything ``np.dtype()`` accepts).

        Returns:
            ``(value_op, update_op)`` for ``EstimatorSpec(eval_metric_ops=...)``.

        Example::

            def my_mean_reducer(all_batch_metrics):
                return np.mean(np.hstack(all_batch_metrics))

            if mode == tf.estimator.ModeKeys.EVAL:
                avg = context.experimental.make_metric(predictions, my_mean_reducer, np.float32)
                return tf.estimator.EstimatorSpec(mode, loss=loss,
                                                  eval_metric_ops={"avg_prediction": avg})
        """
        return make_metric(metric, reducer, numpy_dtype)

    def allgather_metrics(self, metrics: Any) -> List[Any]:
        """Every process's ``metrics`` (TensorFlow trials run on one slot: ``[metrics]``)."""
        return [metrics]


class EstimatorContext(TFDataContext):
    """Runtime information and wrappers shared by Estimator trials and the Native API.

    ``context.distributed`` says where this process sits; ``context.experimental``
    holds :class:`EstimatorExperimentalContext`.
    """

    experimental_class = EstimatorExperimentalContext

    def __init__(self, env: TrialEnv, hvd_config: Any = None):
        super().__init__(env, hvd_config)
        self._optimizers: List[Any] = []

    def wrap_optimizer(self, optimizer: Any) -> Any:
        """Register an optimizer right after creating it; use the returned object.

        Example::

            optimizer = context.wrap_optimizer(tf.compat.v1.train.AdamOptimizer(1e-3))
        """
        if optimizer is None:
            raise InvalidTrialError("Expected context.wrap_optimizer(optimizer) to receive an optimizer. Received: None")
        self._optimizers.append(optimizer)
        return optimizer


class EstimatorTrialContext(EstimatorContext):
    """The context passed to :class:`~determined.estimator.EstimatorTrial`."""
