"""What the tf.keras and Estimator contexts share: ``wrap_dataset`` and the dataset cache."""

from __future__ import annotations

from typing import Any, Callable, Optional

from determined.errors import InvalidTrialError
from determined.harness import TrialContext, TrialEnv
from determined.tensorflow._cache import DatasetCache

__all__ = ["DatasetCacheContext", "TFDataContext"]


class DatasetCacheContext:
    """``context.experimental`` of TensorFlow trials: the on-disk dataset cache (SPEC 4.9)."""

    def __init__(self, env: Any, hvd_config: Any = None, cache: Optional[DatasetCache] = None):
        if cache is None:  # built by user code with upstream's (env, hvd_config)
            env = env.to_trial_env() if hasattr(env, "to_trial_env") else env
            cache = DatasetCache(env.experiment_config, env.trial_seed,
                                 env.distributed.rank, env.distributed.size)
        self._cache = cache

    def cache_train_dataset(
        self,
        dataset_id: str,
        dataset_version: str,
        shuffle: bool = False,
        skip_shuffle_at_epoch_end: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorate a function returning an unbatched ``tf.data.Dataset`` to cache it on disk.

        The first call stores the dataset under ``<data_layer root>/<dataset_id>/
        <dataset_version>/``; later calls (in any trial) read it back. Batch and
        augment after caching, never ``repeat()``.

        Args:
            dataset_id: part of the cache key.
            dataset_version: part of the cache key; bump it when the data changes.
            shuffle: shuffle with the trial seed.
            skip_shuffle_at_epoch_end: keep the same order every epoch.

        Example::

            @self.context.experimental.cache_train_dataset("digits", "v1", shuffle=True)
            def make_dataset():
                return tf.data.Dataset.from_tensor_slices((x, y))

            dataset = make_dataset().batch(self.context.get_per_slot_batch_size())
        """
        return self._cache.decorator(
            "train", dataset_id, dataset_version, shuffle, not skip_shuffle_at_epoch_end
        )

    def cache_validation_dataset(
        self, dataset_id: str, dataset_version: str, shuffle: bool = False
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Like :meth:`cache_train_dataset` for the validation dataset (same order every pass)."""
        return self._cache.decorator("validation", dataset_id, dataset_version, shuffle, False)


class TFDataContext(TrialContext):
    """A trial context with ``wrap_dataset`` and a :class:`DatasetCacheContext`
    (of type ``experimental_class``) as ``context.experimental``."""

    experimental_class = DatasetCacheContext

    def __init__(self, env: TrialEnv, hvd_config: Any = None):
        super().__init__(env, hvd_config)
        env = self.env
        self._wrapped_datasets = 0
        self.experimental = self.experimental_class(
            env, hvd_config,
            cache=DatasetCache(
                env.experiment_config, env.trial_seed,
                env.distributed.rank, env.distributed.size,
            ),
        )

    def wrap_dataset(self, dataset: Any, shard_dataset: bool = True) -> Any:
        """Register a ``tf.data.Dataset`` right after creating it; use the returned dataset.

        With several slots the dataset is sharded so each process sees distinct
        records, unless ``shard_dataset`` is False (then the user must make the data
        distinct per slot).

        Args:
            dataset: a ``tf.data.Dataset``.
            shard_dataset: shard by slot in multi-slot trials.

        Returns:
            The dataset to use in place of the original.
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
