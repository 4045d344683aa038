"""The trial context every framework's context extends (SPEC 4.1)."""

from __future__ import annotations

import copy
import logging
from typing import Any, Dict

from determined.harness._env import DistributedInfo, TrialEnv

__all__ = ["TrialContext", "DistributedContext"]

logger = logging.getLogger("determined")


class DistributedContext:
    """Where this process sits in a distributed trial (rank 0 is the chief)."""

    def __init__(self, info: DistributedInfo):
        self._info = info

    def get_rank(self) -> int:
        return self._info.rank

    def get_local_rank(self) -> int:
        return self._info.local_rank

    def get_size(self) -> int:
        return self._info.size

    def get_num_agents(self) -> int:
        return self._info.num_agents

    def is_chief(self) -> bool:
        return self._info.rank == 0


class TrialContext:
    """What user trial code may ask the platform about its trial.

    Example:
        >>> lr = context.get_hparam("lr")                      # doctest: +SKIP
        >>> batch = context.get_per_slot_batch_size()           # doctest: +SKIP
    """

    def __init__(self, env: TrialEnv, hvd_config: Any = None):
        if not isinstance(env, TrialEnv) and hasattr(env, "to_trial_env"):
            env = env.to_trial_env()  # an upstream det.EnvContext
        self.env = env
        self.hvd_config = hvd_config
        self.distributed = DistributedContext(env.distributed)
        self._stop_requested = False
        gbs = env.hparams.get("global_batch_size")
        if gbs is None:
            raise ValueError("hyperparameters must include global_batch_size")
        size = env.distributed.size
        if int(gbs) < size:
            raise ValueError(
                f"Expected hyperparameters.global_batch_size >= resources.slots_per_trial "
                f"({size}): every slot needs at least one record per batch. "
                f"Received: global_batch_size={gbs}"
            )
        self._per_slot_batch_size = int(gbs) // size
        self._global_batch_size = self._per_slot_batch_size * size
        if self._global_batch_size != int(gbs):
            logger.warning(
                "global_batch_size %s is not divisible by slots_per_trial %s; using %s",
                gbs, size, self._global_batch_size,
            )

    def get_experiment_config(self) -> Dict[str, Any]:
        return copy.deepcopy(self.env.experiment_config)

    def get_data_config(self) -> Dict[str, Any]:
        return copy.deepcopy(self.env.experiment_config.get("data") or {})

    def get_experiment_id(self) -> int:
        return self.env.experiment_id

    def get_trial_id(self) -> int:
        return self.env.trial_id

    def get_trial_seed(self) -> int:
        return self.env.trial_seed

    def get_hparams(self) -> Dict[str, Any]:
        return copy.deepcopy(self.env.hparams)

    def get_hparam(self, name: str) -> Any:
        """One hyperparameter by name; ValueError lists the known names if absent."""
        if name not in self.env.hparams:
            raise ValueError(
                f"Expected a hyperparameter defined in the experiment config. Received: "
                f"name={name!r}; defined: {', '.join(sorted(self.env.hparams))}"
            )
        if name == "global_batch_size":
            logger.warning(
                "Use context.get_per_slot_batch_size() or get_global_batch_size() "
                "instead of get_hparam('global_batch_size')."
            )
        return self.env.hparams[name]

    def get_global_batch_size(self) -> int:
        return self._global_batch_size

    def get_per_slot_batch_size(self) -> int:
        return self._per_slot_batch_size

    def get_stop_requested(self) -> bool:
        return self._stop_requested

    def set_stop_requested(self, stop_requested: bool) -> None:
        """Ask the platform to stop this trial after the current workload."""
        if not isinstance(stop_requested, bool):
            raise TypeError(
                f"Expected a bool. Received: stop_requested={stop_requested!r}"
            )
        self._stop_requested = stop_requested
