"""Upstream 0.13's ``determined.horovod``.

There is no Horovod here: distributed PyTorch trials use ``torch.distributed`` (gloo),
and TensorFlow trials run on one slot. :class:`HorovodContext` still describes the
config's distributed settings (``use`` is True when ``slots_per_trial`` > 1), and
:data:`hvd` answers ``rank()``/``size()``/``local_rank()`` for this process, delegating
to the ``horovod`` package only where one is installed and initialized.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from determined import constants
from determined._env_context import EnvContext, ExperimentConfig, RendezvousInfo
from determined_common import check

__all__ = [
    "ExperimentConfig", "HorovodContext", "RendezvousInfo", "check", "constants",
    "create_hostlist_arg", "create_network_interface_arg_if_specified",
    "create_performance_args", "create_run_command", "hvd",
]


class _PolyHorovod:
    """``horovod.tensorflow``/``horovod.torch`` when loaded, else this single process."""

    def __init__(self) -> None:
        self._backend: Any = None

    def require_horovod_type(self, horovod_type: str, reason: str) -> None:
        try:
            import importlib

            self._backend = importlib.import_module(f"horovod.{horovod_type}")
        except ImportError:
            raise RuntimeError(f"{reason}: horovod.{horovod_type} is not installed; this "
                               "platform trains distributed PyTorch with torch.distributed") from None

    def _env_int(self, name: str, default: int) -> int:
        value = os.environ.get(name)
        return int(value) if value and value.isdigit() else default

    def rank(self) -> int:
        return self._backend.rank() if self._backend else self._env_int("RANK", 0)

    def size(self) -> int:
        return self._backend.size() if self._backend else self._env_int("WORLD_SIZE", 1)

    def local_rank(self) -> int:
        return self._backend.local_rank() if self._backend else self._env_int("LOCAL_RANK", 0)

    def local_size(self) -> int:
        return self._backend.local_size() if self._backend else self._env_int("LOCAL_WORLD_SIZE", 1)

    def cross_rank(self) -> int:
        return self.rank() // max(self.local_size(), 1)

    def cross_size(self) -> int:
        return max(self.size() // max(self.local_size(), 1), 1)

    def __getattr__(self, name: str) -> Any:
        if self._backend is not None:
            return getattr(self._backend, name)
        raise AttributeError(f"hvd.{name}: Horovod is not in use in this process")


hvd = _PolyHorovod()


class HorovodContext:
    """The distributed-training settings of a trial (``optimizations`` + slots)."""

    def __init__(
        self,
        use: bool,
        aggregation_frequency: int,
        fp16_compression: bool,
        grad_updates_size_file: Optional[str],
        average_aggregated_gradients: bool,
        average_training_metrics: bool,
    ):
        self.use = use
        self.aggregation_frequency = aggregation_frequency
        self.fp16_compression = fp16_compression
        self.grad_updates_size_file = grad_updates_size_file
        self.average_aggregated_gradients = average_aggregated_gradients
        self.average_training_metrics = average_training_metrics

    @staticmethod
    def from_configs(
        experiment_config: Dict[str, Any],
        rendezvous_info: RendezvousInfo,
        hparams: Dict[str, Any],
    ) -> "HorovodContext":
        config = ExperimentConfig(experiment_config)
        opts = config.get("optimizations") or {}
        use = config.slots_per_trial() > 1 and not config.native_parallel_enabled()
        return HorovodContext(
            use=use,
            aggregation_frequency=int(opts.get("aggregation_frequency", 1)),
            fp16_compression=bool(opts.get("gradient_compression", False)),
            grad_updates_size_file=opts.get("grad_updates_size_file"),
            average_aggregated_gradients=bool(opts.get("average_aggregated_gradients", True)),
            average_training_metrics=bool(opts.get("average_training_metrics", False)),
        )


def create_hostlist_arg(num_gpus_per_machine: int, ip_addresses: List[str]) -> str:
    """``horovodrun -H``'s value: ``ip:slots`` per machine."""
    check.gt(num_gpus_per_machine, 0, "num_gpus_per_machine")
    return ",".join(f"{ip}:{num_gpus_per_machine}" for ip in ip_addresses)


def create_network_interface_arg_if_specified(env: EnvContext, num_machines: int) -> List[str]:
    iface = env.det_trial_runner_network_interface
    if num_machines > 1 and iface and iface != "DET_AUTO_DETECT_NETWORK_INTERFACE":
        return ["--network-interface", str(iface)]
    return []


def create_performance_args(env: EnvContext) -> List[str]:
    opts = env.experiment_config.get("optimizations") or {}
    args = [
        "--fusion-threshold-mb", str(opts.get("tensor_fusion_threshold", 64)),
        "--cycle-time-ms", str(opts.get("tensor_fusion_cycle_time", 5)),
        "--cache-capacity", "1024",
        "--hierarchical-allreduce", "--hierarchical-allgather",
    ]
    if opts.get("auto_tune_tensor_fusion"):
        args += ["--autotune", "--autotune-log-file", constants.HOROVOD_AUTOTUNE_LOG_FILEPATH]
    return args


def create_run_command(
    num_gpus_per_machine: int,
    ip_addresses: List[str],
    env: EnvContext,
    debug: bool,
    optional_args: List[str],
    worker_process_env_path: str,
) -> List[str]:
    """The ``horovodrun`` command line upstream used to start a distributed trial's workers
    (for reference: this platform starts its own processes, see ``harness._ranks``)."""
    num_machines = len(ip_addresses)
    cmd = ["horovodrun", "-np", str(num_machines * num_gpus_per_machine),
           "-H", create_hostlist_arg(num_gpus_per_machine, ip_addresses),
           "--start-timeout", str(constants.HOROVOD_STARTUP_TIMEOUT_SECONDS),
           "--gloo-timeout-seconds", str(constants.HOROVOD_GLOO_TIMEOUT_SECONDS)]
    cmd += create_network_interface_arg_if_specified(env, num_machines)
    cmd += create_performance_args(env)
    if debug:
        cmd.append("--verbose")
    cmd += list(optional_args)
    cmd += ["python", "-m", "determined.exec.worker_process", worker_process_env_path]
    return cmd
