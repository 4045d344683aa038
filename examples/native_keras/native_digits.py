"""A digits MLP trained with the Native API: plain Keras code, ``fit`` runs under the platform.

Run locally (trains in this process for the searcher's max_length)::

    python native_digits.py            # const.yaml
    python native_digits.py adaptive.yaml --cluster   # needs a master (DET_MASTER)

The data is scikit-learn's bundled 8x8 digits (no download).
"""

import argparse
import os

import numpy as np
import tensorflow as tf
import yaml
from sklearn.datasets import load_digits

import determined.experimental.keras as det_keras

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN_SIZE = 1500


def digits():
    x, y = load_digits(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(x))
    x, y = (x[order] / 16.0).astype("float32"), y[order].astype("int64")
    return (x[:TRAIN_SIZE], y[:TRAIN_SIZE]), (x[TRAIN_SIZE:], y[TRAIN_SIZE:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default=os.path.join(HERE, "const.yaml"))
    parser.add_argument("--cluster", action="store_true", help="submit to a master")
    args = parser.parse_args()
    with open(args.config) as f:
        config = yaml.safe_load(f)

    context = det_keras.init(
        config,
        mode=det_keras.Mode.CLUSTER if args.cluster else det_keras.Mode.LOCAL,
        context_dir=HERE,
    )
    model = context.wrap_model(
        tf.keras.Sequential(
            [
                tf.keras.layers.Input(shape=(64,)),
                tf.keras.layers.Dense(context.get_hparam("hidden_size"), activation="relu"),
                tf.keras.layers.Dropout(context.get_hparam("dropout")),
                tf.keras.layers.Dense(10),
            ]
        )
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(context.get_hparam("learning_rate")),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    (x_train, y_train), (x_val, y_val) = digits()
    model.fit(x_train, y_train, validation_data=(x_val, y_val))
    # The searcher's max_length decides how long fit trains (not its epochs argument).
    batches, metrics = context.last_run.validations[-1]
    print(f"trained {batches} batches; final validation: {metrics['validation_metrics']}")


if __name__ == "__main__":
    main()
