"""Loading a Keras model back from a checkpoint directory (SPEC 5.4, format ``h5``)."""

from __future__ import annotations

import copy
import os
from typing import Any, List, Optional

from determined.errors import CheckpointError
from determined.harness import TrialEnv, load_trial_class
from determined.keras import _checkpoint
from determined.storage import read_metadata

__all__ = ["load_model_from_checkpoint_path"]


def load_model_from_checkpoint_path(path: str, tags: Optional[List[str]] = None) -> Any:
    """Rebuild the trial's model from a checkpoint directory and load its weights.

    The trial class is loaded from the checkpoint's ``code/`` copy, its
    ``build_model()`` creates the compiled model, and the weights and optimizer
    state of ``determined-keras-model.h5`` are restored into it. Checkpoints
    without code (Native API) load through ``tf.keras.models.load_model``.

    Args:
        path: a checkpoint directory (holding ``metadata.json`` and the .h5 file).
        tags: unused; accepted for symmetry with SavedModel checkpoints.

    Returns:
        The ``tf.keras.Model``.

    Example::

        model = det.keras.load_model_from_checkpoint_path("checkpoints/<uuid>")
        predictions = model.predict(x)
    """
    import tensorflow as tf

    model_file = os.path.join(path, _checkpoint.MODEL_FILE)
    if not os.path.exists(model_file):
        raise CheckpointError(f"{path} holds no Keras checkpoint ({_checkpoint.MODEL_FILE})")
    meta = read_metadata(path)
    config = meta.get("experiment_config") or {}
    entrypoint = config.get("entrypoint") or meta.get("entrypoint")
    code = os.path.join(path, "code")
    if not entrypoint or not os.path.isdir(code):
        return tf.keras.models.load_model(model_file)

    from determined.keras._context import TFKerasTrialContext
    from determined.keras._trial import TFKerasTrial

    trial_class = load_trial_class(entrypoint, code, base=TFKerasTrial)
    env = TrialEnv(
        experiment_config=copy.deepcopy(config),
        hparams=copy.deepcopy(meta.get("hparams") or {}),
        model_dir=code,
        experiment_id=int(meta.get("experiment_id") or 0),
        trial_id=int(meta.get("trial_id") or 0),
        trial_seed=int(meta.get("trial_seed") or 0),
        managed=False,
    )
    trial = trial_class(TFKerasTrialContext(env))
    model = trial.build_model()
    if not model.built:
        raise CheckpointError(
            f"{type(trial).__name__}.build_model returned a subclassed model without variables; "
            "call it on an input before loading weights"
        )
    _checkpoint.load_model_weights(model, model_file)
    _checkpoint.load_optimizer_state(model, model_file)
    return model
