"""Everything a trial process is told about the trial it runs."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional

__all__ = ["TrialEnv", "DistributedInfo"]


@dataclasses.dataclass(frozen=True)
class DistributedInfo:
    """Where this process sits in its trial's group of processes (one per slot).

    Attributes:
        rank: 0..size-1; rank 0 is the chief.
        size: processes in the trial (``resources.slots_per_trial``).
        local_rank, local_size: the same on this machine.
        num_agents: machines the trial spans.
        node_rank: this machine's place among them (0: the chief's).
        master_addr, master_port: where rank 0 listens for the others to join
            (``torch.distributed``'s rendezvous; unused when ``size`` is 1).
    """

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    num_agents: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 0

    @property
    def is_chief(self) -> bool:
        return self.rank == 0


@dataclasses.dataclass(frozen=True)
class TrialEnv:
    """The trial's identity, its hyperparameters and where its files are.

    Attributes:
        experiment_config: the normalized config (see ``determined.config``).
        hparams: this trial's sampled hyperparameters (plain values).
        model_dir: the context directory holding the entrypoint module.
        latest_checkpoint: path of a checkpoint to resume from (restart or warm start).
        warm_start: True when ``latest_checkpoint`` is another trial's (a warm start:
            its state is restored but training starts at batch 0) rather than this one's.
        distributed: this process's place among the trial's processes.
        owner: the identity of the records that number this trial (a master's
            cluster ID, a local records directory's); its checkpoints carry it, so
            another store's experiment with the same IDs never takes them for its own.
        tensorboard_path: where its TensorBoard event files go, relative to the
            checkpoint storage root, as its master chose it; empty: under ``owner``
            (``determined.tensorboard.env_sync_path``).
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
    owner: str = ""
    tensorboard_path: str = ""

    @property
    def slots_per_trial(self) -> int:
        """``resources.slots_per_trial`` of the config (1 when absent)."""
        resources = self.experiment_config.get("resources") or {}
        return int(resources.get("slots_per_trial") or 1)

    def to_dict(self) -> Dict[str, Any]:
        """Plain JSON-able fields (the inverse of :meth:`from_dict`)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "TrialEnv":
        """Build from :meth:`to_dict` output (``distributed`` may be a dict or absent)."""
        d = dict(d)
        info = d.get("distributed")
        if isinstance(info, dict):
            d["distributed"] = DistributedInfo(**info)
        return cls(**d)
