"""The user-facing Estimator trial base class."""

from __future__ import annotations

import abc
from typing import Any, Callable, Dict

from determined._trial_controller import Trial
from determined.estimator._compat import EstimatorTrialController
from determined.estimator._context import EstimatorTrialContext

__all__ = ["EstimatorTrial"]


class EstimatorTrial(Trial):
    """Subclass this to train a ``tf.estimator.Estimator`` with the platform.

    TensorFlow 1 behaviour: ``__init__`` and every builder run inside a graph (so
    ``tf.compat.v1.placeholder`` and friends work), and the Estimator builds its own
    graphs for training, evaluation and export. Eager execution is not switched off
    process-wide, so Estimator trials can share a process with eager code.

    The builders may also take the PEDL-era ``hparams`` argument
    (``build_estimator(self, hparams)``); both forms are accepted.

    Example::

        class IrisTrial(det.estimator.EstimatorTrial):
            def __init__(self, context):
                self.context = context

            def build_estimator(self):
                optimizer = self.context.wrap_optimizer(tf.compat.v1.train.AdamOptimizer(1e-2))
                return tf.estimator.DNNClassifier(..., optimizer=optimizer)

            def build_train_spec(self):
                return tf.estimator.TrainSpec(lambda: self.context.wrap_dataset(...))

            def build_validation_spec(self):
                return tf.estimator.EvalSpec(lambda: self.context.wrap_dataset(...), steps=None)
    """

    trial_context_class = EstimatorTrialContext
    trial_controller_class = EstimatorTrialController  # upstream's name (not used to run it)

    def __init__(self, context: EstimatorTrialContext) -> None:
        """Store the context; override to set up state the builders share."""
        self.context = context

    @abc.abstractmethod
    def build_estimator(self) -> Any:
        """The ``tf.estimator.Estimator`` (premade or custom) to train and evaluate."""

    @abc.abstractmethod
    def build_train_spec(self) -> Any:
        """A ``tf.estimator.TrainSpec`` whose ``input_fn`` returns a ``tf.data.Dataset``.

        ``max_steps`` is ignored: the searcher decides how long to train and
        ``scheduling_unit`` how many batches each training workload runs.
        """

    @abc.abstractmethod
    def build_validation_spec(self) -> Any:
        """A ``tf.estimator.EvalSpec``; validation evaluates ``steps`` batches, or the
        whole input when ``steps`` is None."""

    def build_serving_input_receiver_fns(self) -> Dict[str, Callable[..., Any]]:
        """Serving input receiver functions by name; each is exported as a SavedModel
        into ``<checkpoint>/<name>/`` with every checkpoint. Default: none."""
        return {}
