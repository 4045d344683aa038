"""``DeterminedCallback``: a Lightning ``Trainer`` reports to the platform and resumes from
its checkpoints, through the public ``determined.core`` API only."""

from __future__ import annotations

import logging
import os
import random
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import lightning.pytorch as pl
import numpy as np
import torch
from lightning.pytorch.loggers import Logger
from lightning.pytorch.trainer.states import TrainerFn

import determined as det
from determined._searcher_follower import (
    SearcherFollower,
    TrainingMetricsBuffer,
    checkpoint_to_resume,
)

logger = logging.getLogger("determined.lightning")

__all__ = ["DeterminedCallback"]

#: The file a checkpoint directory holds: ``trainer.save_checkpoint``'s output.
CHECKPOINT_FILE = "lightning.ckpt"


class DeterminedCallback(pl.Callback):
    """Add it to a Lightning ``Trainer`` and the run becomes a Determined trial::

        trainer = L.Trainer(max_epochs=5, callbacks=[DeterminedCallback()])
        trainer.fit(model, train_loader, val_loader)

    - metrics the module logs (``self.log``) reach the platform: training ones at
      ``log_every_n_steps``, validation ones after each validation; an epoch's
      aggregates (``on_epoch=True``) join its last training row, reported before the
      validation at the epoch's end;
    - checkpoints (the whole Lightning checkpoint plus the RNG states) go to the
      experiment's checkpoint storage: after the validation that ends each searcher
      operation, every ``checkpoint_every`` steps in the searcher's unit (default: the
      config's ``min_checkpoint_period``, else at every epoch's end as Lightning's own
      default ``ModelCheckpoint``), on preemption and at the end of training;
    - a restarted trial (and, off the platform, a script run again in the same core
      directory) resumes from the latest one: weights, optimizers, LR schedulers,
      loop counters and RNG states;
    - the searcher's lengths (``searcher.max_length`` in batches = optimizer steps, or
      epochs) decide when to validate and stop; ``core.preempt.should_preempt()``
      checkpoints and stops training cleanly (the script then exits 0).

    ``core_context``: a context from ``det.core.init()``; by default the callback opens
    one in ``setup`` (with ``DistributedContext.from_torch_distributed()`` when the
    strategy started torch.distributed) and closes it at ``teardown``.
    """

    def __init__(self, core_context: Optional[det.core.Context] = None, *,
                 checkpoint_every: Optional[int] = None) -> None:
        self._core = core_context
        self._owns_core = False
        self._checkpoint_every = checkpoint_every
        self._follower: Optional[SearcherFollower] = None
        self._train_metrics: Optional[TrainingMetricsBuffer] = None
        self._val_metrics: Dict[str, Any] = {}
        self._last_val: Optional[Tuple[int, Dict[str, Any]]] = None
        self._boundary = False  # the current operation's length is trained
        self._stopped_by_us = False
        self._last_checkpoint_step: Optional[int] = None  # trainer.global_step
        self._preempted = False
        self._total_steps: Optional[float] = None
        self._trainer: Optional[pl.Trainer] = None
        self._lifted_minimums: Optional[Tuple[Any, Any]] = None  # (min_epochs, min_steps)
        self._resume_from: Optional[str] = None  # storage id, found in setup
        self._end_quiet_restore: Callable[[], None] = _nothing
        # The epoch's batches are trained and Lightning has not yet logged its epoch-end
        # metrics (``_unwatch`` set: we see when it does).
        self._epoch_closing = False
        self._held_val: Optional[Tuple[int, Dict[str, Any]]] = None  # the epoch's validation
        self._unwatch: Optional[Callable[[], None]] = None

    # ------------------------------------------------------------------ set up

    @property
    def core_context(self) -> det.core.Context:
        assert self._core is not None, "DeterminedCallback is used before Trainer.fit"
        return self._core

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if self._core is None:
            distributed = None
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                distributed = det.core.DistributedContext.from_torch_distributed()
            self._core = det.core.init(distributed=distributed).__enter__()
            self._owns_core = True
        if stage != "fit":
            return
        self._trainer = trainer
        self._follower = SearcherFollower(self._core, "DeterminedCallback")
        self._train_metrics = TrainingMetricsBuffer(self._core)
        self._follower.check_trainer_length(*self._trainer_length(trainer))
        if self._checkpoint_every is None:
            self._checkpoint_every = _config_period(self._core, self._follower)
        if not any(isinstance(lg, _PlatformLogger) for lg in trainer.loggers):
            trainer.loggers = [*trainer.loggers, _PlatformLogger(self)]
        self._watch_epoch_end_logging(trainer)
        self._resume_from = checkpoint_to_resume(self._core)
        if self._resume_from is not None:
            # A ModelCheckpoint (set up after this callback) warns that its directory is
            # not empty: it holds the checkpoints of the run this one resumes.
            self._end_quiet_restore()
            self._end_quiet_restore = _ignore_warnings(r"Checkpoint directory .* exists and "
                                                       r"is not empty")

    def teardown(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._end_quiet_restore()
        self._end_quiet_restore = _nothing
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self._owns_core and self._core is not None:
            self._core.__exit__(None, None, None)
            self._core = None
            self._owns_core = False

    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # The strategy has set the model and optimizers up: restore everything now, as
        # Lightning itself does for strategies that restore after setup.
        self._end_quiet_restore()
        self._end_quiet_restore = _nothing
        storage_id, self._resume_from = self._resume_from, None
        if storage_id is None:
            return
        with self.core_context.checkpoint.restore_path(storage_id) as path:
            ckpt = os.path.join(path, CHECKPOINT_FILE)
            if not os.path.exists(ckpt):
                raise FileNotFoundError(
                    f"checkpoint {storage_id} has no {CHECKPOINT_FILE}: it was not written "
                    "by DeterminedCallback")
            trainer._checkpoint_connector.restore(ckpt)
        # restore() has said "Restored all states"; Lightning's own resume_end after
        # on_fit_start would say it again of a path it still holds.
        trainer._checkpoint_connector._ckpt_path = None
        self._last_checkpoint_step = trainer.global_step
        logger.info("resumed from checkpoint %s at global step %d", storage_id,
                    trainer.global_step)

    # ------------------------------------------------------------------ state

    def state_dict(self) -> Dict[str, Any]:
        """RNG states (Lightning's checkpoints hold none) for an exact resume."""
        state: Dict[str, Any] = {
            "torch": torch.get_rng_state(),
            "numpy": _numpy_state(),
            "python": _python_state(),
        }
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        torch.set_rng_state(state_dict["torch"])
        _set_numpy_state(state_dict["numpy"])
        _set_python_state(state_dict["python"])
        if "cuda" in state_dict and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state_dict["cuda"])

    # ------------------------------------------------------------------ training

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        total = trainer.estimated_stepping_batches
        self._total_steps = None if not total or total == float("inf") else float(total)

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule,
                           outputs: Any, batch: Any, batch_idx: int) -> None:
        follower = self._require_follower()
        self._epoch_closing = self._unwatch is not None and _epoch_trained(trainer)
        progress = self._progress(trainer)
        follower.report_progress(progress, self._fraction(trainer))
        if not self._boundary and follower.reached(progress):
            # trainer.should_stop makes Lightning validate after this batch; once the
            # searcher answers, on_validation_end lets training go on if there is more.
            self._boundary = True
            self._stopped_by_us = not trainer.should_stop
            self._stop(trainer)  # also when another callback asked to stop before min_epochs
            return
        if self._boundary:
            return
        if self.core_context.preempt.should_preempt():
            logger.info("preempted at global step %d: checkpointing and stopping",
                        trainer.global_step)
            self._preempted = True
            self._checkpoint(trainer)
            self._stop(trainer)
            return
        every = self._checkpoint_every
        if every and not follower.in_epochs and trainer.global_step % every == 0 \
                and self._last_checkpoint_step != trainer.global_step:
            self._checkpoint(trainer)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._boundary and self._held_val is None:
            self._finish_boundary(trainer)  # no validation ran at the boundary
        if self._boundary and self._last_checkpoint_step != trainer.global_step:
            # The operation's checkpoint, here as every epoch's (the searcher hears of the
            # validation once Lightning has logged the epoch's metrics: _epoch_logged).
            self._checkpoint(trainer)
        every = self._checkpoint_every
        follower = self._require_follower()
        if self._preempted or (every and not follower.in_epochs):
            return
        due = (trainer.current_epoch + 1) % (every or 1) == 0
        if due and self._last_checkpoint_step != trainer.global_step:
            self._checkpoint(trainer)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.state.fn != TrainerFn.FITTING:
            return
        steps = self._steps(trainer)
        metrics, self._val_metrics = self._val_metrics, {}
        if self._epoch_closing:
            # The epoch's aggregates come after this: its training row at these steps
            # must reach the platform before the validation does (_epoch_logged).
            self._held_val = (steps, metrics)
            if self._boundary and self._stopped_by_us:
                # The epoch ends anyway; until the searcher answers, other callbacks
                # (EarlyStopping) may ask to stop, and that holds if it has more.
                trainer.should_stop = False
                self._stopped_by_us = False
            return
        self._report_validation(steps, metrics)
        if self._boundary:
            self._finish_boundary(trainer)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        held, self._held_val = self._held_val, None
        self._epoch_closing = False
        if held is not None:  # Lightning never logged the epoch's end (not expected)
            self._flush_training()
            self._report_validation(*held)
        if self._boundary:
            self._finish_boundary(trainer, held[0] if held is not None else None)
        self._flush_training()
        follower = self._require_follower()
        follower.report_progress(self._progress(trainer), self._fraction(trainer), force=True)
        if self._last_checkpoint_step != trainer.global_step:
            self._checkpoint(trainer)

    # ------------------------------------------------------------------ helpers

    def _require_follower(self) -> SearcherFollower:
        assert self._follower is not None, "DeterminedCallback.setup did not run"
        return self._follower

    def _watch_epoch_end_logging(self, trainer: pl.Trainer) -> None:
        """Call ``_epoch_logged`` right after Lightning logs an epoch's training metrics
        (its fit loop has no hook there; it checks ``should_stop`` next)."""
        if self._unwatch is not None:
            return
        connector = getattr(trainer, "_logger_connector", None)
        log_epoch = getattr(connector, "update_train_epoch_metrics", None)
        if log_epoch is None:  # another Lightning: aggregates after a validation are lost
            logger.debug("Lightning's logger connector has no update_train_epoch_metrics")
            return

        def update_train_epoch_metrics() -> None:
            log_epoch()
            self._epoch_logged(trainer)

        connector.update_train_epoch_metrics = update_train_epoch_metrics
        self._unwatch = lambda: vars(connector).pop("update_train_epoch_metrics", None)

    def _epoch_logged(self, trainer: pl.Trainer) -> None:
        """The epoch's training metrics are all in: report its row, then its validation,
        then answer the searcher (before Lightning checks ``should_stop``)."""
        self._epoch_closing = False
        self._flush_training()
        held, self._held_val = self._held_val, None
        if held is None:
            return
        self._report_validation(*held)
        if self._boundary:
            self._finish_boundary(trainer, held[0])

    def _report_validation(self, steps: int, metrics: Dict[str, Any]) -> None:
        if not metrics:
            return
        self._flush_training()
        if self._follower is not None and self._follower.is_chief:
            self.core_context.train.report_validation_metrics(steps, metrics)
        self._last_val = (steps, metrics)

    def _finish_boundary(self, trainer: pl.Trainer, steps: Optional[int] = None) -> None:
        """Answer the searcher with the validation at this length; go on if it has more."""
        follower = self._require_follower()
        self._boundary = False
        steps = self._steps(trainer) if steps is None else steps
        if self._last_val is None or self._last_val[0] != steps:
            raise ValueError(
                f"the searcher asked for a validation at {follower.op.length} "
                f"{follower.unit} but none ran: give the Trainer a val_dataloader (and "
                "check_val_every_n_epoch that allows it) whose validation_step logs "
                f"searcher.metric {follower.metric!r}")
        value = follower.searcher_value(
            self._last_val[1], fix="log it with self.log in validation_step"
        ) if follower.is_chief else None
        more = follower.complete(value)
        if self._last_checkpoint_step != trainer.global_step:
            self._checkpoint(trainer)
        if more and self._stopped_by_us:
            trainer.should_stop = False
        if more:
            self._restore_minimums(trainer)
        self._stopped_by_us = False
        if not more:
            self._stop(trainer)
        if more and self.core_context.preempt.should_preempt():
            self._preempted = True
            self._stop(trainer)

    def _stop(self, trainer: pl.Trainer) -> None:
        """Stop (or pause to validate) after this batch, even before the Trainer's
        ``min_epochs``/``min_steps``: Lightning ignores ``should_stop`` until they are met,
        but the searcher (or a pause) decides the trial's length here."""
        trainer.should_stop = True
        fit_loop = trainer.fit_loop
        if self._lifted_minimums is None and (fit_loop.min_epochs or fit_loop.min_steps):
            self._lifted_minimums = (fit_loop.min_epochs, fit_loop.min_steps)
            fit_loop.min_epochs = 0
            fit_loop.epoch_loop.min_steps = None

    def _restore_minimums(self, trainer: pl.Trainer) -> None:
        if self._lifted_minimums is not None:
            trainer.fit_loop.min_epochs, trainer.fit_loop.epoch_loop.min_steps = \
                self._lifted_minimums
            self._lifted_minimums = None

    def _checkpoint(self, trainer: pl.Trainer) -> None:
        """The whole Lightning checkpoint into the experiment's checkpoint storage (every
        rank calls ``trainer.save_checkpoint``; the strategy picks who writes)."""
        # While the epoch closes, its row waits for the aggregates (_epoch_logged).
        self._flush_training(below=self._training_steps(trainer) if self._epoch_closing
                             else None)
        steps = self._steps(trainer)
        metadata = {"steps_completed": steps, "global_step": trainer.global_step,
                    "epoch": trainer.current_epoch, "format": "lightning",
                    "checkpoint_file": CHECKPOINT_FILE}
        shard = self.core_context.distributed.size > 1
        with self.core_context.checkpoint.store_path(metadata, shard=shard) as (path, _):
            trainer.save_checkpoint(os.path.join(path, CHECKPOINT_FILE), weights_only=False)
        self._last_checkpoint_step = trainer.global_step

    def _progress(self, trainer: pl.Trainer) -> float:
        """Training done, in the searcher's unit (fractional epochs inside an epoch)."""
        follower = self._require_follower()
        if not follower.in_epochs:
            return float(trainer.global_step)
        batches = trainer.num_training_batches
        done = trainer.fit_loop.epoch_loop.batch_progress.current.processed
        if not batches or batches == float("inf"):
            return float(trainer.current_epoch)
        return trainer.current_epoch + min(1.0, done / batches)

    def _steps(self, trainer: pl.Trainer) -> int:
        return self._require_follower().steps(self._progress(trainer), trainer.global_step)

    def _fraction(self, trainer: pl.Trainer) -> Optional[float]:
        return None if not self._total_steps else trainer.global_step / self._total_steps

    def _trainer_length(self, trainer: pl.Trainer) -> Tuple[Optional[float], str]:
        follower = self._require_follower()
        if follower.in_epochs:
            max_epochs = trainer.max_epochs
            return (None if max_epochs is None or max_epochs < 0 else float(max_epochs),
                    "Trainer(max_epochs)")
        max_steps = trainer.max_steps
        return (None if max_steps is None or max_steps < 0 else float(max_steps),
                "Trainer(max_steps)")

    def _logged(self, metrics: Dict[str, float], validating: bool) -> None:
        if validating:
            self._val_metrics.update(metrics)
            return
        if self._trainer is not None and self._train_metrics is not None:
            self._train_metrics.add(self._training_steps(self._trainer), metrics)

    def _training_steps(self, trainer: pl.Trainer) -> int:
        return self._require_follower().training_steps(self._progress(trainer),
                                                       trainer.global_step)

    def _flush_training(self, below: Optional[int] = None) -> None:
        if self._train_metrics is not None:
            self._train_metrics.flush(below)


