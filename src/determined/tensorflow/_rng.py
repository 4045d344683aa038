"""Seeding and saving the random number generators a TensorFlow trial uses.

Trial processes are fresh, so seeding ``random``, ``numpy.random`` and
TensorFlow's global seed with the trial seed makes weight initialization and
Python-side data augmentation reproducible. A checkpoint stores the Python and
NumPy generator states; TensorFlow's per-op random streams (dropout inside a
``tf.function`` or graph) cannot be captured and restart after a restore.
"""

from __future__ import annotations

import os
import pickle
import random
from typing import Any, Dict

import numpy as np

__all__ = ["seed_all", "get_rng_state", "set_rng_state", "save_rng_state", "load_rng_state"]

RNG_STATE_FILE = "rng_state.pkl"


def seed_all(seed: int) -> None:
    """Seed ``random``, ``numpy.random`` and TensorFlow's global seed."""
    import tensorflow as tf

    random.seed(seed)
    np.random.seed(seed % (2**32))
    tf.random.set_seed(seed)


def get_rng_state() -> Dict[str, Any]:
    return {"random": random.getstate(), "numpy": np.random.get_state()}


def set_rng_state(state: Dict[str, Any]) -> None:
    if "random" in state:
        random.setstate(state["random"])
    if "numpy" in state:
        np.random.set_state(state["numpy"])


def save_rng_state(directory: str) -> None:
    with open(os.path.join(directory, RNG_STATE_FILE), "wb") as f:
        pickle.dump(get_rng_state(), f)


def load_rng_state(directory: str) -> bool:
    """Restore the states saved by :func:`save_rng_state`; False if the file is absent."""
    path = os.path.join(directory, RNG_STATE_FILE)
    if not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        set_rng_state(pickle.load(f))
    return True
