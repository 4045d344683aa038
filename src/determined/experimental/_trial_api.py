"""``det.experimental.create`` and ``create_trial_instance``: the Trial API from Python."""

from __future__ import annotations

import logging
import os
import random
from typing import Any, Dict, List, Optional, Type, Union

from determined.common import scratch
from determined.config import Length, validate_config
from determined.experimental._native import Mode, native_raw_config
from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner, controller_for
from determined.storage import SharedFSStorageManager

__all__ = ["create", "create_trial_instance"]

logger = logging.getLogger("determined")


def _config(trial_def: Type[Any], config: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """``config``'s sections merged over the Native defaults, validated."""
    raw = native_raw_config(config, "validation_loss")
    raw.setdefault("entrypoint", f"{trial_def.__module__}:{trial_def.__qualname__}")
    return validate_config(raw)


def create(
    trial_def: Type[Any],
    config: Optional[Dict[str, Any]] = None,
    local: bool = False,
    test: bool = False,
    context_dir: str = "",
    command: Optional[List[str]] = None,
    master_url: Optional[str] = None,
    mode: Optional[Union[Mode, str]] = None,
) -> Any:
    """Run ``trial_def`` from Python.

    Args:
        trial_def: the trial class.
        config: the experiment config (merged over the Native defaults: single
            searcher, 100 batches, metric ``validation_loss``; no ``entrypoint`` needed).
        local: train in this process; needs ``test=True``.
        test: a minimal loop of one batch, a validation and a checkpoint (with
            ``local=False``, a test-mode experiment on the master, waited for).
        context_dir: the model directory, uploaded when not local (required there).
        command: when ``trial_def`` is defined in the running script: the entrypoint
            on the cluster (default: this script relative to ``context_dir``).
        master_url: the master (default ``$DET_MASTER`` or ``localhost:8080``).
        mode: 0.12 spelling: ``Mode.LOCAL`` is ``local=True, test=True``.

    Returns:
        Not local: the new experiment's id (also printed as ``Created experiment N``).
        The config's ``entrypoint`` becomes ``module:Class`` when the class's module is
        a file of ``context_dir``; a class of the running script is found by re-running
        the script on the cluster. ``local=True, test=True``: what was reported
        (``training``, ``validations``, ``checkpoints``: their paths, in a ``det-test-``
        directory this process owns, removed once it exited; see
        :mod:`determined.common.scratch`).

    Example::

        from model_def import MyTrial
        exp_id = det.experimental.create(MyTrial, config, context_dir=".")
    """
    if mode is not None and Mode(mode) is Mode.LOCAL:
        local, test = True, True
    if local and not test:
        raise ValueError("create(local=True) needs test=True; use `det experiment create --local` "
                         "for a full local experiment")
    if not local:
        from determined.experimental._native_submit import submit_experiment
        from determined.harness._native_trial import current_trial_env, hand_over

        if current_trial_env() is not None:  # the cluster re-runs the script: train now
            hand_over(trial_def)
        if os.environ.get("DET_TRIAL_SPEC"):  # a trial's module calls create() on import
            logger.warning("det.experimental.create() called inside a trial of the cluster; "
                           "not submitting another experiment")
            return None
        return submit_experiment(native_raw_config(config, "validation_loss"), context_dir,
                                 command, master_url, test=test, trial_def=trial_def)
    from determined import searcher as searchers

    cfg = _config(trial_def, config)
    rng = random.Random(cfg["reproducibility"]["experiment_seed"])
    hparams = searchers.sample_hparams(cfg["hyperparameters"], rng)
    env = TrialEnv(cfg, hparams, os.path.abspath(context_dir or os.getcwd()),
                   trial_seed=rng.randrange(2**31), test_mode=True, managed=False)
    host = InProcessHost([TrialOp(OpKind.TRAIN, Length.from_dict({"batches": 1})),
                          TrialOp(OpKind.VALIDATE)], cfg["searcher"]["smaller_is_better"])
    storage = SharedFSStorageManager(scratch.make("test"))
    TrialRunner(env, host, storage, trial_class=trial_def).run()
    return {"training": host.training, "validations": host.validations,
            "checkpoints": [(b, storage.describe(u)) for b, u, _ in host.checkpoints]}


def create_trial_instance(
    trial_def: Type[Any],
    checkpoint_dir: str,
    config: Optional[Dict[str, Any]] = None,
    hparams: Optional[Dict[str, Any]] = None,
) -> Any:
    """Build a trial instance (e.g. for inference or debugging) outside any experiment."""
    cfg = _config(trial_def, config)
    if hparams is None:
        from determined import searcher as searchers

        hparams = searchers.sample_hparams(cfg["hyperparameters"], random.Random(0))
    env = TrialEnv(cfg, hparams, os.path.abspath(checkpoint_dir), managed=False)
    controller = controller_for(trial_def)(trial_def, env)
    return getattr(controller, "trial", None) or controller
