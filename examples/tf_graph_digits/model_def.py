"""A digits MLP as a low-level TensorFlowTrial (PEDL-era graph API, seed 004).

The data is scikit-learn's bundled 8x8 digits (1,797 images; no download).
"""

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

from determined.tensorflow import TensorFlowTrial

TRAIN_SIZE = 1500


def _digits():
    x, y = load_digits(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(x))
    return (x[order] / 16.0).astype("float32"), y[order].astype("int64")


def make_data_loaders(experiment_config, hparams):
    """Batched training and validation datasets with the same element structure."""
    x, y = _digits()
    batch_size = hparams["global_batch_size"]
    train = tf.data.Dataset.from_tensor_slices((x[:TRAIN_SIZE], y[:TRAIN_SIZE]))
    train = train.shuffle(TRAIN_SIZE, seed=0).batch(batch_size)
    val = tf.data.Dataset.from_tensor_slices((x[TRAIN_SIZE:], y[TRAIN_SIZE:])).batch(batch_size)
    return train, val


class DigitsGraphTrial(TensorFlowTrial):
    def optimizer(self):
        return tf.compat.v1.train.MomentumOptimizer(
            self.context.get_hparam("learning_rate"), momentum=0.9
        )

    def build_graph(self, record, is_training):
        images, labels = record
        hidden = tf.keras.layers.Dense(self.context.get_hparam("hidden_size"), activation="relu")
        dropout = tf.keras.layers.Dropout(self.context.get_hparam("dropout"))
        logits = tf.keras.layers.Dense(10)(dropout(hidden(images), training=is_training))
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        )
        correct = tf.cast(tf.equal(tf.argmax(logits, axis=1), labels), tf.float32)
        accuracy = tf.reduce_mean(correct)
        return {"loss": loss, "accuracy": accuracy, "error": 1.0 - accuracy}

    def training_metrics(self):
        return ["accuracy"]

    def validation_metrics(self):
        return ["loss", "accuracy", "error"]
