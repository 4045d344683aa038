"""The context a :class:`TFKerasTrial` gets: the harness context plus the Keras wrappers."""

from __future__ import annotations

import logging
from typing import Any, Dict, List

from determined.errors import InvalidTrialError
from determined.harness import TrialEnv
from determined.tensorflow._data_context import DatasetCacheContext, TFDataContext

__all__ = ["TFKerasTrialContext", "TFKerasExperimentalContext"]

logger = logging.getLogger("determined")


class TFKerasExperimentalContext(DatasetCacheContext):
    """Experimental features of a Keras trial, reached as ``context.experimental``."""


class TFKerasTrialContext(TFDataContext):
    """Runtime information for a :class:`TFKerasTrial` and its required wrappers.

    ``context.distributed`` says where this process sits in the trial;
    ``context.experimental`` holds :class:`TFKerasExperimentalContext`.
    """

    experimental_class = TFKerasExperimentalContext

    def __init__(self, env: TrialEnv, hvd_config: Any = None):
        super().__init__(env, hvd_config)
        self._wrapped_models: List[Any] = []

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

    def _is_wrapped(self, model: Any) -> bool:
        return any(m is model for m in self._wrapped_models)

    def _dataset_usage(self) -> Dict[str, Any]:
        return {"wrapped": self._wrapped_datasets, "cache": dict(self.experimental._cache.used)}
