"""Low-level TensorFlowTrial definitions used by tests/tensorflow."""

import tensorflow as tf
from sklearn.datasets import load_digits

from determined.tensorflow import TensorFlowTrial

N_TRAIN, N_VAL = 320, 150


def make_data_loaders(experiment_config, hparams):
    x, y = load_digits(return_X_y=True)
    x, y = (x / 16.0).astype("float32"), y.astype("int64")
    bs = hparams["global_batch_size"]
    mode = hparams.get("loaders", "ok")
    train = tf.data.Dataset.from_tensor_slices((x[:N_TRAIN], y[:N_TRAIN]))
    val = tf.data.Dataset.from_tensor_slices((x[N_TRAIN:N_TRAIN + N_VAL], y[N_TRAIN:N_TRAIN + N_VAL]))
    if mode == "arrays":
        return (x, y), val.batch(bs)
    if mode == "mismatch":
        return train.batch(bs), val.map(lambda a, b: (a, tf.cast(b, tf.int32))).batch(bs)
    if hparams.get("shuffle"):
        train = train.shuffle(N_TRAIN, seed=1)
    return train.batch(bs), val.batch(bs)


class GraphTrial(TensorFlowTrial):
    def optimizer(self):
        return tf.compat.v1.train.AdamOptimizer(self.context.get_hparam("lr"))

    def build_graph(self, record, is_training):
        images, labels = record
        hidden = tf.keras.layers.Dense(16, activation="relu")(images)
        hidden = tf.keras.layers.Dropout(self.context.get_hparams().get("dropout", 0.0))(
            hidden, training=is_training
        )
        logits = tf.keras.layers.Dense(10)(hidden)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
        return {
            "loss": loss,
            "accuracy": accuracy,
            "training_flag": tf.cast(is_training, tf.float32),
            "class_counts": tf.math.bincount(tf.cast(labels, tf.int32), minlength=10,
                                             maxlength=10),
        }

    def training_metrics(self):
        return ["accuracy", "training_flag"]

    def validation_metrics(self):
        return ["loss", "accuracy", "training_flag", "class_counts"]


class NoLossTrial(GraphTrial):
    def build_graph(self, record, is_training):
        out = super().build_graph(record, is_training)
        out.pop("loss")
        return out


class UnknownMetricTrial(GraphTrial):
    def validation_metrics(self):
        return ["loss", "f1"]


class LossInTrainingMetricsTrial(GraphTrial):
    def training_metrics(self):
        return ["loss"]


class BadOptimizerTrial(GraphTrial):
    def optimizer(self):
        return "sgd"
