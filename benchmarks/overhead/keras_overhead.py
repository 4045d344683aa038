"""Overhead of TFKerasTrial (TrialRunner + InProcessHost) against plain ``model.fit``.

Both sides train the same model on the same arrays (scikit-learn digits, no
shuffling, batch size 32) for the same number of batches; repetitions are
interleaved so machine noise hits both alike. Each side is timed end to end:
model construction and compilation, all training and, for the platform, the
final checkpoint the runner writes when the trial closes.

Usage::

    PYTHONPATH=src python benchmarks/overhead/keras_overhead.py [--epochs 20] [--reps 5] [--hidden 64]

Prints a markdown table row: | model | batches | plain fit (s) | TFKerasTrial (s) | ratio |
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

from determined.config import Length, validate_config  # noqa: E402
from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner  # noqa: E402
from determined.keras import TFKerasTrial  # noqa: E402
from determined.storage import SharedFSStorageManager  # noqa: E402

BATCH_SIZE = 32
HIDDEN = 64


def data():
    x, y = load_digits(return_X_y=True)
    return (x / 16.0).astype("float32")[:1500], y.astype("int64")[:1500]


X, Y = data()


def build(wrap=lambda m: m):
    model = wrap(
        tf.keras.Sequential(
            [
                tf.keras.layers.Input(shape=(64,)),
                tf.keras.layers.Dense(HIDDEN, activation="relu"),
                tf.keras.layers.Dense(10),
            ]
        )
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(1e-3),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


class BenchTrial(TFKerasTrial):
    def build_model(self):
        return build(self.context.wrap_model)

    def build_training_data_loader(self):
        return X, Y

    def build_validation_data_loader(self):
        return X[:64], Y[:64]


def plain_fit(epochs: int) -> float:
    start = time.perf_counter()
    tf.random.set_seed(0)
    model = build()
    model.fit(X, Y, batch_size=BATCH_SIZE, epochs=epochs, shuffle=False, verbose=0)
    return time.perf_counter() - start


def platform(batches: int, storage_dir: str, code_dir: str) -> float:
    config = validate_config(
        {
            "entrypoint": "keras_overhead:BenchTrial",
            "hyperparameters": {"global_batch_size": BATCH_SIZE},
            "searcher": {"name": "single", "metric": "val_loss",
                         "max_length": {"batches": batches}},
            "reproducibility": {"experiment_seed": 0},
        }
    )
    env = TrialEnv(config, {"global_batch_size": BATCH_SIZE}, code_dir)
    host = InProcessHost([TrialOp(OpKind.TRAIN, Length.from_dict({"batches": batches}))])
    start = time.perf_counter()
    TrialRunner(env, host, SharedFSStorageManager(storage_dir), trial_class=BenchTrial).run()
    elapsed = time.perf_counter() - start
    assert host.training[-1][0] == batches, host.training[-1]
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=64, help="hidden layer width")
    args = parser.parse_args()
    global HIDDEN
    HIDDEN = args.hidden
    batches = args.epochs * int(np.ceil(len(X) / BATCH_SIZE))
    with tempfile.TemporaryDirectory() as tmp:
        code = os.path.join(tmp, "code")
        os.makedirs(code)
        plain_fit(1), platform(10, os.path.join(tmp, "warm"), code)  # warm up TF and caches
        fits, ours = [], []
        for rep in range(args.reps):
            fits.append(plain_fit(args.epochs))
            ours.append(platform(batches, os.path.join(tmp, f"ckpt{rep}"), code))
            print(f"rep {rep}: fit {fits[-1]:.3f}s  platform {ours[-1]:.3f}s", file=sys.stderr)
    fit_s, our_s = statistics.median(fits), statistics.median(ours)
    print("| model | batches | plain model.fit (s) | TFKerasTrial (s) | ratio |")
    print("|---|---|---|---|---|")
    print(f"| Dense 64-{HIDDEN}-10, digits, bs {BATCH_SIZE} | {batches} | {fit_s:.3f} | {our_s:.3f} "
          f"| {our_s / fit_s:.3f} |")


if __name__ == "__main__":
    main()
