"""The PEDL-era low-level TensorFlow trial (seed 004): one graph, a platform-owned session."""

from __future__ import annotations

import abc
from typing import Any, Dict, List

from determined.tensorflow._context import TensorFlowTrialContext

__all__ = ["TensorFlowTrial"]


class TensorFlowTrial(abc.ABC):
    """A trial defined by a TensorFlow graph.

    The module holding the subclass must also define
    ``make_data_loaders(experiment_config, hparams) -> (train_dataset, validation_dataset)``
    returning two already-batched ``tf.data.Dataset`` objects with the same element
    structure. The platform creates the graph and the session, calls
    :meth:`build_graph` once with a record that comes from the training dataset
    during training and from the validation dataset during validation, minimises
    ``loss`` with :meth:`optimizer`, and averages the metrics over batches.

    Example::

        def make_data_loaders(experiment_config, hparams):
            ...
            return train.batch(32), val.batch(32)

        class MnistTrial(det.tensorflow.TensorFlowTrial):
            def optimizer(self):
                return tf.compat.v1.train.AdamOptimizer(self.context.get_hparam("lr"))

            def build_graph(self, record, is_training):
                images, labels = record
                logits = ...
                loss = tf.reduce_mean(...)
                return {"loss": loss, "accuracy": ...}

            def validation_metrics(self):
                return ["loss", "accuracy"]
    """

    trial_context_class = TensorFlowTrialContext

    def __init__(self, context: TensorFlowTrialContext) -> None:
        self.context = context

    @abc.abstractmethod
    def optimizer(self) -> Any:
        """A ``tf.compat.v1.train.Optimizer`` (e.g. ``MomentumOptimizer``) that minimises ``loss``."""

    @abc.abstractmethod
    def build_graph(self, record: Any, is_training: Any) -> Dict[str, Any]:
        """Build the model on ``record`` and return named tensors; must include ``"loss"``.

        Args:
            record: the dataset element (a nested structure of tensors).
            is_training: a boolean scalar tensor, True during training steps; use it
                to switch dropout or batch normalisation.
        """

    @abc.abstractmethod
    def validation_metrics(self) -> List[str]:
        """Names of tensors returned by :meth:`build_graph` to average over the validation set."""

    def training_metrics(self) -> List[str]:
        """Extra tensors (besides ``loss``) to report for every training batch."""
        return []

    def session_config(self) -> Any:
        """The ``tf.compat.v1.ConfigProto`` for the session (default: soft placement)."""
        import tensorflow as tf

        return tf.compat.v1.ConfigProto(allow_soft_placement=True)
