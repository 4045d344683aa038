"""The Native API context for tf.keras: ``model.fit`` enters the platform's training loop.

``determined.experimental.keras.init()`` builds a :class:`TFKerasNativeContext`
with a *launcher* (a function that runs a trial class to completion);
``wrap_model`` replaces the model's ``fit`` and ``fit_generator`` with functions
that turn their arguments into a :class:`TFKerasTrial` and launch it. The
length of training comes from the experiment config's searcher, not ``epochs``.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, List, Optional

import numpy as np
import tensorflow as tf

from determined.errors import InvalidTrialError
from determined.harness import TrialEnv
from determined.keras._context import TFKerasTrialContext
from determined.keras._data import SequenceAdapter, _is_generator
from determined.keras._trial import TFKerasTrial

__all__ = ["TFKerasNativeContext"]

logger = logging.getLogger("determined")


class TFKerasNativeContext(TFKerasTrialContext):
    """What ``determined.experimental.keras.init()`` returns.

    Example::

        context = det.experimental.keras.init(config, mode=det.experimental.Mode.LOCAL)
        model = context.wrap_model(tf.keras.Sequential([...]))
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
        model.fit(x_train, y_train, validation_data=(x_val, y_val))
    """

    def __init__(self, env: TrialEnv, hvd_config: Any = None,
                 launcher: Optional[Callable[[type], Any]] = None):
        super().__init__(env, hvd_config)
        self._launcher = launcher
        self.last_run: Any = None

    def wrap_model(self, model: Any) -> Any:
        """Register the model and route its ``fit``/``fit_generator`` through the platform."""
        model = super().wrap_model(model)
        context = self

        def fit(*args: Any, **kwargs: Any) -> Any:
            return context._fit(model, *args, **kwargs)

        def fit_generator(generator: Any, *args: Any, **kwargs: Any) -> Any:
            return context._fit_generator(model, generator, *args, **kwargs)

        fit.__doc__ = "Train with the platform (Native API); see TFKerasNativeContext."
        model.fit = fit
        model.fit_generator = fit_generator
        return model

    def _fit_generator(
        self, model: Any, generator: Any, steps_per_epoch: Optional[int] = None,
        epochs: int = 1, verbose: int = 1, callbacks: Optional[List[Any]] = None,
        validation_data: Any = None, validation_steps: Optional[int] = None,
        validation_freq: int = 1, class_weight: Any = None, max_queue_size: int = 10,
        workers: int = 1, use_multiprocessing: bool = False, shuffle: bool = True,
        initial_epoch: int = 0,
    ) -> Any:
        return self._fit(
            model, generator, steps_per_epoch=steps_per_epoch, epochs=epochs,
            callbacks=callbacks, validation_data=validation_data,
            validation_steps=validation_steps, class_weight=class_weight,
            max_queue_size=max_queue_size, workers=workers,
            use_multiprocessing=use_multiprocessing,
        )

    def _fit(
        self, model: Any, x: Any = None, y: Any = None, batch_size: Optional[int] = None,
        epochs: int = 1, verbose: Any = "auto", callbacks: Optional[List[Any]] = None,
        validation_split: float = 0.0, validation_data: Any = None, shuffle: bool = True,
        class_weight: Any = None, sample_weight: Any = None, initial_epoch: int = 0,
        steps_per_epoch: Optional[int] = None, validation_steps: Optional[int] = None,
        validation_batch_size: Optional[int] = None, validation_freq: int = 1,
        max_queue_size: int = 10, workers: int = 1, use_multiprocessing: bool = False,
    ) -> Any:
        if class_weight is not None:
            raise InvalidTrialError("model.fit(class_weight=...) is not supported by the Native API")
        if batch_size is not None and batch_size != self.get_global_batch_size():
            logger.warning(
                "model.fit(batch_size=%s) is ignored; the batch size is "
                "hyperparameters.global_batch_size=%s", batch_size, self.get_global_batch_size(),
            )
        if epochs not in (None, 1):
            logger.warning("model.fit(epochs=%s) is ignored; the searcher's max_length decides", epochs)
        train = _input(x, y, sample_weight, steps_per_epoch, workers, use_multiprocessing,
                       max_queue_size, "x")
        if validation_data is None and validation_split and isinstance(train, tuple):
            train, validation_data = _split(train, validation_split)
        if validation_data is None:
            raise InvalidTrialError(
                "model.fit() needs validation_data (or validation_split with array inputs) "
                "under the Native API: the searcher metric is a validation metric"
            )
        if isinstance(validation_data, (tuple, list)) and not isinstance(validation_data[0], tf.data.Dataset):
            if len(validation_data) not in (2, 3):
                raise InvalidTrialError(
                    "Expected validation_data=(x, y) or (x, y, sample_weights). "
                    f"Received: a sequence of {len(validation_data)} elements"
                )
            val = tuple(validation_data)
        else:
            val = _input(validation_data, None, None, validation_steps, workers,
                         use_multiprocessing, max_queue_size, "validation_data")
        user_callbacks = list(callbacks or [])

        class NativeKerasTrial(TFKerasTrial):
            def build_model(self) -> Any:
                self.context._wrapped_models.append(model)  # wrapped by the Native context
                return model

            def build_training_data_loader(self) -> Any:
                return _wrap(self.context, train)

            def build_validation_data_loader(self) -> Any:
                return _wrap(self.context, val)

            def keras_callbacks(self) -> List[Any]:
                return user_callbacks

        self.last_run = self._launcher(NativeKerasTrial)
        return getattr(model, "history", None)


def _input(x: Any, y: Any, sample_weight: Any, steps: Optional[int], workers: int,
           use_multiprocessing: bool, max_queue_size: int, name: str) -> Any:
    if isinstance(x, (tf.data.Dataset, SequenceAdapter)):
        return x
    if isinstance(x, tf.keras.utils.Sequence):
        return SequenceAdapter(x, use_multiprocessing=use_multiprocessing, workers=workers,
                               max_queue_size=max_queue_size)
    if _is_generator(x):
        adapter = SequenceAdapter(x, workers=0)
        adapter._steps = steps
        return adapter
    if x is None or y is None:
        raise InvalidTrialError(
            f"Expected {name} to be arrays with targets, a tf.data.Dataset, a "
            f"tf.keras.utils.Sequence or a generator. Received: {type(x).__name__}"
            + (" without y" if y is None and x is not None else "")
        )
    return (x, y) if sample_weight is None else (x, y, sample_weight)


def _split(data: tuple, fraction: float) -> Any:
    """Keras's validation_split: the last ``fraction`` of the arrays validates."""
    def count(a: Any) -> int:
        if isinstance(a, dict):
            a = next(iter(a.values()))
        elif isinstance(a, (list, tuple)):
            a = a[0]
        return len(a)

    n = count(data[0])
    cut = int(n * (1.0 - fraction))

    def part(a: Any, lo: int, hi: Optional[int]) -> Any:
        if a is None:
            return None
        if isinstance(a, dict):
            return {k: np.asarray(v)[lo:hi] for k, v in a.items()}
        if isinstance(a, (list, tuple)):
            return [np.asarray(v)[lo:hi] for v in a]
        return np.asarray(a)[lo:hi]

    return (tuple(part(a, 0, cut) for a in data), tuple(part(a, cut, None) for a in data))


def _wrap(context: TFKerasTrialContext, data: Any) -> Any:
    if isinstance(data, tf.data.Dataset):
        return context.wrap_dataset(data)
    return data
