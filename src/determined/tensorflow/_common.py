"""Small pieces every TensorFlow-based controller shares."""

from __future__ import annotations

import inspect
from typing import Any, Type

from determined.errors import InvalidTrialError
from determined.harness import TrialEnv, describe_class

__all__ = ["framework_name", "require_single_slot", "accepts_positional", "tensorboard_dir"]


def framework_name() -> str:
    import tensorflow as tf

    return f"tensorflow-{tf.__version__}"


def require_single_slot(env: TrialEnv, trial_class: Type[Any]) -> None:
    """TensorFlow trials run on one slot here: there is no Horovod to all-reduce gradients."""
    if env.distributed.size > 1:
        raise InvalidTrialError(
            f"{describe_class(trial_class)}: TensorFlow-based trials support "
            f"resources.slots_per_trial=1 only in this installation (no Horovod; "
            f"PyTorch trials train on several slots). "
            f"Received: slots_per_trial={env.distributed.size}"
        )


def accepts_positional(method: Any) -> int:
    """How many positional parameters a bound method takes (for PEDL-era arities)."""
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return 0
    return sum(
        1 for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    )


def tensorboard_dir(rank: int = 0) -> str:
    """Where trial processes write tfevent files (SPEC 8): ``$DET_TENSORBOARD_DIR`` or
    ``/tmp/tensorboard``, with ``-<rank>`` appended for non-chief ranks."""
    from determined.tensorboard import local_event_dir

    return local_event_dir(rank)
