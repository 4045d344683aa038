"""A tf.keras Native API script: submits itself to the master at $DET_MASTER.

test_native_cluster.py copies this file into a context directory and runs it. On
the cluster the master re-runs it; ``model.fit`` then trains as the trial.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import determined.experimental.keras as det_keras  # noqa: E402

config = {
    "description": "keras native " + " ".join(sys.argv[1:]),
    "hyperparameters": {"global_batch_size": 16, "hidden": 8},
    "searcher": {"name": "single", "metric": "val_loss", "max_length": {"batches": 20}},
    "scheduling_unit": 10,
    "min_validation_period": {"batches": 10},
    "max_restarts": 0,
}
context = det_keras.init(config, context_dir=os.path.dirname(os.path.abspath(__file__)))

rng = np.random.RandomState(0)
x = rng.rand(192, 4).astype("float32")
y = (x.sum(axis=1) > 2.0).astype("int64")
model = context.wrap_model(tf.keras.Sequential([
    tf.keras.layers.Input(shape=(4,)),
    tf.keras.layers.Dense(context.get_hparam("hidden"), activation="relu"),
    tf.keras.layers.Dense(2),
]))
model.compile(optimizer="adam", metrics=["accuracy"],
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x[:160], y[:160], validation_data=(x[160:], y[160:]), epochs=5)

with open("after_fit.txt", "w") as f:  # never runs: fit hands the trial over, init exits
    f.write("code after model.fit ran\n")