class _PlatformLogger(Logger):
    """Hands what Lightning logs to the callback (added to ``trainer.loggers`` by it)."""

    def __init__(self, callback: DeterminedCallback) -> None:
        super().__init__()
        self._callback = callback

    @property
    def name(self) -> str:
        return "determined"

    @property
    def version(self) -> str:
        info = det.get_cluster_info()
        return f"trial_{info.trial.trial_id}" if info is not None else "local"

    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass

    def log_metrics(self, metrics: Dict[str, float], step: Optional[int] = None) -> None:
        trainer = self._callback._trainer
        validating = bool(trainer is not None and trainer.validating)
        numbers = {k: float(v) for k, v in metrics.items() if k != "epoch"}
        if numbers:
            self._callback._logged(numbers, validating)


def _nothing() -> None:
    pass


def _ignore_warnings(message: str) -> Callable[[], None]:
    """Ignore warnings matching ``message`` until the returned function is called (which
    removes only that filter: ones the user adds meanwhile stay)."""
    warnings.filterwarnings("ignore", message=message)
    entry = warnings.filters[0]

    def undo() -> None:
        if entry in warnings.filters:
            warnings.filters.remove(entry)
            mutated = getattr(warnings, "_filters_mutated", None)  # what filterwarnings calls
            if callable(mutated):
                mutated()

    return undo


