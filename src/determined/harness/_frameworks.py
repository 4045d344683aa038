"""Find the controller for a trial class without importing any framework up front."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Type

from determined.errors import InvalidModelDefError

__all__ = ["controller_for", "TRIAL_BASES"]

# (package of the Trial base class, its controller) — imported only when used.
TRIAL_BASES = {
    "determined.pytorch": "determined.pytorch._controller:PyTorchTrialController",
    "determined.keras": "determined.keras._controller:TFKerasTrialController",
    "determined.estimator": "determined.estimator._controller:EstimatorTrialController",
    "determined.tensorflow": "determined.tensorflow._controller:TensorFlowTrialController",
}


def controller_for(trial_class: Type[Any]) -> Type[Any]:
    """The TrialController class that runs ``trial_class``."""
    if inspect.isclass(trial_class) and not any(
            k.__module__.rsplit("._", 1)[0] in TRIAL_BASES for k in trial_class.__mro__):
        from determined.harness._upstream import UpstreamController, is_upstream_trial

        if is_upstream_trial(trial_class):  # upstream's low-level det.Trial API
            return UpstreamController
    if inspect.isclass(trial_class):
        for klass in trial_class.__mro__:
            package = klass.__module__.rsplit("._", 1)[0]
            target = TRIAL_BASES.get(package)
            if target and klass.__name__.endswith("Trial"):
                module, _, name = target.partition(":")
                return getattr(importlib.import_module(module), name)
    raise InvalidModelDefError(
        f"Expected a subclass of one of det.pytorch.PyTorchTrial, det.keras.TFKerasTrial, "
        f"det.estimator.EstimatorTrial, det.tensorflow.TensorFlowTrial, or a det.Trial "
        f"whose trial_controller_class is a det.TrialController. "
        f"Received: {trial_class!r}"
    )
