"""``det.get_cluster_info()``: what a script learns about the trial it runs as
(Determined 0.38's ``ClusterInfo``), read from the file named by ``DET_CLUSTER_INFO``
that the platform writes for a script entrypoint. None outside the platform.

The file: ``{"env": TrialEnv.to_dict(), "checkpoint_storage": {...},
"master_url": str or null}``, and for a trial spanning machines ``"rendezvous":
{"container_addrs": [...], "container_rank": int, "container_slot_counts": [...]}``
(this machine's place among them).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

from determined.storage import checkpoint_ref_uuid

__all__ = ["ClusterInfo", "TrialInfo", "RendezvousInfo", "get_cluster_info", "read_info_file"]

INFO_ENV = "DET_CLUSTER_INFO"


class RendezvousInfo:
    """The trial's containers (machines): addresses, this one's rank, slots on each."""

    def __init__(self, container_addrs: List[str], container_rank: int,
                 container_slot_counts: List[int]):
        self.container_addrs = container_addrs
        self.container_rank = container_rank
        self.container_slot_counts = container_slot_counts


class TrialInfo:
    """The running trial: ids, seed, hyperparameters, config."""

    def __init__(self, trial_id: int, experiment_id: int, trial_seed: int,
                 hparams: Dict[str, Any], config: Dict[str, Any], steps_completed: int = 0,
                 trial_run_id: int = 0, debug: bool = False, unique_port_offset: int = 0,
                 inter_node_network_interface: Optional[str] = None,
                 tensorboard_logging: bool = True):
        self.trial_id = trial_id
        self.experiment_id = experiment_id
        self.trial_seed = trial_seed
        self.hparams = hparams
        # Private as upstream: the config's shape is the platform's, not a stable API.
        self._config = config
        self._steps_completed = steps_completed
        self._trial_run_id = trial_run_id
        self._debug = debug
        self._unique_port_offset = unique_port_offset
        self._inter_node_network_interface = inter_node_network_interface
        self._tensorboard_logging = tensorboard_logging

    @property
    def id(self) -> int:  # noqa: A003 - upstream's name in its examples
        return self.trial_id


class ClusterInfo:
    """What the platform tells a task about itself (upstream's attributes)."""

    def __init__(self, master_url: Optional[str], cluster_id: str, agent_id: str,
                 slot_ids: List[int], task_id: str, allocation_id: str, session_token: str,
                 task_type: str, master_cert_name: Optional[str] = None,
                 master_cert_file: Optional[str] = None,
                 latest_checkpoint: Optional[str] = None,
                 trial_info: Optional[TrialInfo] = None,
                 rendezvous_info: Optional[RendezvousInfo] = None,
                 gpu_uuids: Optional[List[str]] = None):
        self.master_url = master_url
        self.cluster_id = cluster_id
        self.agent_id = agent_id
        self.slot_ids = slot_ids
        self.task_id = task_id
        self.allocation_id = allocation_id
        self.session_token = session_token
        self.task_type = task_type
        self.master_cert_name = master_cert_name
        self.master_cert_file = master_cert_file
        self._latest_checkpoint = latest_checkpoint
        self._trial_info = trial_info
        self._rendezvous_info = rendezvous_info or RendezvousInfo(["127.0.0.1"], 0,
                                                                  [len(slot_ids)])
        self._gpu_uuids = list(gpu_uuids or [])

    @property
    def latest_checkpoint(self) -> Optional[str]:
        """The storage id of the checkpoint to resume from (this trial's latest, or the
        one it warm-starts from); None for a fresh trial."""
        return self._latest_checkpoint if self.task_type == "TRIAL" else None

    @property
    def trial(self) -> TrialInfo:
        if self.task_type != "TRIAL" or self._trial_info is None:
            raise RuntimeError(f'ClusterInfo.trial exists only for task_type "TRIAL" '
                               f'(this task: {self.task_type!r})')
        return self._trial_info

    @property
    def user_data(self) -> Dict[str, Any]:
        """The config's ``data`` section."""
        if self.task_type != "TRIAL" or self._trial_info is None:
            return {}
        return dict(self._trial_info._config.get("data") or {})

    @property
    def container_addrs(self) -> List[str]:
        return self._rendezvous_info.container_addrs

    @property
    def container_rank(self) -> int:
        return self._rendezvous_info.container_rank

    @property
    def container_slot_counts(self) -> List[int]:
        return self._rendezvous_info.container_slot_counts

    @property
    def gpu_uuids(self) -> List[str]:
        return list(self._gpu_uuids)


def read_info_file(path: str) -> Tuple[Dict[str, Any], Dict[str, Any], Optional[str]]:
    """(TrialEnv dict, checkpoint_storage section, master URL) from the info file; the
    env's ``latest_checkpoint`` is a storage id here."""
    return _parse_info(path, _load_info(path))


def _load_info(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise RuntimeError(f"{INFO_ENV}={path}: cannot read it: {e.strerror}") from None
    except ValueError as e:
        raise RuntimeError(f"{INFO_ENV}={path}: not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise RuntimeError(f"{INFO_ENV}={path}: expected a JSON object")
    return data


def _parse_info(path: str, data: Dict[str, Any]
                ) -> Tuple[Dict[str, Any], Dict[str, Any], Optional[str]]:
    env = data.get("env")
    if not isinstance(env, dict):  # TrialEnv fields at the top level
        env = {k: v for k, v in data.items()
               if k not in ("checkpoint_storage", "storage", "master_url")}
    if "experiment_config" not in env:
        raise RuntimeError(f"{INFO_ENV}={path}: expected the trial's env "
                           "(experiment_config, hparams, trial_id, ...)")
    if data.get("latest_checkpoint"):  # the storage id, beside the env's path
        env = dict(env, latest_checkpoint=data["latest_checkpoint"])
    storage = data.get("checkpoint_storage") or data.get("storage") or \
        (env.get("experiment_config") or {}).get("checkpoint_storage") or {}
    return env, dict(storage), data.get("master_url")


def _slot_ids(size: int) -> List[int]:
    """This machine's slots of the trial: ``DET_SLOT_IDS`` (a JSON list, or numbers
    separated by commas as agents set it), else the visible GPUs, else ``size`` slots."""
    raw = os.environ.get("DET_SLOT_IDS", "").strip()
    if raw:
        try:
            ids = json.loads(raw if raw.startswith("[") else f"[{raw}]")
            if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                return ids
        except ValueError:
            pass
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if visible and all(p.strip().isdigit() for p in visible.split(",")):
        return [int(p) for p in visible.split(",")]
    return list(range(size))


def _rendezvous_info(raw: Any, dist: Dict[str, Any], agents: int,
                     per_agent: int) -> RendezvousInfo:
    """The trial's machines: the info file's ``rendezvous`` (written for a trial spanning
    machines), else ``agents`` machines reached at the chief's address."""
    if isinstance(raw, dict):
        return RendezvousInfo([str(a) for a in raw["container_addrs"]],
                              int(raw["container_rank"]),
                              [int(n) for n in raw["container_slot_counts"]])
    return RendezvousInfo([str(dist.get("master_addr") or "127.0.0.1")] * agents,
                          int(os.environ.get("DET_CONTAINER_RANK", "0") or 0),
                          [per_agent] * agents)


def cluster_info_from(env: Dict[str, Any], master_url: Optional[str],
                      rendezvous: Optional[Dict[str, Any]] = None) -> ClusterInfo:
    """A ClusterInfo for a trial environment (``TrialEnv.to_dict()``) and, for a trial
    spanning machines, its ``rendezvous`` (``container_addrs``, ``container_rank``,
    ``container_slot_counts``)."""
    config = env.get("experiment_config") or {}
    dist = env.get("distributed") or {}
    experiment_id, trial_id = int(env.get("experiment_id") or 0), int(env.get("trial_id") or 0)
    slots = int((config.get("resources") or {}).get("slots_per_trial") or 1)
    agents = max(1, int(dist.get("num_agents") or 1))
    machines = _rendezvous_info(rendezvous, dist, agents, max(1, slots // agents))
    latest = env.get("latest_checkpoint")
    trial = TrialInfo(
        trial_id=trial_id, experiment_id=experiment_id, trial_seed=int(env.get("trial_seed") or 0),
        hparams=dict(env.get("hparams") or {}), config=config,
        unique_port_offset=int(os.environ.get("DET_UNIQUE_PORT_OFFSET", "0") or 0),
        debug=bool(config.get("debug", False)))
    counts = machines.container_slot_counts
    per_agent = counts[min(machines.container_rank, len(counts) - 1)]
    return ClusterInfo(
        master_url=master_url,
        cluster_id=os.environ.get("DET_CLUSTER_ID", ""),
        agent_id=os.environ.get("DET_AGENT_ID", "local"),
        slot_ids=_slot_ids(per_agent),
        task_id=f"{experiment_id}.{trial_id}",
        allocation_id=f"{experiment_id}.{trial_id}.1",
        session_token=os.environ.get("DET_SESSION_TOKEN", ""),
        task_type="TRIAL",
        latest_checkpoint=checkpoint_ref_uuid(latest) if latest else None,
        trial_info=trial,
        rendezvous_info=machines,
    )


_cache: Dict[str, ClusterInfo] = {}


def get_cluster_info() -> Optional[ClusterInfo]:
    """The :class:`ClusterInfo` of the trial this process runs as; None when not run by
    the platform (``python train.py`` by hand)."""
    path = os.environ.get(INFO_ENV)
    if not path:
        return None
    if path not in _cache:
        data = _load_info(path)
        env, _, master_url = _parse_info(path, data)
        _cache[path] = cluster_info_from(env, master_url, data.get("rendezvous"))
    return _cache[path]
