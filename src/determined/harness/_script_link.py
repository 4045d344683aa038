"""The script's side of a script trial: how a command run as a trial reaches its host.

A trial whose ``entrypoint`` is a command runs it as a child of the usual trial
process (the wrapper, :mod:`determined.harness._script_trial`), which stays the only
process talking to the local driver or the master. The child finds the wrapper through
its environment:

- ``DET_SCRIPT_LINK``: the address of the wrapper's
  ``multiprocessing.connection.Listener`` (an AF_UNIX socket path);
- ``DET_SCRIPT_AUTHKEY``: its authentication key, in hex;
- ``DET_CLUSTER_INFO``: a JSON file (:func:`write_cluster_info`):
  ``{"env": TrialEnv.to_dict(), "checkpoint_storage": {...}, "master_url": url or
  null, "latest_checkpoint": uuid or null}`` and, for a trial spanning machines,
  ``"rendezvous"`` (this machine's place; see :mod:`determined._info`);
- ``DET_TRIAL_ID``, ``DET_EXPERIMENT_ID``, ``DET_HPARAMS`` (JSON) and, when the trial
  resumes, ``DET_LATEST_CHECKPOINT`` (a checkpoint uuid), for scripts that read the
  environment directly.

:func:`connect` returns a :class:`ScriptLink` whose ``host`` speaks the pipe protocol of
:mod:`determined.harness._pipe_host` over the connection; outside a trial it returns
None. Example::

    link = connect()
    if link is not None:
        op = link.host.next_operation()
        link.host.report_training(10, {"avg_metrics": {"loss": 0.5},
                                       "batch_metrics": [], "num_inputs": 0})
"""

from __future__ import annotations

import dataclasses
import json
import os
from multiprocessing.connection import Client
from typing import Any, Dict, Mapping, Optional

from determined.harness._env import TrialEnv
from determined.harness._pipe_host import PipeHost
from determined.storage import StorageManager, build_storage, scratch_tag

__all__ = ["ScriptLink", "LinkHost", "connect", "load_cluster_info", "write_cluster_info",
           "LINK_ENV", "AUTHKEY_ENV", "CLUSTER_INFO_ENV", "LATEST_CHECKPOINT_ENV"]

LINK_ENV = "DET_SCRIPT_LINK"
AUTHKEY_ENV = "DET_SCRIPT_AUTHKEY"
CLUSTER_INFO_ENV = "DET_CLUSTER_INFO"
LATEST_CHECKPOINT_ENV = "DET_LATEST_CHECKPOINT"


class LinkHost(PipeHost):
    """The script's :class:`~determined.harness.TrialHost`: every call goes to the
    wrapper, which answers from the trial's real host. Calls come from one thread."""

    def close(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass


@dataclasses.dataclass
class ScriptLink:
    """What a script trial's command is given.

    Attributes:
        env: the trial (ids, hyperparameters, config, slots, ``latest_checkpoint``: the
            path of the checkpoint to resume from, or None).
        host: reports and searcher operations, through the wrapper.
        storage: the experiment's checkpoint storage.
        master_url: the master's URL, or None in a local run.
        latest_checkpoint: the uuid (storage id) of the checkpoint to resume from.
    """

    env: TrialEnv
    host: LinkHost
    storage: StorageManager
    master_url: Optional[str] = None
    latest_checkpoint: Optional[str] = None

    def close(self) -> None:
        self.host.close()


def write_cluster_info(path: str, env: TrialEnv, storage_config: Mapping[str, Any],
                       master_url: Optional[str], latest_checkpoint: Optional[str],
                       rendezvous: Optional[Mapping[str, Any]] = None) -> None:
    """Write the ``DET_CLUSTER_INFO`` file (see the module docstring)."""
    info: Dict[str, Any] = {"env": env.to_dict(), "checkpoint_storage": dict(storage_config),
                            "master_url": master_url, "latest_checkpoint": latest_checkpoint}
    if rendezvous is not None:
        info["rendezvous"] = dict(rendezvous)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(info, f, default=str)


def load_cluster_info(environ: Optional[Mapping[str, str]] = None) -> Optional[Dict[str, Any]]:
    """The ``DET_CLUSTER_INFO`` file's content, or None outside a script trial."""
    path = (os.environ if environ is None else environ).get(CLUSTER_INFO_ENV)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            info: Dict[str, Any] = json.load(f)
    except (OSError, ValueError) as e:
        raise RuntimeError(f"{CLUSTER_INFO_ENV}={path!r} cannot be read: {e}") from None
    return info


def connect(environ: Optional[Mapping[str, str]] = None) -> Optional[ScriptLink]:
    """Connect to the wrapper of this script trial; None when not run as one
    (``DET_SCRIPT_LINK`` unset). Call once per process (the chief's)."""
    environ = os.environ if environ is None else environ
    address = environ.get(LINK_ENV)
    if not address:
        return None
    info = load_cluster_info(environ)
    if info is None:
        raise RuntimeError(f"{LINK_ENV} is set but {CLUSTER_INFO_ENV} is not")
    try:
        authkey = bytes.fromhex(environ.get(AUTHKEY_ENV, ""))
    except ValueError:
        raise RuntimeError(f"Expected hex digits in {AUTHKEY_ENV}") from None
    conn = Client(address, family="AF_UNIX", authkey=authkey)
    env = TrialEnv.from_dict(info["env"])
    storage = build_storage(info["checkpoint_storage"])
    if env.experiment_id and env.trial_id and hasattr(storage, "scratch_tag"):
        # Unfinished writes carry the trial, so its next process can remove them.
        storage.scratch_tag = scratch_tag(env.experiment_id, env.trial_id, env.owner)
    return ScriptLink(env=env, host=LinkHost(conn), storage=storage,
                      master_url=info.get("master_url"),
                      latest_checkpoint=info.get("latest_checkpoint"))