def _epoch_trained(trainer: pl.Trainer) -> bool:
    """The current epoch's last batch is trained (its end, or ``max_steps``, is next)."""
    batches = trainer.num_training_batches
    done = trainer.fit_loop.epoch_loop.batch_progress.current.processed
    if batches and batches != float("inf") and done >= batches:
        return True
    return trainer.max_steps is not None and 0 <= trainer.max_steps <= trainer.global_step


def _config_period(core_context: det.core.Context, follower: SearcherFollower) -> Optional[int]:
    """``min_checkpoint_period`` of the experiment config, when in the searcher's unit."""
    info = core_context.info
    if info is None:
        return None
    period = info.trial._config.get("min_checkpoint_period")
    if isinstance(period, dict) and len(period) == 1:
        unit, value = next(iter(period.items()))
        if unit == (follower.unit or "batches") and isinstance(value, int) and value > 0:
            return value
    return None


def _numpy_state() -> Dict[str, Any]:
    name, keys, pos, has_gauss, cached = np.random.get_state()
    return {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "cached": float(cached)}


def _set_numpy_state(state: Dict[str, Any]) -> None:
    keys = state["keys"].numpy().astype(np.uint32)
    np.random.set_state((state["name"], keys, state["pos"], state["has_gauss"], state["cached"]))


def _python_state() -> List[Any]:
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def _set_python_state(state: List[Any]) -> None:
    random.setstate((state[0], tuple(state[1]), state[2]))
