"""Keras checkpoint files: ``determined-keras-model.h5`` holds the model and its optimizer.

The file is what ``model.save(..., save_format="h5")`` writes (``save_weights``
for subclassed models, which h5 model saving does not support), plus a
``determined_optimizer`` group with every optimizer variable in creation order.
Keras 2.15 restores optimizer state from h5 only through ``load_model``, keyed by
variable names that depend on layer-name counters, so the platform keeps its own
copy and restores it by position after building the optimizer's slots.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any, List

import h5py
import numpy as np
import tensorflow as tf

from determined.errors import CheckpointError

__all__ = ["MODEL_FILE", "save_model", "load_model_weights", "load_optimizer_state"]

logger = logging.getLogger("determined")

MODEL_FILE = "determined-keras-model.h5"
_OPTIMIZER_GROUP = "determined_optimizer"


def _optimizer_variables(optimizer: Any) -> List[Any]:
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def _build_optimizer(model: Any) -> None:
    optimizer = model.optimizer
    if isinstance(optimizer, tf.keras.optimizers.legacy.Optimizer):
        optimizer._create_all_weights(model.trainable_variables)
    elif hasattr(optimizer, "build"):
        optimizer.build(model.trainable_variables)


def save_model(model: Any, path: str) -> None:
    """Write the model and its optimizer state to ``path`` (an .h5 file)."""
    if getattr(model, "_is_graph_network", False) or isinstance(model, tf.keras.Sequential):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*HDF5 file.*legacy.*")
            model.save(path, save_format="h5", include_optimizer=True)
    else:
        model.save_weights(path, save_format="h5")
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return
    variables = _optimizer_variables(optimizer)
    values = tf.keras.backend.batch_get_value(variables)
    with h5py.File(path, "a") as f:
        group = f.require_group(_OPTIMIZER_GROUP)
        group.attrs["names"] = [v.name.encode("utf-8") for v in variables]
        group.attrs["class"] = type(optimizer).__name__
        for i, value in enumerate(values):
            group.create_dataset(f"{i:05d}", data=np.asarray(value))


def load_model_weights(model: Any, path: str) -> None:
    try:
        model.load_weights(path)
    except (ValueError, OSError) as e:
        raise CheckpointError(f"cannot load the model weights in {path}: {e}") from None


def load_optimizer_state(model: Any, path: str) -> bool:
    """Restore the optimizer variables saved by :func:`save_model`; False if impossible."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return False
    with h5py.File(path, "r") as f:
        if _OPTIMIZER_GROUP not in f:
            logger.warning("%s holds no optimizer state; the optimizer starts fresh", path)
            return False
        group = f[_OPTIMIZER_GROUP]
        values = [group[k][()] for k in sorted(group.keys())]
    _build_optimizer(model)
    variables = _optimizer_variables(optimizer)
    shapes_match = len(variables) == len(values) and all(
        tuple(v.shape) == tuple(np.shape(x)) for v, x in zip(variables, values)
    )
    if not shapes_match:
        logger.warning(
            "the optimizer state in %s does not match the model's optimizer (%d saved "
            "variables, %d now); the optimizer starts fresh", path, len(values), len(variables),
        )
        return False
    tf.keras.backend.batch_set_value(list(zip(variables, values)))
    return True
