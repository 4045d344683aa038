"""``core.init()`` and ``core.Context`` (Determined 0.38's Core API entry point).

On the platform (a script entrypoint: ``DET_CLUSTER_INFO`` is set) the chief talks to
the trial through ``determined.harness._script_link.connect()`` and the other ranks
read the info file; off the platform everything goes to a local directory
(``determined.core._local``). While it is open, a script that configured no logging
shows the ``determined.*`` INFO lines on stderr (``determined.core._logging``).
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import threading
import traceback
import types
from typing import Any, Callable, Dict, Optional, Union

from determined import _info
from determined.core._checkpoint import CheckpointContext
from determined.core._distributed import DistributedContext, DummyDistributedContext
from determined.core._local import DirectoryHost, default_directory
from determined.core._logging import show_determined_logs
from determined.core._preempt import PreemptContext, PreemptMode
from determined.core._searcher import SearcherContext
from determined.core._session import Session
from determined.core._train import EarlyExitReason, TensorboardMode, TrainContext
from determined.errors import InvalidHP
from determined.harness._env import TrialEnv
from determined.storage import StorageManager, build_storage, scratch_tag

__all__ = ["Context", "context_for", "init"]

logger = logging.getLogger("determined.core")


class Context:
    """The Core API: ``.train``, ``.checkpoint``, ``.searcher``, ``.preempt``,
    ``.distributed`` and ``.info`` (None off the platform). Build it with
    ``with core.init() as core_context:``."""

    def __init__(self, checkpoint: CheckpointContext,
                 distributed: Optional[DistributedContext] = None,
                 preempt: Optional[PreemptContext] = None,
                 train: Optional[TrainContext] = None,
                 searcher: Optional[SearcherContext] = None,
                 info: Optional[_info.ClusterInfo] = None,
                 _tensorboard: Optional[Any] = None) -> None:
        self.checkpoint = checkpoint
        self.distributed = distributed or DummyDistributedContext()
        session = checkpoint._session
        self.preempt = preempt or PreemptContext(session, self.distributed)
        self.train = train or TrainContext(session, self.distributed)
        self.searcher = searcher or SearcherContext(session, self.distributed)
        self.info = info
        self._tensorboard = _tensorboard
        self._end_logging: Callable[[], None] = lambda: None  # init() sets it

    def start(self) -> None:
        self.preempt.start()

    def __enter__(self) -> "Context":
        self.start()
        return self

    def close(self, exc_type: Optional[type] = None, exc_val: Optional[BaseException] = None,
              exc_tb: Optional[types.TracebackType] = None) -> None:
        self.preempt.close()
        self.checkpoint._session.close()
        if self._tensorboard is not None:
            try:
                self._tensorboard.close()
            except Exception as e:  # noqa: BLE001 - event files never fail the trial
                logger.warning("closing TensorBoard files failed: %s", e)
        self.distributed.close()
        self._end_logging()

    def __exit__(self, exc_type: Optional[type], exc_val: Optional[BaseException],
                 exc_tb: Optional[types.TracebackType]) -> None:
        if isinstance(exc_val, InvalidHP):
            # 0.38: an invalid hyperparameter set ends the trial cleanly.
            self.train.report_early_exit(EarlyExitReason.INVALID_HP)
            logger.info("InvalidHP raised: the trial exits early (exit code 0)")
            self.close(exc_type, exc_val, exc_tb)
            sys.exit(0)
        self.close(exc_type, exc_val, exc_tb)


def _storage_from_arg(value: Union[str, Dict[str, Any]]) -> StorageManager:
    """``checkpoint_storage`` of ``core.init``: a directory, ``s3://bucket[/prefix]``,
    ``gs://bucket[/prefix]``, or a ``checkpoint_storage`` config section."""
    if isinstance(value, dict):
        return build_storage(value)
    if not isinstance(value, str) or not value:
        raise TypeError("Expected core.init checkpoint_storage to be a path, an s3:// or "
                        f"gs:// URL, or a dict. Received: {value!r}")
    for scheme, kind in (("s3://", "s3"), ("gs://", "gcs")):
        if value.startswith(scheme):
            bucket, _, prefix = value[len(scheme):].partition("/")
            return build_storage({"type": kind, "bucket": bucket, "prefix": prefix or None})
    return build_storage({"type": "shared_fs", "host_path": os.path.abspath(value)})


def _script_link() -> Any:
    """``determined.harness._script_link.connect()``, or None when that module (or the
    link) is not there."""
    try:
        module = importlib.import_module("determined.harness._script_link")
    except ImportError:
        return None
    return module.connect()


def _install_stacktrace_on_sigusr1() -> None:
    """SIGUSR1 prints the stack (of a hung script, for example) to stderr."""
    if not hasattr(signal, "SIGUSR1") or threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGUSR1)

    def handler(signum: int, frame: Any) -> None:
        traceback.print_stack(frame, file=sys.stderr)
        if callable(previous):
            previous(signum, frame)

    signal.signal(signal.SIGUSR1, handler)


def _platform_session(dist: DistributedContext, info_path: str,
                      checkpoint_storage: Any) -> Session:
    if dist.rank == 0:
        link = _script_link()
        if link is None:
            raise RuntimeError(
                f"DET_CLUSTER_INFO is set ({info_path}) but the trial's link is not "
                "(DET_SCRIPT_LINK): the chief must be the process the platform started")
        env, host, storage = link.env, link.host, link.storage
        on_close = getattr(link, "close", None)
    else:
        on_close = None
        env_dict, storage_config, _ = _info.read_info_file(info_path)
        env, host, storage = TrialEnv.from_dict(env_dict), None, build_storage(storage_config)
    if checkpoint_storage is not None:
        storage = _storage_from_arg(checkpoint_storage)
    if env.experiment_id and env.trial_id and hasattr(storage, "scratch_tag"):
        # Tagged as a Trial's writes are: the trial's next process removes them.
        storage.scratch_tag = scratch_tag(env.experiment_id, env.trial_id, env.owner)
    return Session(host=host, storage=storage, env=env, on_close=on_close)


