"""The trial runner: turns a trial's searcher operations into workloads.

Who owns what: the *host* owns the searcher's operations and where results go;
the *sequencer* owns the counters that decide between training, validating and
checkpointing (SPEC 1.3); the *controller* owns the user's trial and the
framework; *storage* owns checkpoint files. The runner only connects them.

Distributed trials (``slots_per_trial`` > 1): every rank runs a runner; only
the chief (rank 0) talks to the host, and the runner broadcasts its operations
and decisions (stop, checkpoint after a validation, the checkpoint's UUID), so
all ranks run the same workloads (see ``_ranks``).
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
import uuid as uuidlib
from typing import Any, Dict, Optional, Type

import numpy as np

from determined import tensorboard
from determined._version import __version__
from determined.common.wording import counted
from determined.config import ExperimentConfig, missing_metric_text
from determined.errors import InvalidTrialError
from determined.harness._controller import TrialController
from determined.harness._collective import Collective
from determined.harness._env import TrialEnv
from determined.harness._frameworks import controller_for
from determined.harness._group import connect
from determined.harness._host import OpKind, TrialHost, TrialOp
from determined.harness._sequencer import Sequencer
from determined.harness._usercode import load_trial_class
from determined.harness._workload import Kind
from determined.storage import (StorageManager, copy_code, read_metadata, scratch_tag,
                                write_metadata)
from determined.util import format_metrics, plain_values

__all__ = ["TrialRunner", "ExitReason", "MISSING_METRIC"]

#: The attribute of the log record warning that validation metrics lack the searcher
#: metric (its value: the metric's name); a caller that reports it itself drops it.
MISSING_METRIC = "det_missing_searcher_metric"

logger = logging.getLogger("determined")


class ExitReason:
    COMPLETED = "completed"  # the searcher closed the trial
    STOPPED = "stopped"  # the host asked the trial to stop (pause, preemption)
    USER_REQUESTED_STOP = "user_requested_stop"


class TrialRunner:
    """Run one trial until its host closes it or asks it to stop.

    Args:
        env: the trial's environment.
        host: where operations come from and results go.
        storage: checkpoint storage.
        trial_class: the user's class; loaded from ``env`` when omitted.
    """

    def __init__(
        self,
        env: TrialEnv,
        host: TrialHost,
        storage: StorageManager,
        trial_class: Optional[Type[Any]] = None,
    ):
        self.env = env
        self.host = host
        self.storage = storage
        self.config = ExperimentConfig(env.experiment_config)
        random.seed(env.trial_seed)
        np.random.seed(env.trial_seed)
        if trial_class is None:
            trial_class = load_trial_class(env.experiment_config["entrypoint"], env.model_dir)
        self.trial_class = trial_class
        tensorboard.prepare_base_path(env)  # before user code picks its event directory
        self.controller: TrialController = controller_for(trial_class)(trial_class, env)
        self.is_chief = env.distributed.rank == 0
        # The chief writes the platform's metrics as event files and syncs them.
        self.tensorboard = tensorboard.build_trial_tensorboard(env, storage) if self.is_chief else None
        self.dist: Optional[Collective] = connect(env.distributed)  # None on one slot
        self.gbs = self.controller.context.get_global_batch_size()
        self.batches_trained = 0
        self.step_id = 0
        self.last_validation: Optional[Dict[str, Any]] = None
        self.last_validation_batches = -1
        self.latest_checkpoint: Optional[str] = None
        self._restored_last_validation = 0
        self._warned_metric = False
        if env.latest_checkpoint:
            self._restore(env.latest_checkpoint, weights_only=env.warm_start)
        if self.is_chief:
            self._remove_leftovers()
        cfg = self.config
        self.sequencer = Sequencer(
            scheduling_unit=cfg.scheduling_unit,
            min_validation_period=cfg.to_batches(cfg.raw.get("min_validation_period"), self.gbs),
            min_checkpoint_period=cfg.to_batches(cfg.raw.get("min_checkpoint_period"), self.gbs),
            batches_trained=self.batches_trained,
            since_validation=self.batches_trained - max(self._restored_last_validation, 0),
            since_checkpoint=0,
            need_initial_validation=bool(cfg.raw.get("perform_initial_validation"))
            and self.batches_trained == 0,
        )

    # ------------------------------------------------------------------ main loop

    def run(self) -> str:
        """Execute operations until the trial is closed or stopped; return an ExitReason."""
        try:
            while True:
                op = self._next_operation()
                if op.kind is OpKind.CLOSE:
                    self._finish()
                    # A Close sent to stop the trial (it resumes later) is no completion.
                    stopped = self.is_chief and self.host.should_stop()
                    return ExitReason.STOPPED if stopped else ExitReason.COMPLETED
                if op.kind is OpKind.TRAIN:
                    assert op.length is not None
                    target = self.config.length_to_batches(op.length, self.gbs)
                    while True:
                        nxt = self.sequencer.next_for_train(target)
                        if nxt is None:
                            break
                        if self._execute(nxt.kind, nxt.num_batches):
                            return self._stop()
                elif op.kind is OpKind.VALIDATE:
                    completed = False
                    while True:
                        nxt = self.sequencer.next_for_validate()
                        validation = nxt.kind is Kind.COMPUTE_VALIDATION_METRICS
                        if validation and self._validated_here():
                            break  # a period validation already ran at this batch count
                        # The validation that ends the loop completes the operation:
                        # one report tells both (before its callbacks run).
                        if self._execute(nxt.kind, nxt.num_batches, completes_op=validation):
                            return self._stop()
                        if validation:
                            completed = True
                            break
                    if self.is_chief and not completed:
                        assert self.last_validation is not None
                        self.host.validate_op_completed(
                            self.batches_trained, {"validation_metrics": self.last_validation}
                        )
                elif op.kind is OpKind.CHECKPOINT:
                    nxt = self.sequencer.next_for_checkpoint()
                    if nxt is not None and self._execute(nxt.kind):
                        return self._stop()
                    if self.latest_checkpoint is None:
                        self._checkpoint()
        finally:
            self.controller.close()
            if self.tensorboard is not None:
                self.tensorboard.close()

    def _execute(self, kind: Kind, num_batches: int = 0, completes_op: bool = False) -> bool:
        """Run one workload; True when the trial must stop now. ``completes_op``: a
        validation that completes the searcher's Validate operation."""
        if kind is Kind.RUN_STEP:
            self.step_id += 1
            metrics = self.controller.train(num_batches, self.batches_trained)
            if not self.controller.plain_training_metrics:
                metrics = plain_values(metrics)
            self.batches_trained += num_batches
            self.sequencer.trained(num_batches)
            if self.is_chief:
                self.host.report_training(self.batches_trained, metrics)
                if self.tensorboard is not None:
                    self.tensorboard.training(self.batches_trained - num_batches, num_batches,
                                              metrics)
        elif kind is Kind.COMPUTE_VALIDATION_METRICS:
            self._validate(completes_op)
        elif kind is Kind.CHECKPOINT_MODEL:
            self._checkpoint()
        return self._must_stop()

    def _next_operation(self) -> TrialOp:
        if self.dist is None:
            return self.host.next_operation()
        op = self.host.next_operation().to_dict() if self.is_chief else None
        return TrialOp.from_dict(self.dist.broadcast(op))

    def _must_stop(self) -> bool:
        """Whether to stop after this workload: the host says so (chief) or the user
        asked (any rank)."""
        user = self.sequencer.stop_requested or self.controller.context.get_stop_requested()
        host = self.is_chief and self.host.should_stop()
        if self.dist is not None:
            flags = self.dist.allgather((user, host))
            user, host = any(f[0] for f in flags), flags[0][1]
        self.sequencer.stop_requested = user
        return host or user

    def _validated_here(self) -> bool:
        return (
            self.last_validation is not None
            and self.last_validation_batches == self.batches_trained
            and not self.sequencer.need_initial_validation
        )

    def _report_validation(self, metrics: Dict[str, Any], completes_op: bool) -> None:
        if completes_op:
            self.host.report_validation_completing_op(self.batches_trained, metrics)
        else:
            self.host.report_validation(self.batches_trained, metrics)

    def _validate(self, completes_op: bool = False) -> None:
        metrics = plain_values(self.controller.validate(self.batches_trained))
        values = metrics.get("validation_metrics", {})
        name = self.config.metric
        if not name or (self.env.test_mode and name not in values):
            # Test mode (e.g. a partial config in --local --test): nothing to compare.
            if name and self.is_chief and not self._warned_metric:
                # Once per trial run, not per validation.
                self._warned_metric = True
                logger.warning("%s", missing_metric_text(self.env.experiment_config, values),
                               extra={MISSING_METRIC: name})
            self.last_validation = values
            self.last_validation_batches = self.batches_trained
            if self.is_chief:
                self._report_validation(metrics, completes_op)
            self.sequencer.validated(False)
            return
        if self.is_chief and name not in values:
            raise InvalidTrialError(missing_metric_text(
                self.env.experiment_config, values,
                where=f"the validation metrics of {self.trial_class.__qualname__}",
                fix="return it from evaluate_batch/evaluate_full_dataset"))
        post_ckpt = False
        if self.is_chief:
            value = _as_float(values[name], name)
            policy = self.config.checkpoint_policy
            # A checkpoint at this batch count already exists (the usual Validate: it
            # checkpoints first): nothing to ask, no post-validation checkpoint can follow.
            # NaN is never the best: no request, no checkpoint for it.
            post_ckpt = policy == "all" or (policy == "best"
                                            and self.sequencer.since_checkpoint > 0
                                            and not math.isnan(value)
                                            and self.host.is_best_validation(value))
            self._report_validation(metrics, completes_op)
            logger.info("validation at %s: %s", counted(self.batches_trained, "batch"),
                        format_metrics(values))
            if self.tensorboard is not None:
                self.tensorboard.validation(self.batches_trained, values)
        if self.dist is not None:
            values, post_ckpt = self.dist.broadcast((values, post_ckpt))
        self.controller.on_validation_end(values)  # every rank's callbacks, with the metrics
        self.last_validation = values
        self.last_validation_batches = self.batches_trained
        self.sequencer.validated(post_ckpt)

    def _checkpoint(self) -> None:
        self.sequencer.checkpointed()
        ckpt_uuid = self._save_checkpoint() if self.is_chief else None
        if self.dist is not None:
            # Also keeps the other ranks from training on while the chief writes.
            ckpt_uuid = self.dist.broadcast(ckpt_uuid)
        self.latest_checkpoint = ckpt_uuid

    def _save_checkpoint(self) -> str:
        """Write, publish and report a checkpoint (chief only); return its UUID."""
        ckpt_uuid = str(uuidlib.uuid4())
        start = time.time()
        with self.storage.store_path(ckpt_uuid) as path:
            self.controller.save(path, self.batches_trained)
            copy_code(self.env.model_dir, os.path.join(path, "code"),
                      exclude=[getattr(self.storage, "root", "")])
            metadata = self._metadata(ckpt_uuid, start)
            write_metadata(path, metadata)
            if not self.storage.local_paths:  # an object store: no second download
                self.controller.on_checkpoint_end(path)
        self.host.report_checkpoint(self.batches_trained, ckpt_uuid, metadata)
        logger.info("checkpoint %s at %s", ckpt_uuid, counted(self.batches_trained, "batch"))
        if self.storage.local_paths:
            with self.storage.restore_path(ckpt_uuid) as path:
                self.controller.on_checkpoint_end(path)
        return ckpt_uuid

    def _metadata(self, ckpt_uuid: str, start: float) -> Dict[str, Any]:
        validation = (
            self.last_validation if self.last_validation_batches == self.batches_trained else None
        )
        return {
            "uuid": ckpt_uuid,
            "determined_version": __version__,
            "framework": self.controller.framework,
            "format": self.controller.checkpoint_format,
            "experiment_id": self.env.experiment_id,
            "trial_id": self.env.trial_id,
            "trial_seed": self.env.trial_seed,
            "batch_number": self.batches_trained,
            "hparams": self.env.hparams,
            "experiment_config": self.env.experiment_config,
            "validation_metrics": validation,
            # Where the validation period stands, so a resumed trial validates on schedule.
            "last_validation_batches": max(self.last_validation_batches, 0),
            "start_time": start,
            "end_time": time.time(),
            "entrypoint": self.env.experiment_config.get("entrypoint"),
            **({"owner": self.env.owner} if self.env.owner else {}),
        }

    def _finish(self) -> None:
        """Close: a trial's final state is always checkpointed."""
        if self.sequencer.since_checkpoint > 0 or self.latest_checkpoint is None:
            self._checkpoint()

    def _stop(self) -> str:
        if self.sequencer.since_checkpoint > 0:
            self._checkpoint()
        if self.sequencer.stop_requested:
            if self.is_chief:
                self.host.report_early_exit(ExitReason.USER_REQUESTED_STOP)
            return ExitReason.USER_REQUESTED_STOP
        return ExitReason.STOPPED

    def _remove_leftovers(self) -> None:
        """Before writing anything: this trial's unfinished checkpoint writes of earlier
        processes go, and so do complete checkpoints it wrote after the one it resumes
        from that its host has no record of (killed before reporting them)."""
        if not self.env.experiment_id or not self.env.trial_id:
            return  # not a trial of a driver or master (test mode, tests' own runners)
        self.storage.scratch_tag = scratch_tag(self.env.experiment_id, self.env.trial_id,
                                               self.env.owner)
        try:
            recorded = self.host.recorded_checkpoints()
            for path in self.storage.remove_leftovers(
                    self.env.experiment_id, self.env.trial_id, recorded,
                    self.latest_checkpoint, self.batches_trained, owner=self.env.owner):
                logger.info("removed an unfinished checkpoint write of this trial: %s", path)
        except Exception as e:  # noqa: BLE001 - leftovers cost space, never the trial
            logger.warning("could not look for unfinished checkpoint writes: %s", e)

    def _restore(self, ref: str, weights_only: bool) -> None:
        with self.storage.local_checkpoint(ref) as path:  # object stores: downloaded
            meta = read_metadata(path)
            batches = self.controller.load(path, weights_only=weights_only)
        if not weights_only:
            self.batches_trained = batches
            self.latest_checkpoint = meta.get("uuid")
            self._restored_last_validation = int(meta.get("last_validation_batches") or 0)
            if meta.get("validation_metrics") is not None:
                self.last_validation = meta["validation_metrics"]
                self.last_validation_batches = batches
        logger.info(
            "trial %s restored from checkpoint %s (%s)%s", self.env.trial_id, meta.get("uuid"),
            counted(batches, "batch"), " as a warm start" if weights_only else "",
        )


def _as_float(value: Any, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InvalidTrialError(
            f"Expected the searcher metric {name!r} to be a scalar. Received: {value!r}"
        ) from None
    return out
