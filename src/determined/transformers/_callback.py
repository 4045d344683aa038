"""``DetCallback``: a Hugging Face ``Trainer`` on the platform (Determined 0.38's
``determined.transformers.DetCallback``), through the public ``determined.core`` API."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from typing import Any, Dict, List, Optional

import torch
import transformers

import determined as det
from determined._searcher_follower import (
    SearcherFollower,
    TrainingMetricsBuffer,
    checkpoint_to_resume,
)

logger = logging.getLogger("determined.transformers")

__all__ = ["DetCallback"]

#: The file ``user_data`` is written to in each checkpoint (upstream's name).
USER_DATA_FILE = "my_data.json"
#: A key only ``Trainer.train``'s closing summary log holds.
_SUMMARY_KEY = "train_runtime"
#: The RNG state file each rank of a multi-process Trainer writes into a checkpoint.
_RANK_RNG_FILE = re.compile(r"rng_state_(\d+)\.pth")


class DetCallback(transformers.TrainerCallback):  # type: ignore[misc]
    """Reports a ``transformers.Trainer``'s metrics to the platform, uploads its
    checkpoints to the experiment's storage, follows the searcher and yields to
    preemption::

        with det.core.init() as core_context:
            trainer = Trainer(..., callbacks=[DetCallback(core_context, training_args)])
            trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)

    On construction the latest checkpoint (the trial's; off the platform the newest in
    core's local directory) is downloaded into ``args.output_dir`` and
    ``args.resume_from_checkpoint`` names it, so ``trainer.train`` resumes the model,
    optimizer, scheduler, RNG states and step counters from it (unless
    ``args.overwrite_output_dir``).

    - ``on_log``: evaluation logs (``eval_*``) are validation metrics, the others
      training metrics; ``filter_metrics`` keeps only keys containing one of its strings.
    - ``on_save``: every checkpoint the Trainer writes is uploaded, with ``user_data``
      (JSON) beside it as ``my_data.json``.
    - With ``searcher.max_length`` (batches = optimizer steps, or epochs) the Trainer
      evaluates and saves at each operation's length, the searcher metric (an ``eval_*``
      name) answers the searcher, and training stops when the searcher closes the trial.
      ``max_steps`` (or ``num_train_epochs``) must reach ``searcher.max_length``.
    - ``core_context.preempt.should_preempt()`` makes the Trainer save, the checkpoint
      is uploaded and training stops cleanly (``trainer.train`` returns).
    """

    def __init__(self, core_context: det.core.Context, args: transformers.TrainingArguments,
                 filter_metrics: Optional[List[str]] = None,
                 user_data: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        self.core_context = core_context
        self.filter_metrics = filter_metrics
        self.user_data = user_data
        self._follower = SearcherFollower(core_context, "DetCallback")
        self._train_metrics = TrainingMetricsBuffer(core_context)
        self._last_eval: Optional[tuple] = None  # (global_step, metrics)
        self._boundary = False
        self._preempting = False
        _plain_cpu_device(args)
        self.load_last_checkpoint(args)

    # ------------------------------------------------------------------ resume

    def load_last_checkpoint(self, args: transformers.TrainingArguments) -> None:
        storage_id = checkpoint_to_resume(self.core_context)
        if storage_id is None:
            return
        if args.overwrite_output_dir:
            logger.info("overwrite_output_dir is set: not resuming from checkpoint %s", storage_id)
            return
        metadata = self.core_context.checkpoint.get_metadata(storage_id)
        name = metadata.get("hf_checkpoint")
        if not isinstance(name, str):
            raise ValueError(f"checkpoint {storage_id} was not written by DetCallback "
                             "(its metadata has no 'hf_checkpoint')")
        self.core_context.checkpoint.download(
            storage_id, args.output_dir, selector=lambda p: p.startswith(name + "/"))
        args.resume_from_checkpoint = os.path.join(args.output_dir, name)
        logger.info("checkpoint %s downloaded to %s", storage_id, args.resume_from_checkpoint)

    # ------------------------------------------------------------------ hooks

    def on_train_begin(self, args: transformers.TrainingArguments,
                       state: transformers.TrainerState, control: transformers.TrainerControl,
                       **kwargs: Any) -> None:
        if self._follower.in_epochs:
            self._follower.check_trainer_length(
                None if args.max_steps > 0 else float(args.num_train_epochs),
                "num_train_epochs (and max_steps unset)")
            if args.max_steps > 0:
                raise ValueError("searcher.max_length is in epochs but TrainingArguments "
                                 f"max_steps is {args.max_steps}: leave max_steps unset")
        else:
            self._follower.check_trainer_length(float(state.max_steps), "max_steps")

    def on_log(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
               control: transformers.TrainerControl, logs: Optional[Dict[str, Any]] = None,
               **kwargs: Any) -> None:
        if not logs:
            return
        metrics = self._filtered(logs)
        steps = self._steps(state)
        if any(k.startswith("eval_") for k in logs):
            self._train_metrics.flush()
            if metrics and state.is_world_process_zero:
                self.core_context.train.report_validation_metrics(steps, metrics)
            self._last_eval = (state.global_step, dict(logs))
        elif any(k.startswith("test_") for k in logs):
            logger.info("test metrics are not reported: %s", sorted(logs))
        elif _SUMMARY_KEY in logs:
            # train()'s closing summary (runtime, the run's mean loss): after a pause it
            # would be a training row of other metrics at the step where it stopped.
            logger.debug("the Trainer's closing summary is not reported: %s", sorted(logs))
        elif metrics:
            self._train_metrics.add(
                self._follower.training_steps(self._progress(state), state.global_step), metrics)

    def on_step_end(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
                    control: transformers.TrainerControl, **kwargs: Any) -> None:
        progress = self._progress(state)
        fraction = state.global_step / state.max_steps if state.max_steps else None
        self._follower.report_progress(progress, fraction)
        if not self._follower.in_epochs and self._follower.reached(progress):
            self._reach_boundary(state, control)
        elif not self._boundary and self.core_context.preempt.should_preempt():
            logger.info("preempted at global step %d: saving and stopping", state.global_step)
            self._preempting = True
            control.should_save = True

    def on_epoch_end(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
                     control: transformers.TrainerControl, **kwargs: Any) -> None:
        if self._follower.in_epochs and self._follower.reached(self._progress(state)):
            self._reach_boundary(state, control)

    def on_evaluate(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
                    control: transformers.TrainerControl, **kwargs: Any) -> None:
        if self._boundary:
            self._finish_boundary(state, control)

    def on_save(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
                control: transformers.TrainerControl, **kwargs: Any) -> None:
        self._train_metrics.flush()
        name = f"{transformers.trainer_utils.PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        local = os.path.join(args.output_dir, name)
        dist = self.core_context.distributed
        if state.is_world_process_zero and self.user_data is not None:
            with open(os.path.join(local, USER_DATA_FILE), "w", encoding="utf-8") as f:
                json.dump(self.user_data, f)
        metadata = {"steps_completed": self._steps(state), "global_step": state.global_step,
                    "format": "transformers", "hf_checkpoint": name}
        shard = dist.size > 1
        with self.core_context.checkpoint.store_path(metadata, shard=shard) as (path, _):
            # The chief stores the Trainer's files, each rank its own RNG state: another
            # rank's may not be written yet, or be on another machine.
            shutil.copytree(local, os.path.join(path, name),
                            ignore=_other_ranks_files(dist.rank, chief=dist.rank == 0))
        if self._preempting:
            control.should_training_stop = True

    def on_train_end(self, args: transformers.TrainingArguments, state: transformers.TrainerState,
                     control: transformers.TrainerControl, **kwargs: Any) -> None:
        self._train_metrics.flush()
        fraction = state.global_step / state.max_steps if state.max_steps else None
        self._follower.report_progress(self._progress(state), fraction, force=True)

    # ------------------------------------------------------------------ helpers

    def _reach_boundary(self, state: transformers.TrainerState,
                        control: transformers.TrainerControl) -> None:
        """The operation's length is trained: evaluate (unless that happened at this
        step), then answer the searcher in ``on_evaluate``."""
        self._boundary = True
        if self._last_eval is not None and self._last_eval[0] == state.global_step:
            self._finish_boundary(state, control)
            return
        control.should_log = True
        control.should_evaluate = True

    def _finish_boundary(self, state: transformers.TrainerState,
                         control: transformers.TrainerControl) -> None:
        self._boundary = False
        if self._last_eval is None or self._last_eval[0] != state.global_step:
            raise ValueError("the searcher asked for an evaluation but the Trainer logged "
                             "none: give it an eval_dataset")
        value = self._follower.searcher_value(
            self._last_eval[1], fix="have the Trainer's evaluation log it (compute_metrics; "
            "evaluation names start with eval_)") if state.is_world_process_zero else None
        more = self._follower.complete(value)
        control.should_save = True
        if not more:
            control.should_training_stop = True
        elif self.core_context.preempt.should_preempt():
            self._preempting = True

    def _filtered(self, logs: Dict[str, Any]) -> Dict[str, Any]:
        numbers = {k: v for k, v in logs.items() if isinstance(v, (int, float))}
        if not self.filter_metrics:
            return numbers
        return {k: v for k, v in numbers.items() if any(m in k for m in self.filter_metrics)}

    def _progress(self, state: transformers.TrainerState) -> float:
        if self._follower.in_epochs:
            return float(state.epoch or 0.0)
        return float(state.global_step)

    def _steps(self, state: transformers.TrainerState) -> int:
        return self._follower.steps(self._progress(state), state.global_step)


def _other_ranks_files(rank: int, chief: bool) -> Any:
    """A ``copytree`` ignore function: the chief copies all but the other ranks' RNG
    files, any other rank only its own."""

    def ignore(directory: str, names: List[str]) -> List[str]:
        def own(name: str) -> bool:
            match = _RANK_RNG_FILE.fullmatch(name)
            if match is not None:
                return int(match.group(1)) == rank
            return chief or os.path.isdir(os.path.join(directory, name))

        return [n for n in names if not own(n)]

    return ignore


def _plain_cpu_device(args: transformers.TrainingArguments) -> None:
    """accelerate names the device of each CPU rank of a multi-process run ``cpu:0``,
    which ``torch.load(map_location=...)`` cannot map storages to: the Trainer could not
    resume its optimizer ("don't know how to restore data location ... (tagged with
    cpu:0)"). Name the same device plainly ``cpu`` (``args.device`` is a cached
    property of ``TrainingArguments``)."""
    device = args.device
    if device.type == "cpu" and device.index is not None:
        args.__dict__["_setup_devices"] = torch.device("cpu")
