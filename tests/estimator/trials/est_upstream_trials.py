"""EstimatorTrials exercising upstream 0.13 behaviour: v1 estimators, hook counts,
``request_stop()`` in training and evaluation, exports under ``<name>/<timestamp>/``."""

import tensorflow as tf

from est_trials import DigitsEstimator

EVENTS = {"train_after_run": 0, "eval_after_run": 0}


class CountingHook(tf.estimator.SessionRunHook):
    def __init__(self, key, stop_after=None):
        self.key, self.stop_after = key, stop_after

    def after_run(self, run_context, run_values):
        EVENTS[self.key] += 1
        if self.stop_after is not None and EVENTS[self.key] >= self.stop_after:
            run_context.request_stop()


class V1Estimator(DigitsEstimator):
    """A tf.compat.v1 Estimator and v1 specs, counting training hook calls."""

    def build_estimator(self):
        return tf.compat.v1.estimator.Estimator(self.model_fn)

    def build_train_spec(self):
        stop = self.context.get_hparams().get("stop_train_after")
        return tf.estimator.TrainSpec(self._input_fn(self.train_data),
                                      hooks=[CountingHook("train_after_run", stop)])

    def build_validation_spec(self):
        stop = self.context.get_hparams().get("stop_eval_after")
        return tf.estimator.EvalSpec(self._input_fn(self.val_data), steps=None,
                                     hooks=[CountingHook("eval_after_run", stop)])


class CannedV1Estimator(V1Estimator):
    def build_estimator(self):
        columns = [tf.feature_column.numeric_column("x", shape=(64,))]
        return tf.compat.v1.estimator.LinearClassifier(columns, n_classes=10)

    def build_serving_input_receiver_fns(self):
        return {}
