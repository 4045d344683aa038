"""The context a :class:`TFKerasTrial` gets: the harness context plus the Keras wrappers."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List

from determined.errors import InvalidTrialError
from determined.harness import TrialContext, TrialEnv
from determined.tensorflow._cache import DatasetCache

__all__ = ["TFKerasTrialContext", "TFKerasExperimentalContext"]

logger = logging.getLogger("determined")


class TFKerasExperimentalContext:
    """Experimental features of a Keras trial, reached as ``context.experimental``."""

    def __init__(self, cache: DatasetCache):
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


class TFKerasTrialContext(TrialContext):
    """Runtime information for a :class:`TFKerasTrial` and its required wrappers.

    ``context.distributed`` says where this process sits in the trial;
    ``context.experimental`` holds :class:`TFKerasExperimentalContext`.
    """

    def __init__(self, env: TrialEnv):
        super().__init__(env)
        self._wrapped_models: List[Any] = []
        self._wrapped_datasets = 0
        self.experimental = TFKerasExperimentalContext(
            DatasetCache(
                env.experiment_config, env.trial_seed,
                env.distributed.rank, env.distributed.size,
            )
        )

    def wrap_model(self, model: Any) -> Any:
        """Register a ``tf.keras.Model`` with the platform; call it before ``model.compile()``.

        Args:
            model: the ``tf.keras.Model`` just created.

        Returns:
            The model to use in place of the original (the same object).

        Example::

            model = self.context.wrap_model(tf.keras.Sequential([...]))
            model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        """
        import tensorflow as tf

        if not isinstance(model, tf.keras.Model):
            raise InvalidTrialError(
                f"Expected context.wrap_model(model) to receive a tf.keras.Model. "
                f"Received: {type(model).__name__}"
            )
        if getattr(model, "optimizer", None) is not None and not self._is_wrapped(model):
            logger.warning(
                "context.wrap_model() received a model that is already compiled; wrap the "
                "model right after creating it and compile it afterwards"
            )
        if not any(m is model for m in self._wrapped_models):
            self._wrapped_models.append(model)
        return model

    def wrap_dataset(self, dataset: Any, shard_dataset: bool = True) -> Any:
        """Register a ``tf.data.Dataset``; required for tf.data training and validation inputs.

        Wrap each dataset right after creating it. With several slots the dataset is
        sharded so each process sees distinct records, unless ``shard_dataset`` is
        False (then the user must make the data distinct per slot).

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

    def _is_wrapped(self, model: Any) -> bool:
        return any(m is model for m in self._wrapped_models)

    def _dataset_usage(self) -> Dict[str, Any]:
        return {"wrapped": self._wrapped_datasets, "cache": dict(self.experimental._cache.used)}
