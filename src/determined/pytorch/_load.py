"""Load a trained PyTorch trial back from a checkpoint directory."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from determined.errors import CheckpointError
from determined.harness import TrialEnv, load_trial_class
from determined.storage import read_metadata

__all__ = ["load_trial_from_checkpoint_path"]


def load_trial_from_checkpoint_path(
    path: str, hparams: Optional[Dict[str, Any]] = None, **torch_load_kwargs: Any
) -> Any:
    """Rebuild the trial from the checkpoint's ``code/`` copy and load its state.

    Returns the trial instance (models in ``trial.context.models``); for a legacy
    ``build_model`` trial, ``trial.model`` is also set to the loaded module.

    Example:
        >>> trial = det.pytorch.load_trial_from_checkpoint_path("checkpoints/<uuid>")  # doctest: +SKIP
        >>> model = trial.context.models[0].eval()                                   # doctest: +SKIP

    ``torch_load_kwargs`` go to ``torch.load``; a ``map_location`` naming a device
    (``"cpu"``, ``"cuda:0"``, a ``torch.device``) also builds the models there, so a
    checkpoint written on a GPU loads on a machine without one.
    """
    from determined.pytorch._controller import PyTorchTrialController, STATE_FILE

    meta = read_metadata(path)
    if not os.path.exists(os.path.join(path, STATE_FILE)):
        raise CheckpointError(f"{path} is not a PyTorch checkpoint ({STATE_FILE} missing)")
    config = meta.get("experiment_config") or {}
    code = os.path.join(path, "code")
    trial_class = load_trial_class(config.get("entrypoint") or meta["entrypoint"], code)
    env = TrialEnv(
        experiment_config=config,
        hparams=hparams if hparams is not None else meta.get("hparams", {}),
        model_dir=code,
        experiment_id=meta.get("experiment_id", 0),
        trial_id=meta.get("trial_id", 0),
        trial_seed=meta.get("trial_seed", 0),
        managed=False,
    )
    controller = PyTorchTrialController(trial_class, env, _device_of(torch_load_kwargs))
    controller.load(path, weights_only=True, **torch_load_kwargs)
    trial = controller.trial
    if controller._model is not None:
        trial.model = controller._model  # type: ignore[attr-defined]
    for model in controller.context.models:
        model.eval()
    return trial


def _device_of(torch_load_kwargs: Dict[str, Any]) -> Optional[Any]:
    import torch

    where = torch_load_kwargs.get("map_location")
    if isinstance(where, (str, torch.device)):
        return torch.device(where)
    return None
