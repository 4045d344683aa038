"""Everything a trial process is told about the trial it runs."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional

__all__ = ["TrialEnv", "DistributedInfo"]


@dataclasses.dataclass(frozen=True)
class DistributedInfo:
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    num_agents: int = 1


@dataclasses.dataclass(frozen=True)
class TrialEnv:
    """The trial's identity, its hyperparameters and where its files are.

    Attributes:
        experiment_config: the normalized config (see ``determined.config``).
        hparams: this trial's sampled hyperparameters (plain values).
        model_dir: the context directory holding the entrypoint module.
        latest_checkpoint: path of a checkpoint to resume from (restart or warm start).
        warm_start: True when ``latest_checkpoint`` only supplies weights (a warm start
            from another trial) rather than a restart of this trial.
    """

    experiment_config: Dict[str, Any]
    hparams: Dict[str, Any]
    model_dir: str
    experiment_id: int = 0
    trial_id: int = 0
    trial_seed: int = 0
    latest_checkpoint: Optional[str] = None
    warm_start: bool = False
    distributed: DistributedInfo = dataclasses.field(default_factory=DistributedInfo)
    test_mode: bool = False
    managed: bool = True  # False for the Native API's in-process trials
