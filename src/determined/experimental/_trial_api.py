"""``det.experimental.create`` and ``create_trial_instance``: the Trial API from Python."""

from __future__ import annotations

import os
import random
import tempfile
from typing import Any, Dict, List, Optional, Type

from determined.config import Length, validate_config
from determined.errors import MasterError
from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner, controller_for
from determined.storage import SharedFSStorageManager

__all__ = ["create", "create_trial_instance"]


def _config(trial_def: Type[Any], config: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    raw = dict(config or {})
    raw.setdefault("entrypoint", f"{trial_def.__module__}:{trial_def.__qualname__}")
    raw.setdefault("searcher", {"name": "single", "metric": "validation_loss",
                                "max_length": {"batches": 100}})
    raw.setdefault("hyperparameters", {"global_batch_size": 32})
    return validate_config(raw)


def create(
    trial_def: Type[Any],
    config: Optional[Dict[str, Any]] = None,
    local: bool = False,
    test: bool = False,
    context_dir: str = "",
    command: Optional[List[str]] = None,
    master_url: Optional[str] = None,
) -> Optional[Dict[str, Any]]:
    """Run ``trial_def`` from Python.

    ``local=True, test=True`` trains one batch, validates and checkpoints in this
    process and returns what was reported. Other modes need a master.
    """
    if local and not test:
        raise ValueError("create(local=True) needs test=True; use `det experiment create --local` "
                         "for a full local experiment")
    if not local:
        from determined.experimental._native import submit_to_cluster

        submit_to_cluster(master_url)
        raise MasterError("submitting trial classes to a master is not available yet")
    from determined import searcher as searchers

    cfg = _config(trial_def, config)
    rng = random.Random(cfg["reproducibility"]["experiment_seed"])
    hparams = searchers.sample_hparams(cfg["hyperparameters"], rng)
    env = TrialEnv(cfg, hparams, os.path.abspath(context_dir or os.getcwd()),
                   trial_seed=rng.randrange(2**31), test_mode=True, managed=False)
    host = InProcessHost([TrialOp(OpKind.TRAIN, Length.from_dict({"batches": 1})),
                          TrialOp(OpKind.VALIDATE)], cfg["searcher"]["smaller_is_better"])
    storage = SharedFSStorageManager(tempfile.mkdtemp(prefix="det-test-"))
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
