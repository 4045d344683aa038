"""EstimatorTrial definitions used by tests/estimator."""

import os

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

from determined.estimator import EstimatorTrial, MetricReducer, RunHook

N_TRAIN, N_VAL = 320, 160
HOOK_EVENTS = []


def digits():
    x, y = load_digits(return_X_y=True)
    x, y = (x / 16.0).astype("float32"), y.astype("int64")
    return (x[:N_TRAIN], y[:N_TRAIN]), (x[N_TRAIN:N_TRAIN + N_VAL], y[N_TRAIN:N_TRAIN + N_VAL])


def mean_correct(batches):
    return float(np.mean(np.concatenate(batches)))


class SumCountReducer(MetricReducer):
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def accumulate(self, metric):
        self.sum += float(np.sum(metric["correct"]))
        self.count += len(metric["correct"])
        return self.sum, self.count

    def cross_slot_reduce(self, per_slot_metrics):
        sums, counts = zip(*per_slot_metrics)
        return sum(sums) / sum(counts)


class EventHook(RunHook):
    def on_checkpoint_end(self, checkpoint_dir):
        HOOK_EVENTS.append(("checkpoint_end", checkpoint_dir))
        with open(os.path.join(checkpoint_dir, "hook.txt"), "w") as f:
            f.write("written by RunHook")

    def on_checkpoint_load(self, checkpoint_dir):
        HOOK_EVENTS.append(("checkpoint_load", checkpoint_dir))

    def on_trial_close(self):
        HOOK_EVENTS.append(("trial_close",))


class DigitsEstimator(EstimatorTrial):
    """hparams: lr, plus switches for the broken variants."""

    def __init__(self, context):
        self.context = context
        self.train_data, self.val_data = digits()

    def model_fn(self, features, labels, mode):
        hidden = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu)
        logits = tf.compat.v1.layers.dense(hidden, 10)
        classes = tf.argmax(logits, 1)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"class": classes})
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        if mode == tf.estimator.ModeKeys.TRAIN:
            opt = self.context.wrap_optimizer(
                tf.compat.v1.train.AdamOptimizer(self.context.get_hparam("lr")))
            train_op = opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
            return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
        correct = tf.cast(tf.equal(classes, labels), tf.float32)
        make = self.context.experimental.make_metric
        metrics = {
            "accuracy": tf.compat.v1.metrics.accuracy(labels, classes),
            "fn_accuracy": make(correct, mean_correct, np.float32),
            "reducer_accuracy": make({"correct": correct}, SumCountReducer(), "float64"),
        }
        bad = self.context.get_hparams().get("bad_metric")
        if bad == "dtype":
            metrics["broken"] = make(correct, mean_correct, "floaty")
        elif bad == "nested":
            metrics["broken"] = make({"a": [correct]}, mean_correct, np.float32)
        if self.context.get_hparams().get("no_loss"):
            return tf.estimator.EstimatorSpec(mode, eval_metric_ops=metrics)
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)

    def build_estimator(self):
        return tf.estimator.Estimator(self.model_fn)

    def _input_fn(self, data):
        x, y = data

        def input_fn():
            ds = self.context.wrap_dataset(tf.data.Dataset.from_tensor_slices(({"x": x}, y)))
            return ds.batch(self.context.get_per_slot_batch_size())

        return input_fn

    def build_train_spec(self):
        return tf.estimator.TrainSpec(self._input_fn(self.train_data), max_steps=3,
                                      hooks=[EventHook()])

    def build_validation_spec(self):
        return tf.estimator.EvalSpec(self._input_fn(self.val_data), steps=None)

    def build_serving_input_receiver_fns(self):
        x = tf.compat.v1.placeholder(tf.float32, [None, 64], name="x")
        return {"raw": tf.estimator.export.build_raw_serving_input_receiver_fn({"x": x})}


class PedlEstimator(DigitsEstimator):
    """PEDL-era builder arity: each builder takes hparams."""

    def build_estimator(self, hparams):
        assert hparams["lr"] == self.context.get_hparam("lr")
        return super().build_estimator()

    def build_train_spec(self, hparams):
        return super().build_train_spec()

    def build_validation_spec(self, hparams):
        return tf.estimator.EvalSpec(self._input_fn(self.val_data), steps=2)

    def build_serving_input_receiver_fns(self, hparams):
        return {}


class PremadeEstimator(DigitsEstimator):
    def build_estimator(self):
        columns = [tf.feature_column.numeric_column("x", shape=(64,))]
        return tf.estimator.LinearClassifier(
            columns, n_classes=10,
            optimizer=self.context.wrap_optimizer(tf.keras.optimizers.legacy.Adam(0.05)))

    def build_serving_input_receiver_fns(self):
        return {}


class CachedEstimator(DigitsEstimator):
    def build_train_spec(self):
        x, y = self.train_data

        def input_fn():
            @self.context.experimental.cache_train_dataset("est-digits", "v1", shuffle=True)
            def make():
                return tf.data.Dataset.from_tensor_slices(({"x": x}, y))

            return make().batch(self.context.get_per_slot_batch_size())

        return tf.estimator.TrainSpec(input_fn)


class NotAnEstimator(DigitsEstimator):
    def build_estimator(self):
        return "estimator"


class TupleInputEstimator(DigitsEstimator):
    def build_train_spec(self):
        x, y = self.train_data
        return tf.estimator.TrainSpec(lambda: ({"x": tf.constant(x)}, tf.constant(y)))
