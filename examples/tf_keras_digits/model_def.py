"""A digits MLP as a TFKerasTrial.

The data is scikit-learn's bundled 8x8 digits (1,797 images; no download),
given to the platform as NumPy arrays.
"""

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits

from determined.keras import TFKerasTrial

TRAIN_SIZE = 1500


def digits():
    """(x_train, y_train), (x_val, y_val) with pixels scaled to [0, 1]."""
    x, y = load_digits(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(x))
    x, y = (x[order] / 16.0).astype("float32"), y[order].astype("int64")
    return (x[:TRAIN_SIZE], y[:TRAIN_SIZE]), (x[TRAIN_SIZE:], y[TRAIN_SIZE:])


class DigitsTrial(TFKerasTrial):
    def __init__(self, context):
        self.context = context
        self.train_data, self.val_data = digits()

    def build_model(self):
        model = tf.keras.Sequential(
            [
                tf.keras.layers.Input(shape=(64,)),
                tf.keras.layers.Dense(self.context.get_hparam("hidden_size"), activation="relu"),
                tf.keras.layers.Dropout(self.context.get_hparam("dropout")),
                tf.keras.layers.Dense(10),
            ]
        )
        model = self.context.wrap_model(model)
        model.compile(
            optimizer=tf.keras.optimizers.Adam(self.context.get_hparam("learning_rate")),
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        return model

    def build_training_data_loader(self):
        return self.train_data

    def build_validation_data_loader(self):
        return self.val_data
