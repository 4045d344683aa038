"""Loading a SavedModel exported into an Estimator checkpoint (SPEC 5.4, format ``saved_model``)."""

from __future__ import annotations

import os
from typing import Any, List, Optional

from determined.errors import CheckpointError

__all__ = ["load_estimator_from_checkpoint_path"]


def load_estimator_from_checkpoint_path(
    path: str, tags: Optional[List[str]] = None, export_name: Optional[str] = None
) -> Any:
    """Load a SavedModel from an Estimator checkpoint with ``tf.compat.v1.saved_model.load_v2``.

    Every serving input receiver function of the trial is exported to
    ``<checkpoint>/<name>/<timestamp>/`` (as upstream 0.13). With one export it is
    chosen automatically; with several, name one with ``export_name``.

    Args:
        path: the checkpoint directory (or a SavedModel directory itself).
        tags: MetaGraph tags to load; default ``["serve"]``.
        export_name: which export to load when there are several.

    Returns:
        The loaded object; call ``.signatures["serving_default"]`` for inference.

    Example::

        model = det.estimator.load_estimator_from_checkpoint_path(ckpt_dir)
        outputs = model.signatures["serving_default"](inputs=tf.constant(x))
    """
    import tensorflow as tf

    tags = list(tags) if tags else ["serve"]
    if _is_saved_model(path):
        target = path
    elif export_name is not None:
        target = _latest_export(os.path.join(path, export_name))
        if not _is_saved_model(target):
            raise CheckpointError(f"{target} is not a SavedModel export of checkpoint {path}")
    else:
        exports = sorted(
            n for n in (os.listdir(path) if os.path.isdir(path) else [])
            if _is_saved_model(_latest_export(os.path.join(path, n)))
        )
        if not exports:
            raise CheckpointError(
                f"{path} holds no SavedModel export; define build_serving_input_receiver_fns() "
                "in the EstimatorTrial to export one with every checkpoint"
            )
        if len(exports) > 1:
            raise CheckpointError(
                f"{path} holds several SavedModel exports ({', '.join(exports)}); "
                "choose one with export_name="
            )
        target = _latest_export(os.path.join(path, exports[0]))
    return tf.compat.v1.saved_model.load_v2(target, tags)


def _latest_export(path: str) -> str:
    """``path`` if it is a SavedModel, else its newest ``<timestamp>/`` SavedModel."""
    if _is_saved_model(path) or not os.path.isdir(path):
        return path
    stamps = sorted((n for n in os.listdir(path) if _is_saved_model(os.path.join(path, n))),
                    key=lambda n: (len(n), n))
    return os.path.join(path, stamps[-1]) if stamps else path


def _is_saved_model(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "saved_model.pb"))
