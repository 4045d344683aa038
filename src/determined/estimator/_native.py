"""The Native API context for tf.estimator: ``train_and_evaluate`` enters the platform."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from determined.estimator._context import EstimatorContext
from determined.estimator._trial import EstimatorTrial
from determined.harness import TrialEnv

__all__ = ["EstimatorNativeContext"]


class EstimatorNativeContext(EstimatorContext):
    """What ``determined.experimental.estimator.init()`` returns.

    Example::

        context = det.experimental.estimator.init(config, local=True, test=True)
        optimizer = context.wrap_optimizer(tf.compat.v1.train.AdamOptimizer(1e-2))
        estimator = tf.estimator.DNNClassifier(..., optimizer=optimizer)
        context.train_and_evaluate(estimator, train_spec, eval_spec)
    """

    def __init__(self, env: TrialEnv, hvd_config: Any = None,
                 launcher: Optional[Callable[[type], Any]] = None):
        super().__init__(env, hvd_config)
        self._launcher = launcher
        self.last_run: Any = None

    def train_and_evaluate(
        self,
        estimator: Any,
        train_spec: Any,
        eval_spec: Any,
        serving_input_receiver_fns: Optional[Dict[str, Callable[..., Any]]] = None,
    ) -> Any:
        """Train ``estimator`` for the searcher's length, validating with ``eval_spec``.

        Args:
            estimator: a ``tf.estimator.Estimator``.
            train_spec: a ``tf.estimator.TrainSpec`` (``max_steps`` is ignored).
            eval_spec: a ``tf.estimator.EvalSpec``.
            serving_input_receiver_fns: SavedModel exports written into each checkpoint.

        Returns:
            What the launcher reports (in local mode, the in-process host with the
            recorded training, validation and checkpoint results).
        """
        fns = dict(serving_input_receiver_fns or {})
        context = self

        class NativeEstimatorTrial(EstimatorTrial):
            def __init__(self, trial_context: Any) -> None:
                super().__init__(trial_context)
                # the user's input functions call wrap_dataset on the Native context
                trial_context._wrapped_datasets += context._wrapped_datasets or 1

            def build_estimator(self) -> Any:
                return estimator

            def build_train_spec(self) -> Any:
                return train_spec

            def build_validation_spec(self) -> Any:
                return eval_spec

            def build_serving_input_receiver_fns(self) -> Dict[str, Callable[..., Any]]:
                return fns

        self.last_run = self._launcher(NativeEstimatorTrial)
        return self.last_run
