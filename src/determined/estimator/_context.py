"""Contexts of Estimator trials and of the Estimator Native API."""

from __future__ import annotations

from typing import Any, Callable, List, Tuple, Union

from determined.errors import InvalidTrialError
from determined.estimator._metric import MetricReducer, make_metric
from determined.harness import TrialContext, TrialEnv
from determined.tensorflow._cache import DatasetCache

__all__ = [
    "EstimatorContext",
    "EstimatorTrialContext",
    "EstimatorExperimentalContext",
]


class EstimatorExperimentalContext:
    """Experimental features of an Estimator trial, reached as ``context.experimental``."""

    def __init__(self, cache: DatasetCache):
        self._cache = cache

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

    def cache_train_dataset(
        self,
        dataset_id: str,
        dataset_version: str,
        shuffle: bool = False,
        skip_shuffle_at_epoch_end: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Cache an unbatched training ``tf.data.Dataset`` on disk by id and version (SPEC 4.9).

        Example::

            @self.context.experimental.cache_train_dataset("iris", "v1", shuffle=True)
            def make_dataset():
                return tf.data.Dataset.from_tensor_slices((features, labels))
        """
        return self._cache.decorator(
            "train", dataset_id, dataset_version, shuffle, not skip_shuffle_at_epoch_end
        )

    def cache_validation_dataset(
        self, dataset_id: str, dataset_version: str, shuffle: bool = False
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Cache an unbatched validation ``tf.data.Dataset`` on disk by id and version."""
        return self._cache.decorator("validation", dataset_id, dataset_version, shuffle, False)


class EstimatorContext(TrialContext):
    """Runtime information and wrappers shared by Estimator trials and the Native API.

    ``context.distributed`` says where this process sits; ``context.experimental``
    holds :class:`EstimatorExperimentalContext`.
    """

    def __init__(self, env: TrialEnv):
        super().__init__(env)
        self._optimizers: List[Any] = []
        self._wrapped_datasets = 0
        self.experimental = EstimatorExperimentalContext(
            DatasetCache(
                env.experiment_config, env.trial_seed,
                env.distributed.rank, env.distributed.size,
            )
        )

    def wrap_optimizer(self, optimizer: Any) -> Any:
        """Register an optimizer right after creating it; use the returned object.

        Example::

            optimizer = context.wrap_optimizer(tf.compat.v1.train.AdamOptimizer(1e-3))
        """
        if optimizer is None:
            raise InvalidTrialError("Expected context.wrap_optimizer(optimizer) to receive an optimizer. Received: None")
        self._optimizers.append(optimizer)
        return optimizer

    def wrap_dataset(self, dataset: Any, shard_dataset: bool = True) -> Any:
        """Register a ``tf.data.Dataset`` right after creating it; use the returned dataset.

        Args:
            dataset: a ``tf.data.Dataset``.
            shard_dataset: in multi-slot trials, shard so each slot sees distinct
                records; with False the user must make each slot's data distinct.
        """
        import tensorflow as tf

        if not isinstance(dataset, tf.data.Dataset):
            raise InvalidTrialError(
                f"Expected context.wrap_dataset(dataset) to receive a tf.data.Dataset. "
                f"Received: {type(dataset).__name__}"
            )
        self._wrapped_datasets += 1
        size = self.distributed.get_size()
        if shard_dataset and size > 1:
            dataset = dataset.shard(size, self.distributed.get_rank())
        return dataset


class EstimatorTrialContext(EstimatorContext):
    """The context passed to :class:`~determined.estimator.EstimatorTrial`."""