def _tensorboard_for(session: Session, dist: DistributedContext) -> Optional[Any]:
    """The chief's TensorBoard writer and sync (as a Trial's); None when unavailable."""
    if dist.rank != 0 or session.env is None:
        return None
    try:
        from determined import tensorboard

        tensorboard.prepare_base_path(session.env)
        return tensorboard.build_trial_tensorboard(session.env, session.storage)
    except Exception as e:  # noqa: BLE001 - metrics still reach the master
        logger.warning("TensorBoard files are not written: %s", e)
        return None


def _check_one_process(info: Any) -> None:
    """Without a DistributedContext this process is the trial's only one: a rank of
    several (a launcher set ``WORLD_SIZE``) would act as the chief too, so that is an
    error naming the fix; a multi-slot trial run as one process gets a warning."""
    world = os.environ.get("WORLD_SIZE", "1")
    if world.isdigit() and int(world) > 1:
        raise ValueError(
            f"core.init() runs in rank {os.environ.get('RANK', '?')} of {world} (a launcher "
            "such as determined.launch.torch_distributed started them) but got no "
            "DistributedContext; pass distributed="
            "det.core.DistributedContext.from_torch_distributed()")
    machines = len(info.container_addrs)
    if machines > 1 and info.container_rank > 0:
        raise ValueError(
            f"core.init() runs on machine {info.container_rank} of the trial's {machines} "
            "but got no DistributedContext: only the chief machine's process talks to the "
            "platform; start the ranks with determined.launch.torch_distributed and pass "
            "distributed=det.core.DistributedContext.from_torch_distributed()")
    if machines > 1 or len(info.slot_ids) > 1:
        where = f" here, on one of {machines} machines" if machines > 1 else ""
        logger.warning("core.init() got no DistributedContext: this one process uses the "
                       "trial's %d slot%s%s", len(info.slot_ids),
                       "" if len(info.slot_ids) == 1 else "s", where)


def init(*, distributed: Optional[DistributedContext] = None,
         checkpoint_storage: Optional[Union[str, Dict[str, Any]]] = None,
         preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
         tensorboard_mode: TensorboardMode = TensorboardMode.AUTO) -> Context:
    """The Core API for this process: ``with det.core.init() as core_context: ...``.

    Args:
        distributed: required when the trial has several processes (e.g.
            ``DistributedContext.from_torch_distributed()``).
        checkpoint_storage: other checkpoint storage than the trial's (or, off the
            platform, than ``<DET_CORE_DIR>/checkpoints``): a directory,
            ``s3://bucket[/prefix]``, ``gs://bucket[/prefix]`` or a config section.
        preempt_mode: how ranks call ``preempt.should_preempt()``.
        tensorboard_mode: AUTO writes reported metrics as TensorBoard events.
    """
    dist = distributed or DummyDistributedContext()
    if not isinstance(dist, DistributedContext):
        raise TypeError(f"Expected core.init distributed to be a DistributedContext. "
                        f"Received: {type(dist).__name__}")
    preempt_mode = PreemptMode(preempt_mode)
    tensorboard_mode = TensorboardMode(tensorboard_mode)
    end_logging = show_determined_logs()
    try:
        context = _init(dist, distributed, checkpoint_storage, preempt_mode, tensorboard_mode)
    except BaseException:
        end_logging()
        raise
    context._end_logging = end_logging
    return context


def _init(dist: DistributedContext, distributed: Optional[DistributedContext],
          checkpoint_storage: Optional[Union[str, Dict[str, Any]]], preempt_mode: PreemptMode,
          tensorboard_mode: TensorboardMode) -> Context:
    info_path = os.environ.get(_info.INFO_ENV)
    tb = None
    if info_path:
        info = _info.get_cluster_info()
        assert info is not None
        if distributed is None:
            _check_one_process(info)
        session = _platform_session(dist, info_path, checkpoint_storage)
        tb = _tensorboard_for(session, dist)
    else:
        info = None
        directory = default_directory()
        storage = (_storage_from_arg(checkpoint_storage) if checkpoint_storage is not None
                   else build_storage({"type": "shared_fs",
                                       "host_path": os.path.join(directory, "checkpoints")}))
        host = DirectoryHost(directory, describe=storage.describe) if dist.rank == 0 else None
        if dist.rank == 0:
            logger.info("not run by the platform: metrics go to %s/metrics.jsonl, checkpoints "
                        "to %s", directory, storage.describe("<storage_id>"))
        session = Session(host=host, storage=storage, env=None)
    _install_stacktrace_on_sigusr1()
    return context_for(session, dist, info, preempt_mode, tensorboard_mode, tb)


def context_for(session: Session, dist: DistributedContext,
                info: Optional[_info.ClusterInfo] = None,
                preempt_mode: PreemptMode = PreemptMode.WorkersAskChief,
                tensorboard_mode: TensorboardMode = TensorboardMode.AUTO,
                tensorboard: Optional[Any] = None) -> Context:
    """A Context over ``session`` (any TrialHost and storage: in-process hosts too)."""
    return Context(
        checkpoint=CheckpointContext(session, dist),
        distributed=dist,
        preempt=PreemptContext(session, dist, preempt_mode),
        train=TrainContext(session, dist, tensorboard_mode, tensorboard),
        searcher=SearcherContext(session, dist),
        info=info,
        _tensorboard=tensorboard,
    )
