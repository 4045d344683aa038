"""A tf.estimator Native API script: submits itself to the master at $DET_MASTER."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import determined.experimental.estimator as det_estimator  # noqa: E402

config = {
    "hyperparameters": {"global_batch_size": 16, "lr": 0.05},
    "searcher": {"name": "single", "metric": "accuracy", "smaller_is_better": False,
                 "max_length": {"batches": 10}},
    "scheduling_unit": 10,
    "max_restarts": 0,
}
context = det_estimator.init(config, context_dir=os.path.dirname(os.path.abspath(__file__)))

rng = np.random.RandomState(0)
x = rng.rand(192, 4).astype("float32")
y = (x.sum(axis=1) > 2.0).astype("int64")


def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 2)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        opt = context.wrap_optimizer(tf.compat.v1.train.AdamOptimizer(context.get_hparam("lr")))
        op = opt.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=op)
    classes = tf.argmax(logits, 1)
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, eval_metric_ops={"accuracy": tf.compat.v1.metrics.accuracy(labels, classes)})


def input_fn(lo, hi):
    return lambda: context.wrap_dataset(
        tf.data.Dataset.from_tensor_slices(({"x": x[lo:hi]}, y[lo:hi]))).batch(16)


context.train_and_evaluate(tf.estimator.Estimator(model_fn), tf.estimator.TrainSpec(input_fn(0, 160)),
                           tf.estimator.EvalSpec(input_fn(160, 192), steps=None))
with open("after_train.txt", "w") as f:  # never runs
    f.write("code after train_and_evaluate ran\n")
