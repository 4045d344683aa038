"""Upstream 0.13's helpers for running a trial in this process without a master."""

from __future__ import annotations

import contextlib
import os
import pathlib
import random
import sys
from typing import Any, Dict, Iterator, Optional, Tuple

from determined._env_context import EnvContext, RendezvousInfo
from determined.harness._env import TrialEnv

__all__ = ["_local_execution_manager", "_make_local_execution_env"]


def _make_local_execution_env(
    training: bool,
    config: Optional[Dict[str, Any]],
    hparams: Optional[Dict[str, Any]] = None,
) -> Tuple[EnvContext, RendezvousInfo, Any]:
    """``(env, rendezvous_info, hvd_config)`` for one trial of ``config`` (merged over the
    Native API defaults) in this process; ``hparams`` default to a random sample."""
    from determined import constants, horovod
    from determined.config import assume_metric, merge_configs, validate_config
    from determined.searcher import sample_hparams

    raw = merge_configs(constants.DEFAULT_EXP_CFG, dict(config or {}))
    raw.setdefault("hyperparameters", {"global_batch_size": 32})
    if raw.get("entrypoint") is None and not (raw.get("internal") or {}).get("native"):
        raw["internal"] = {"native": {"command": ["python"]}}
    assume_metric(raw, (config or {}).get("searcher"))  # said in the user's terms if lacking
    cfg = validate_config(raw, source="local execution config")
    rng = random.Random(cfg["reproducibility"]["experiment_seed"])
    if hparams is None:
        hparams = sample_hparams(cfg["hyperparameters"], rng)
    trial_env = TrialEnv(cfg, dict(hparams), os.getcwd(), trial_seed=rng.randrange(2**31),
                         test_mode=not training, managed=False)
    env = EnvContext.from_trial_env(trial_env)
    rendezvous_info = RendezvousInfo(["0.0.0.0:1734"], ["0.0.0.0:1750"], 0)
    hvd_config = horovod.HorovodContext.from_configs(cfg, rendezvous_info, env.hparams)
    return env, rendezvous_info, hvd_config


@contextlib.contextmanager
def _local_execution_manager(context_dir: pathlib.Path) -> Iterator[None]:
    """Run the block in ``context_dir`` with it first on ``sys.path`` (as a trial runs)."""
    cwd = os.getcwd()
    path = os.path.abspath(os.fspath(context_dir))
    sys.path.insert(0, path)
    try:
        os.chdir(path)
        yield
    finally:
        os.chdir(cwd)
        if path in sys.path:
            sys.path.remove(path)
