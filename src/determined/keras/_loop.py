"""One training or test batch through a compiled Keras model, eager or graph mode.

Eager mode compiles ``model.train_step`` / ``model.test_step`` into
``tf.function``s fed one batch at a time (the same per-step work as
``model.fit``, minus its per-call setup). The training function resets the
compiled metrics after each step, so training logs are per-batch values.
Graph mode (``tf.compat.v1.disable_eager_execution()``) uses Keras's own
``train_on_batch`` / ``test_on_batch``, which run in the Keras session.
"""

from __future__ import annotations

from typing import Any, Dict

import tensorflow as tf

from determined.tensorflow._metrics import to_python

__all__ = ["KerasLoop"]


class KerasLoop:
    def __init__(self, model: Any):
        self.model = model
        self.eager = tf.executing_eagerly()
        self._train_fn: Any = None
        self._test_fn: Any = None

    # ---- training

    def _make_train_fn(self, batch: Any) -> Any:
        model = self.model
        counter = getattr(model, "_train_counter", None)

        def step(data: Any) -> Any:
            logs = model.train_step(data)
            logs = tf.nest.map_structure(tf.identity, logs)
            for metric in model.metrics:
                metric.reset_state()
            if counter is not None:
                counter.assign_add(1)
            return logs

        return _Compiled(step, batch, bool(getattr(model, "_jit_compile", False)))

    def train_batch(self, batch: Any) -> Dict[str, Any]:
        """Train on one batch; return its metrics as Python values."""
        if self.eager:
            batch = _as_tuple(batch)
            if self._train_fn is None:
                self._train_fn = self._make_train_fn(batch)
            return to_python(self._train_fn(batch))
        x, y, w = tf.keras.utils.unpack_x_y_sample_weight(_as_tuple(batch))
        result = self.model.train_on_batch(x, y, sample_weight=w, reset_metrics=True)
        return to_python(self._named(result))

    # ---- evaluation

    def reset_metrics(self) -> None:
        self.model.reset_metrics()

    def test_batch(self, batch: Any) -> Any:
        """Accumulate one validation batch; return the running logs (tensors in eager mode)."""
        if self.eager:
            batch = _as_tuple(batch)
            if self._test_fn is None:
                model = self.model
                self._test_fn = _Compiled(lambda data: model.test_step(data), batch, False)
            return self._test_fn(batch)
        x, y, w = tf.keras.utils.unpack_x_y_sample_weight(_as_tuple(batch))
        return self._named(self.model.test_on_batch(x, y, sample_weight=w, reset_metrics=False))

    def _named(self, result: Any) -> Dict[str, Any]:
        """Graph-mode Keras returns a list of values ordered like ``model.metrics_names``."""
        values = list(result) if isinstance(result, (list, tuple)) else [result]
        return dict(zip(self.model.metrics_names, values))


class _Compiled:
    """``step`` as a ``tf.function`` traced once for any batch size.

    The input signature is the first batch's structure with an unknown leading
    dimension, so a short last batch does not retrace. Inputs that do not fit it
    (other dtypes, ``None`` entries, ragged structures) fall back to a
    ``reduce_retracing`` function.
    """

    def __init__(self, step: Any, batch: Any, jit_compile: bool):
        self.fallback = tf.function(step, reduce_retracing=True, jit_compile=jit_compile)
        self.fn = self.fallback
        signature = _signature(batch)
        if signature is not None:
            self.fn = tf.function(step, input_signature=[signature], jit_compile=jit_compile)

    def __call__(self, batch: Any) -> Any:
        if self.fn is self.fallback:
            return self.fn(batch)
        try:
            return self.fn(batch)
        except (TypeError, ValueError):
            self.fn = self.fallback
            return self.fn(batch)


def _signature(batch: Any) -> Any:
    leaves = tf.nest.flatten(batch)
    if not leaves or any(leaf is None or not hasattr(leaf, "shape") or not hasattr(leaf, "dtype")
                         or len(leaf.shape) == 0 for leaf in leaves):
        return None
    try:
        return tf.nest.map_structure(
            lambda a: tf.TensorSpec([None] + list(a.shape[1:]), tf.as_dtype(a.dtype)), batch
        )
    except TypeError:
        return None


def _as_tuple(batch: Any) -> Any:
    return tuple(batch) if isinstance(batch, list) else batch
