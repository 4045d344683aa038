"""Upstream 0.13's ``det.EnvContext``, ``det.RendezvousInfo`` and ``det.ExperimentConfig``.

These are the objects upstream handed to controllers and contexts. Here a trial's
environment is :class:`determined.harness.TrialEnv`; :meth:`EnvContext.from_trial_env`
and :meth:`EnvContext.to_trial_env` convert between the two.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from determined import config
from determined.harness._env import DistributedInfo, TrialEnv

__all__ = ["EnvContext", "ExperimentConfig", "RendezvousInfo"]


class ExperimentConfig(dict):
    """Upstream 0.13's ``det.ExperimentConfig``: the experiment config as a plain dict
    with upstream's accessor methods, kept for user code written against 0.13.

    One config, three names: :func:`determined.config.validate_config` checks a config
    against the schema (``ExperimentConfigModel``, used for validation only) and
    returns the normalized dict; :class:`determined.config.ExperimentConfig` is the
    typed view our code reads it with; this class is that dict as upstream handed it
    to trials. The methods both have read through the typed view.
    """

    @property
    def _typed(self) -> config.ExperimentConfig:
        return config.ExperimentConfig(self)

    def _section(self, name: str) -> Dict[str, Any]:
        return self.get(name) or {}

    def debug_enabled(self) -> bool:
        return bool(self.get("debug", False))

    def horovod_optional_args(self) -> List[str]:
        return list(self._section("data").get("__det_dtrain_args", []))

    def profile_frequency(self) -> Optional[int]:
        return self._section("data").get("__det_profile_frequency")

    def scheduling_unit(self) -> int:
        return self._typed.scheduling_unit

    def native_enabled(self) -> bool:
        return "command" in (self._section("internal").get("native") or {})

    def native_parallel_enabled(self) -> bool:
        return bool(self._section("resources").get("native_parallel", False))

    def mixed_precision_enabled(self) -> bool:
        return self._section("optimizations").get("mixed_precision", "O0") != "O0"

    def averaging_training_metrics_enabled(self) -> bool:
        return bool(self._section("optimizations").get("average_training_metrics", False))

    def input_from_dataflow(self) -> bool:
        return bool(self._section("data").get("dataflow_to_tf_dataset", False))

    def slots_per_trial(self) -> int:
        return self._typed.slots_per_trial

    def experiment_seed(self) -> int:
        return self._typed.experiment_seed

    def get_data_layer_type(self) -> str:
        return str(self._section("data_layer").get("type", "shared_fs"))


class RendezvousInfo:
    """Where the processes of a distributed trial meet: ``addrs`` ("host:port" per machine),
    ``addrs2`` (a second port per machine) and this machine's ``rank``."""

    def __init__(self, addrs: List[str], addrs2: List[str], rank: int):
        self.addrs = list(addrs)
        self.addrs2 = list(addrs2)
        self.rank = rank

    def get_rank(self) -> int:
        return self.rank

    def get_size(self) -> int:
        return len(self.addrs)

    def get_addrs(self) -> List[str]:
        return self.addrs

    def get_addrs2(self) -> List[str]:
        return self.addrs2

    def get_ip_addresses(self) -> List[str]:
        return [a.rsplit(":", 1)[0] for a in self.addrs]

    def get_ports(self) -> List[int]:
        return [int(a.rsplit(":", 1)[1]) for a in self.addrs]

    def get_second_ports(self) -> List[int]:
        return [int(a.rsplit(":", 1)[1]) for a in self.addrs2]

    def is_distributed_trial(self) -> bool:
        return len(self.addrs) > 1

    @classmethod
    def from_distributed_info(cls, info: DistributedInfo) -> "RendezvousInfo":
        addr = f"{info.master_addr}:{info.master_port}"
        addrs = [addr] * max(info.num_agents, 1)
        return cls(addrs, addrs, info.node_rank)


class EnvContext:
    """Everything a trial process knows about its trial, in upstream 0.13's shape."""

    def __init__(
        self,
        master_addr: str,
        master_port: int,
        use_tls: bool,
        master_cert_file: Optional[str],
        container_id: str,
        experiment_config: Dict[str, Any],
        hparams: Dict[str, Any],
        initial_workload: Any,
        latest_checkpoint: Optional[Any],
        use_gpu: bool,
        container_gpus: List[str],
        slot_ids: List[int],
        debug: bool,
        workload_manager_type: str,
        det_rendezvous_ports: str,
        det_trial_runner_network_interface: str,
        det_trial_id: str,
        det_experiment_id: str,
        det_cluster_id: str,
        trial_seed: int,
        training: bool = True,
    ):
        self.master_addr = master_addr
        self.master_port = master_port
        self.use_tls = use_tls
        self.master_cert_file = master_cert_file
        self.container_id = container_id
        self.experiment_config = ExperimentConfig(experiment_config)
        self.hparams = hparams
        self.initial_workload = initial_workload
        self.latest_checkpoint = latest_checkpoint
        self.use_gpu = use_gpu
        self.container_gpus = container_gpus
        self.slot_ids = slot_ids
        self.debug = debug
        self.workload_manager_type = workload_manager_type
        self.det_rendezvous_ports = det_rendezvous_ports
        self.det_trial_runner_network_interface = det_trial_runner_network_interface
        self.det_trial_id = det_trial_id
        self.det_experiment_id = det_experiment_id
        self.det_cluster_id = det_cluster_id
        self.trial_seed = trial_seed
        self.training = training
        self._trial_env: Optional[TrialEnv] = None

    def first_step(self) -> int:
        return 1

    def rendezvous_ports(self) -> List[int]:
        return [int(p) for p in str(self.det_rendezvous_ports).split(",") if p]

    @property
    def per_slot_batch_size(self) -> int:
        return self.global_batch_size // self.experiment_config.slots_per_trial()

    @property
    def global_batch_size(self) -> int:
        return int(self.hparams["global_batch_size"])

    @classmethod
    def from_trial_env(cls, env: TrialEnv) -> "EnvContext":
        """The upstream view of this platform's trial environment."""
        info = env.distributed
        out = cls(
            master_addr=os.environ.get("DET_MASTER", ""), master_port=0, use_tls=False,
            master_cert_file=None, container_id=os.environ.get("DET_CONTAINER_ID", ""),
            experiment_config=env.experiment_config, hparams=env.hparams,
            initial_workload=None, latest_checkpoint=env.latest_checkpoint,
            use_gpu=bool(os.environ.get("CUDA_VISIBLE_DEVICES")), container_gpus=[],
            slot_ids=[info.local_rank], debug=bool(env.experiment_config.get("debug")),
            workload_manager_type="TRIAL_WORKLOAD_MANAGER",
            det_rendezvous_ports=str(info.master_port),
            det_trial_runner_network_interface="", det_trial_id=str(env.trial_id),
            det_experiment_id=str(env.experiment_id), det_cluster_id=env.owner,
            trial_seed=env.trial_seed, training=not env.test_mode,
        )
        out._trial_env = env
        return out

    def to_trial_env(self) -> TrialEnv:
        """This platform's trial environment for this context."""
        if self._trial_env is not None:
            return self._trial_env
        return TrialEnv(
            experiment_config=dict(self.experiment_config), hparams=dict(self.hparams),
            model_dir=os.getcwd(),
            experiment_id=int(self.det_experiment_id or 0),
            trial_id=int(self.det_trial_id or 0), trial_seed=int(self.trial_seed),
            latest_checkpoint=str(self.latest_checkpoint) if self.latest_checkpoint else None,
            test_mode=not self.training, managed=False,
        )
