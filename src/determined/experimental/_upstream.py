"""Upstream 0.13 helpers of ``determined.experimental`` that user code and tests called:
``test_one_batch``, ``init_native`` and ``_load_trial_on_local``."""

from __future__ import annotations

import os
import pathlib
import random
from typing import Any, Dict, List, Optional, Tuple, Type

__all__ = ["_load_trial_on_local", "init_native", "test_one_batch"]


def _native_init(controller_cls: Optional[Type[Any]]) -> Any:
    """The Native API ``init`` of a framework, picked by its controller's package."""
    module = getattr(controller_cls, "__module__", "") or ""
    if module.startswith("determined.keras"):
        from determined.experimental import keras

        return keras.init
    if module.startswith("determined.estimator"):
        from determined.experimental import estimator

        return estimator.init
    raise ValueError(f"Expected the controller of a Native API framework (tf.keras or "
                     f"Estimator). Received: controller_cls={controller_cls!r}")


def test_one_batch(
    controller_cls: Optional[Type[Any]] = None,
    native_context_cls: Optional[Type[Any]] = None,
    trial_class: Optional[Type[Any]] = None,
    config: Optional[Dict[str, Any]] = None,
) -> Any:
    """Train one batch, validate and checkpoint in this process (a quick model check).

    With ``trial_class``: the Trial API (returns what was reported); without: the Native
    API of ``controller_cls``'s framework in local test mode (returns its context).
    """
    if trial_class is not None:
        from determined.experimental._trial_api import create

        return create(trial_class, config, local=True, test=True, context_dir=os.getcwd())
    return _native_init(controller_cls)(config, local=True, test=True, context_dir=os.getcwd())


def init_native(
    trial_def: Optional[Type[Any]] = None,
    controller_cls: Optional[Type[Any]] = None,
    native_context_cls: Optional[Type[Any]] = None,
    config: Optional[Dict[str, Any]] = None,
    local: bool = False,
    test: bool = False,
    context_dir: str = "",
    command: Optional[List[str]] = None,
    master_url: Optional[str] = None,
) -> Any:
    """What ``det.experimental.create`` and the Native ``init()`` functions share."""
    if trial_def is not None:
        from determined.experimental._trial_api import create

        return create(trial_def, config, local=local, test=test, context_dir=context_dir,
                      command=command, master_url=master_url)
    return _native_init(controller_cls)(config, local=local, test=test, context_dir=context_dir,
                                        command=command, master_url=master_url)


def _load_trial_on_local(
    context_dir: pathlib.Path,
    training: bool,
    config: Dict[str, Any],
    hparams: Dict[str, Any],
) -> Tuple[Type[Any], Any]:
    """``(trial_class, trial_context)`` of the entrypoint in ``context_dir``, built the way a
    trial process builds them (the working directory moves to ``context_dir``)."""
    from determined import _make_local_execution_env
    from determined.harness import load_trial_class

    path = os.path.abspath(os.fspath(context_dir))
    if "entrypoint" not in (config or {}):
        raise ValueError("_load_trial_on_local: the config needs an entrypoint")
    os.chdir(path)
    env, rendezvous_info, hvd_config = _make_local_execution_env(training, config, hparams)
    trial_class = load_trial_class(config["entrypoint"], path)
    context_cls = getattr(trial_class, "trial_context_class", None)
    if context_cls is None:
        from determined import TrialContext as context_cls  # type: ignore[no-redef]
    random.seed(env.trial_seed)
    return trial_class, context_cls(env, hvd_config)
