"""A digits MLP as an EstimatorTrial with a custom model_fn.

Shows wrap_optimizer, wrap_dataset, a make_metric validation metric and a
SavedModel export in every checkpoint. The data is scikit-learn's bundled 8x8
digits (no download).
"""

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

from determined.estimator import EstimatorTrial

TRAIN_SIZE = 1500


def digits():
    x, y = load_digits(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(x))
    x, y = (x[order] / 16.0).astype("float32"), y[order].astype("int64")
    return (x[:TRAIN_SIZE], y[:TRAIN_SIZE]), (x[TRAIN_SIZE:], y[TRAIN_SIZE:])


def error_rate(batches):
    """make_metric reducer: the error over every validation example."""
    correct = np.concatenate(batches)
    return 1.0 - float(np.mean(correct))


class DigitsEstimatorTrial(EstimatorTrial):
    def __init__(self, context):
        self.context = context
        self.train_data, self.val_data = digits()

    def _model_fn(self, features, labels, mode):
        hidden = tf.compat.v1.layers.Dense(self.context.get_hparam("hidden_size"), tf.nn.relu)
        logits = tf.compat.v1.layers.Dense(10)(hidden(features["x"]))
        predictions = tf.argmax(logits, axis=1)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(
                mode, predictions={"class": predictions, "logits": logits}
            )
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        if mode == tf.estimator.ModeKeys.TRAIN:
            optimizer = self.context.wrap_optimizer(
                tf.compat.v1.train.AdamOptimizer(self.context.get_hparam("learning_rate"))
            )
            train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
        correct = tf.cast(tf.equal(predictions, labels), tf.float32)
        return tf.estimator.EstimatorSpec(
            mode,
            loss=loss,
            eval_metric_ops={
                "accuracy": tf.compat.v1.metrics.accuracy(labels, predictions),
                "error": self.context.experimental.make_metric(correct, error_rate, np.float32),
            },
        )

    def build_estimator(self):
        return tf.estimator.Estimator(self._model_fn)

    def _input_fn(self, data, shuffle):
        x, y = data

        def input_fn():
            dataset = self.context.wrap_dataset(tf.data.Dataset.from_tensor_slices(({"x": x}, y)))
            if shuffle:
                dataset = dataset.shuffle(len(y), seed=self.context.get_trial_seed())
            return dataset.batch(self.context.get_per_slot_batch_size())

        return input_fn

    def build_train_spec(self):
        return tf.estimator.TrainSpec(self._input_fn(self.train_data, shuffle=True))

    def build_validation_spec(self):
        return tf.estimator.EvalSpec(self._input_fn(self.val_data, shuffle=False), steps=None)

    def build_serving_input_receiver_fns(self):
        features = {"x": tf.compat.v1.placeholder(tf.float32, [None, 64], name="x")}
        return {
            "raw": tf.estimator.export.build_raw_serving_input_receiver_fn(features),
        }
