"""Runs a :class:`PyTorchTrial` for the trial runner.

Hot path: ``train`` calls the user's ``train_batch`` in a tight loop and does
nothing else per batch unless the trial asked for it (LR schedulers, epoch
callbacks, a non-CPU device). Per-batch metrics stay tensors until the end of
the workload, when each metric is stacked and copied to the host once.

Distributed trials (see ``harness._ranks``): the same loop on every rank, each on
its own shard of batches; ``context.step_optimizer`` averages gradients over
the ranks; metrics are combined on the chief at the end of a workload.
"""

from __future__ import annotations

import logging
import os
import random
from typing import Any, Dict, List, Optional, Tuple, Type

import cloudpickle
import numpy as np
import torch

from determined.errors import CheckpointError, InvalidTrialError
from determined.harness import TrialController, TrialEnv, check_trial_class, describe_class
from determined.harness import user_code_error
from determined.harness._collective import CollectiveError
from determined.harness._group import connect
from determined.pytorch._callback import PyTorchCallback, overrides
from determined.pytorch._context import PyTorchTrialContext, RunState
from determined.pytorch._data import DataLoader, to_device
from determined.pytorch._distributed import (
    average_batch_metrics,
    broadcast_models,
    combine_slot_metrics,
    slot_metrics,
    use_ddp,
)
from determined.pytorch._lr_scheduler import LRScheduler
from determined.pytorch._reducer import reduce_metric, reducers_for, _to_python
from determined.pytorch._trial import PyTorchTrial, overridden
from determined.util import plain_values

__all__ = ["PyTorchTrialController", "STATE_FILE"]

logger = logging.getLogger("determined")

STATE_FILE = "state_dict.pth"
_LOADING = "build_training_data_loader (while loading a batch)"


class PyTorchTrialController(TrialController):
    framework = f"torch-{torch.__version__}"
    checkpoint_format = "cloudpickle"
    plain_training_metrics = True

    def __init__(self, trial_class: Type[PyTorchTrial], env: TrialEnv,
                 device: Optional[torch.device] = None):
        """``device``: where the models live (default: this rank's GPU, else the CPU)."""
        super().__init__(trial_class, env)
        check_trial_class(trial_class, PyTorchTrial)
        torch.manual_seed(env.trial_seed)
        info = env.distributed
        self._dist = connect(info)  # None on one slot
        self._is_chief = info.rank == 0
        self._average_training = self._dist is not None and bool(
            env.experiment_config.get("optimizations", {}).get("average_training_metrics", False)
        )
        if device is None:
            device = (
                # Modulo: a launcher may show each rank only its own GPU (Ray actors).
                torch.device("cuda", info.local_rank % torch.cuda.device_count())
                if torch.cuda.is_available() else torch.device("cpu")
            )
        self._run = RunState(ddp=self._dist is not None and use_ddp(self._dist.backend))
        self._context = PyTorchTrialContext(env, device, run_state=self._run)
        self._move_batches = device.type != "cpu"
        self.trial: PyTorchTrial = self._user(trial_class, "__init__", self._context)
        self._legacy = overridden(self.trial, "build_model")
        self._model: Optional[torch.nn.Module] = None
        if self._legacy:
            self._build_legacy()
        self._check_evaluation_methods()
        self._configure_mixed_precision()
        if self._dist is not None:
            broadcast_models(self._context.models)
        self.callbacks = self._build_callbacks()
        self.train_loader = self._loader("build_training_data_loader")
        self.train_loader._pin_for_device = self._move_batches
        self._val_loader: Optional[DataLoader] = None
        if info.size > 1 and not self.train_loader.is_iterable and len(self.train_loader) < info.size:
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)}.build_training_data_loader gives "
                f"{len(self.train_loader)} batch(es) per epoch; with slots_per_trial={info.size} "
                f"it needs at least {info.size} (one per slot)"
            )
        self._epoch_len = self.train_loader.batches_per_epoch(info.size)
        self._run.epoch_len = self._epoch_len
        self._train_iter: Optional[Any] = None
        self._iter_position = -1
        self._started = False
        self._train_step = self._legacy_step if self._legacy else self.trial.train_batch
        self._train_step = self._context._wrap_train_step(self._train_step)
        self._epoch_schedulers = [
            s for s in self._context.lr_schedulers if s.step_mode is LRScheduler.StepMode.STEP_EVERY_EPOCH
        ]
        self._batch_schedulers = [
            s for s in self._context.lr_schedulers if s.step_mode is LRScheduler.StepMode.STEP_EVERY_BATCH
        ]
        self._epoch_callbacks = [
            cb for cb in self.callbacks.values()
            if overrides(cb, "on_training_epoch_start") or overrides(cb, "on_training_epoch_end")
        ]
        self._per_batch_hooks = bool(
            self._epoch_schedulers or self._batch_schedulers or self._epoch_callbacks
        )
        self._workload_end_hooks = any(
            overrides(cb, "on_training_workload_end") for cb in self.callbacks.values()
        )

    @property
    def context(self) -> PyTorchTrialContext:
        return self._context

    # ------------------------------------------------------------------ building

    def _user(self, target: Any, method: str, *args: Any) -> Any:
        """Call user code; failures name the file, class and method."""
        fn = target if method == "__init__" else getattr(self.trial, method)
        try:
            return fn(*args)
        except Exception as e:
            raise user_code_error(e, self.trial_class, method) from None

    def _build_legacy(self) -> None:
        if not overridden(self.trial, "optimizer"):
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)} overrides build_model() but not "
                "optimizer(model); legacy-style trials need both"
            )
        model = self._user(None, "build_model")
        if not isinstance(model, torch.nn.Module):
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)}.build_model must return a torch.nn.Module. "
                f"Received: {type(model).__name__}"
            )
        self._model = self._context.wrap_model(model)
        opt = self._user(None, "optimizer", self._model)
        if not isinstance(opt, torch.optim.Optimizer):
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)}.optimizer must return a "
                f"torch.optim.Optimizer. Received: {type(opt).__name__}"
            )
        self._optimizer = self._context.wrap_optimizer(opt)
        sched = self._user(None, "create_lr_scheduler", self._optimizer)
        if sched is not None:
            if not isinstance(sched, LRScheduler):
                raise InvalidTrialError(
                    f"{describe_class(self.trial_class)}.create_lr_scheduler must return a "
                    f"det.pytorch.LRScheduler or None. Received: {type(sched).__name__}"
                )
            self._context._wrap_det_lr_scheduler(sched)

    def _configure_mixed_precision(self) -> None:
        """``optimizations.mixed_precision`` (O1-O3) turns on mixed precision for every
        wrapped model and optimizer, unless the trial configured it itself."""
        level = self.env.experiment_config.get("optimizations", {}).get("mixed_precision", "O0")
        ctx = self._context
        if level in (None, "O0") or ctx._mixed_precision_on():
            return
        ctx.configure_apex_amp(ctx.models, ctx.optimizers, opt_level=level)

    def _check_evaluation_methods(self) -> None:
        has_batch = overridden(self.trial, "evaluate_batch")
        has_full = overridden(self.trial, "evaluate_full_dataset")
        if has_batch == has_full:
            which = "both" if has_batch else "neither"
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)} must override exactly one of evaluate_batch "
                f"and evaluate_full_dataset; it overrides {which}"
            )
        self._evaluate_full = has_full
        if not self._legacy and not self._context.models:
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)}.__init__ wrapped no model: call "
                "self.context.wrap_model(model) (and wrap_optimizer) in __init__, or use the "
                "legacy build_model()/optimizer() methods"
            )

    def _build_callbacks(self) -> Dict[str, PyTorchCallback]:
        callbacks = self._user(None, "build_callbacks")
        if not isinstance(callbacks, dict) or not all(
            isinstance(c, PyTorchCallback) for c in callbacks.values()
        ):
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)}.build_callbacks must return a dict of "
                f"name -> det.pytorch.PyTorchCallback. Received: {callbacks!r}"
            )
        for cb in callbacks.values():
            if overrides(cb, "on_before_optimizer_step"):
                self._context._add_before_step_hook(cb.on_before_optimizer_step)
        return callbacks

    def _loader(self, method: str) -> DataLoader:
        loader = self._user(None, method)
        if not isinstance(loader, DataLoader):
            hint = (
                " (a torch.utils.data.DataLoader was returned: use det.pytorch.DataLoader with "
                "the same arguments)"
                if isinstance(loader, torch.utils.data.DataLoader)
                else ""
            )
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)}.{method} must return a "
                f"determined.pytorch.DataLoader. Received: {type(loader).__name__}{hint}"
            )
        return loader

    def _startup(self, batches_trained: int) -> None:
        if not self._started:
            self._started = True
            for cb in self.callbacks.values():
                cb.on_trial_startup(batches_trained)

    # ------------------------------------------------------------------ training

    def _legacy_step(self, batch: Any, epoch_idx: int, batch_idx: int) -> Dict[str, Any]:
        out = self.trial.train_batch(batch, self._model, epoch_idx, batch_idx)
        if isinstance(out, torch.Tensor):
            out = {"loss": out}
        if not isinstance(out, dict) or "loss" not in out:
            got = sorted(out) if isinstance(out, dict) else type(out).__name__
            raise InvalidTrialError(
                f"train_batch must return a dict with a 'loss' tensor. Received: {got}"
            )
        self._context.backward(out["loss"])
        self._context.step_optimizer(self._optimizer)
        return out

    def train(self, num_batches: int, batches_trained: int) -> Dict[str, Any]:
        self._startup(batches_trained)
        if self._train_iter is None or self._iter_position != batches_trained:
            info = self.env.distributed
            self._train_iter = self.train_loader.training_iterator(
                self.env.trial_seed, batches_trained, info.size, info.rank
            )
        for model in self._context.models:
            model.train()
        it, step, ctx, run = self._train_iter, self._train_step, self._context, self._run
        epoch_len, hooks, move = self._epoch_len, self._per_batch_hooks, self._move_batches
        outs: List[Any] = []
        append = outs.append
        where = _LOADING
        try:
            for batch_idx in range(batches_trained, batches_trained + num_batches):
                where = _LOADING
                batch = next(it)
                if move:
                    batch = to_device(batch, ctx.device)
                where = "train_batch"
                run.batch_idx = batch_idx
                if hooks:
                    self._before_batch(batch_idx)
                out = step(batch, batch_idx // epoch_len, batch_idx)
                if out.__class__ is not dict:
                    out = self._coerce_output(out)
                # Kept as returned: a loss's graph, spent by backward, holds no activations
                # (detaching each would cost more than the batch's Python work).
                append(out)
                if hooks:
                    self._after_batch(batch_idx)
        except CollectiveError:
            self._train_iter = None
            raise
        except Exception as e:
            self._train_iter = None
            raise user_code_error(e, self.trial_class, where) from None
        self._iter_position = batches_trained + num_batches
        metrics, plain = _training_metrics(outs)
        if self._average_training:
            assert self._dist is not None
            per_rank = self._dist.gather(metrics["batch_metrics"])
            if per_rank is not None:
                metrics, plain = _summarize(average_batch_metrics(per_rank)), False
        metrics["num_inputs"] = num_batches * self._context.get_global_batch_size()
        for cb in self.callbacks.values():
            cb.on_training_workload_end(metrics["avg_metrics"], metrics["batch_metrics"])
        # Callbacks may have changed what they were given.
        return metrics if plain and not self._workload_end_hooks else plain_values(metrics)

    def _coerce_output(self, out: Any) -> Dict[str, Any]:
        if isinstance(out, torch.Tensor):
            return {"loss": out}
        if isinstance(out, dict):
            return out
        raise InvalidTrialError(
            "train_batch must return a loss tensor or a dict of metrics. "
            f"Received: {type(out).__name__}"
        )

    def _before_batch(self, batch_idx: int) -> None:
        if batch_idx % self._epoch_len == 0:
            for cb in self._epoch_callbacks:
                cb.on_training_epoch_start(batch_idx // self._epoch_len)

    def _after_batch(self, batch_idx: int) -> None:
        if self._context._steps_after(batch_idx):
            for s in self._batch_schedulers:
                s.step()
        if (batch_idx + 1) % self._epoch_len == 0:
            for s in self._epoch_schedulers:
                s.step()
            for cb in self._epoch_callbacks:
                cb.on_training_epoch_end(batch_idx // self._epoch_len)

    # ------------------------------------------------------------------ validation

    def validate(self, batches_trained: int) -> Dict[str, Any]:
        self._startup(batches_trained)
        if self._val_loader is None:
            self._val_loader = self._loader("build_validation_data_loader")
            self._val_loader._pin_for_device = self._move_batches
        for cb in self.callbacks.values():
            cb.on_validation_start()
            cb.on_validation_step_start()
        for model in self._context.models:
            model.eval()
        try:
            with torch.no_grad(), self._context._autocast():
                if self._evaluate_full and not self._is_chief:
                    metrics, num_inputs = {}, 0  # the chief evaluates the whole dataset
                elif self._evaluate_full:
                    metrics, num_inputs = self._evaluate_full_dataset()
                else:
                    metrics, num_inputs = self._evaluate_batches()
        finally:
            for model in self._context.models:
                model.train()
        return {"validation_metrics": metrics, "num_inputs": num_inputs}

    def _evaluate_full_dataset(self) -> Any:
        assert self._val_loader is not None
        loader = self._val_loader.get_data_loader()
        args = (loader, self._model) if self._legacy else (loader,)
        out = self._user(None, "evaluate_full_dataset", *args)
        if not isinstance(out, dict):
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)}.evaluate_full_dataset must return a dict "
                f"of metrics. Received: {type(out).__name__}"
            )
        num_inputs = len(self._val_loader.dataset) if hasattr(self._val_loader.dataset, "__len__") else 0
        return {k: _to_python(v) for k, v in out.items()}, num_inputs

    def _evaluate_batches(self) -> Any:
        assert self._val_loader is not None
        info = self.env.distributed
        loader = self._val_loader.get_data_loader(num_replicas=info.size, rank=info.rank)
        columns: Dict[str, List[Any]] = {}
        keys: Optional[List[str]] = None
        num_inputs = 0
        where = "build_validation_data_loader (while loading a batch)"
        try:
            for batch in loader:
                if self._move_batches:
                    batch = to_device(batch, self._context.device)
                where = "evaluate_batch"
                out = (
                    self.trial.evaluate_batch(batch, self._model)
                    if self._legacy
                    else self.trial.evaluate_batch(batch)
                )
                if not isinstance(out, dict):
                    raise InvalidTrialError(
                        f"evaluate_batch must return a dict of metrics. Received: {type(out).__name__}"
                    )
                if keys is None:
                    keys = list(out)
                    columns = {k: [] for k in keys}
                elif out.keys() != columns.keys():
                    raise InvalidTrialError(
                        "evaluate_batch must return the same metric names for every batch. "
                        f"Expected: {sorted(columns)}. Received: {sorted(out)}"
                    )
                for k, v in out.items():
                    columns[k].append(v)
                num_inputs += _batch_len(batch)
                where = "build_validation_data_loader (while loading a batch)"
        except Exception as e:
            raise user_code_error(e, self.trial_class, where) from None
        if keys is None and self._dist is None:
            raise InvalidTrialError(
                f"{describe_class(self.trial_class)}.build_validation_data_loader yielded no batches"
            )
        spec = self._user(None, "evaluation_reducer")
        try:
            reducers = reducers_for(spec, columns)
            if self._dist is None:
                return {k: reduce_metric(k, v, reducers[k]) for k, v in columns.items()}, num_inputs
            part = slot_metrics(columns, reducers) if keys is not None else None
            parts = self._dist.gather((part, num_inputs))
            if parts is None:
                return {}, 0  # not the chief: the runner broadcasts the chief's result
            if all(p is None for p, _ in parts):
                raise InvalidTrialError(
                    f"{describe_class(self.trial_class)}.build_validation_data_loader yielded no "
                    "batches on any rank"
                )
            spec_all = reducers_for(spec, next(p for p, _ in parts if p is not None))
            metrics = combine_slot_metrics([p for p, _ in parts], spec_all)
            return metrics, sum(n for _, n in parts)
        except (TypeError, ValueError) as e:
            raise user_code_error(e, self.trial_class, "evaluation_reducer") from None

    def on_validation_end(self, metrics: Dict[str, Any]) -> None:
        for cb in self.callbacks.values():
            cb.on_validation_end(metrics)
            cb.on_validation_step_end(metrics)

    # ------------------------------------------------------------------ checkpoints

    def save(self, path: str, batches_trained: int) -> None:
        ctx = self._context
        state = {
            "models_state_dict": [m.state_dict() for m in ctx.models],
            "optimizers_state_dict": [o.state_dict() for o in ctx.optimizers],
            "lr_schedulers_state_dict": [s.state_dict() for s in ctx.lr_schedulers],
            "callbacks": {name: cb.state_dict() for name, cb in self.callbacks.items()},
            "scalers_state_dict": [s.state_dict() for s in ctx.scalers],
            "amp": ctx._amp_state_dict(),
            "rng_state": {
                "python": random.getstate(),
                "numpy": np.random.get_state(),
                "torch": torch.random.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
            },
            "batches_trained": batches_trained,
            "trial_seed": self.env.trial_seed,
        }
        torch.save(state, os.path.join(path, STATE_FILE), pickle_module=cloudpickle)

    def load(self, path: str, weights_only: bool = False, **torch_load_kwargs: Any) -> int:
        """Restore the checkpoint in ``path``; ``torch_load_kwargs`` go to ``torch.load``
        (``map_location`` defaults to this trial's device)."""
        file = os.path.join(path, STATE_FILE)
        if not os.path.exists(file):
            raise CheckpointError(f"{path} holds no PyTorch checkpoint ({STATE_FILE} missing)")
        kwargs = {"map_location": self._context.device, "weights_only": False, **torch_load_kwargs}
        state = torch.load(file, **kwargs)
        ctx = self._context
        models = state.get("models_state_dict") or [state["model_state_dict"]]
        optimizers = state.get("optimizers_state_dict")
        if optimizers is None:
            optimizers = [state["optimizer_state_dict"]] if "optimizer_state_dict" in state else []
        schedulers = state.get("lr_schedulers_state_dict")
        if schedulers is None:
            schedulers = [state["lr_scheduler"]] if state.get("lr_scheduler") else []
        for kind, saved, live in (
            ("models", models, ctx.models),
            ("optimizers", optimizers, ctx.optimizers),
            ("LR schedulers", schedulers, ctx.lr_schedulers),
        ):
            if len(saved) != len(live):
                raise CheckpointError(
                    f"checkpoint {path} holds {len(saved)} {kind} but the trial wrapped {len(live)}"
                )
        for m, sd in zip(ctx.models, models):
            m.load_state_dict(sd)
        for o, sd in zip(ctx.optimizers, optimizers):
            o.load_state_dict(sd)
        for s, sd in zip(ctx.lr_schedulers, schedulers):
            s.load_state_dict(sd)
        for name, sd in (state.get("callbacks") or {}).items():
            if name in self.callbacks:
                self.callbacks[name].load_state_dict(sd)
        self._load_mixed_precision(path, state)
        # A warm start continues the source's random streams too (as 0.13), at batch 0.
        restore_rng_state(state.get("rng_state") or {})
        return 0 if weights_only else int(state.get("batches_trained", 0))

    def _load_mixed_precision(self, path: str, state: Dict[str, Any]) -> None:
        ctx = self._context
        scalers = state.get("scalers_state_dict") or []
        if scalers and len(scalers) != len(ctx.scalers):
            raise CheckpointError(
                f"checkpoint {path} holds {len(scalers)} gradient scaler(s) but the trial "
                f"wrapped {len(ctx.scalers)}"
            )
        for scaler, sd in zip(ctx.scalers, scalers):
            if sd:  # a disabled GradScaler saves {}
                scaler.load_state_dict(sd)
        ctx._load_amp_state_dict(state.get("amp"))

    def on_checkpoint_end(self, path: str) -> None:
        for cb in self.callbacks.values():
            cb.on_checkpoint_end(path)

    def close(self) -> None:
        self._train_iter = None
        for cb in self.callbacks.values():
            cb.on_trial_close()


def restore_rng_state(rng: Dict[str, Any]) -> None:
    """Set the Python, NumPy, torch and CUDA random states saved by ``save``.

    torch wants generator states as CPU byte tensors, whatever ``map_location`` moved
    them to. CUDA states are restored for the GPUs this process sees (a checkpoint
    from a machine with more GPUs restores the first ones); without a GPU they are
    left out, since there is no CUDA stream to continue.
    """
    if rng.get("python") is not None:
        random.setstate(rng["python"])
    if rng.get("numpy") is not None:
        np.random.set_state(rng["numpy"])
    if rng.get("torch") is not None:
        torch.random.set_rng_state(rng["torch"].cpu())
    cuda = rng.get("cuda")
    if not cuda:
        return
    if not torch.cuda.is_available():
        logger.info("the checkpoint holds CUDA random states; no GPU here, so they are not restored")
        return
    count = torch.cuda.device_count()
    if len(cuda) != count:
        logger.warning("the checkpoint holds CUDA random states of %d GPU(s); restoring %d",
                       len(cuda), min(len(cuda), count))
    for index, cuda_state in enumerate(cuda[:count]):
        torch.cuda.set_rng_state(cuda_state.cpu(), index)


def _batch_len(batch: Any) -> int:
    while isinstance(batch, (list, tuple)) and batch:
        batch = batch[0]
    if isinstance(batch, dict) and batch:
        return _batch_len(next(iter(batch.values())))
    shape = getattr(batch, "shape", None)
    return int(shape[0]) if shape else 1


#: Types whose values ``util.plain_values`` leaves as they are.
_PLAIN = frozenset((float, int, bool, str, type(None)))
_TENSOR_ONLY = {torch.Tensor}


def _column(values: List[Any]) -> Tuple[List[Any], bool, bool]:
    """Per-batch values of one metric as Python values (one host copy for scalar tensors),
    whether they are all plain JSON values, and whether all are numbers (not bools)."""
    if set(map(type, values)) == _TENSOR_ONLY and values[0].ndim == 0:
        try:
            with torch.no_grad():  # losses are still tied to their (spent) graphs
                stacked: Optional[torch.Tensor] = torch.stack(values)
        except RuntimeError:
            if all(v.ndim == 0 for v in values):
                raise  # scalar tensors that cannot be stacked (e.g. on several devices)
            stacked = None  # of several shapes
        if stacked is not None and stacked.ndim == 1:  # every value was a scalar tensor
            if stacked.is_floating_point():
                if stacked.dtype != torch.float64:
                    stacked = stacked.double()
                return stacked.cpu().tolist(), True, True
            if stacked.is_complex():
                return stacked.cpu().tolist(), False, False
            return stacked.cpu().tolist(), True, stacked.dtype != torch.bool
    column = [_to_python(v) for v in values]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in column)
    return column, set(map(type, column)) <= _PLAIN, numbers


def _training_metrics(outs: List[Dict[str, Any]]) -> Tuple[Dict[str, Any], bool]:
    """A workload's metrics from its ``train_batch`` outputs, and whether they are plain
    JSON values already (what ``util.plain_values`` would return)."""
    if not outs:
        return {"batch_metrics": [], "avg_metrics": {}}, True
    keys = list(outs[0])
    plain = set(map(type, keys)) <= {str}
    columns: Dict[str, List[Any]] = {}
    avg: Dict[str, Optional[float]] = {}
    n = len(outs)
    for k in keys:
        columns[k], column_plain, numbers = _column([o.get(k) for o in outs])
        plain = plain and column_plain
        avg[k] = float(sum(columns[k])) / n if numbers else None
    if len(keys) == 1:
        (k,) = keys
        batch_metrics = [{k: v} for v in columns[k]]
    else:
        batch_metrics = [dict(zip(keys, row)) for row in zip(*columns.values())]
    return {"batch_metrics": batch_metrics, "avg_metrics": avg}, plain


def _summarize(batch_metrics: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Training metrics of a workload from its per-batch metrics (Python values)."""
    keys = list(batch_metrics[0]) if batch_metrics else []
    columns = {k: [m.get(k) for m in batch_metrics] for k in keys}
    return {"batch_metrics": batch_metrics, "avg_metrics": _averages(columns, len(batch_metrics))}


def _averages(columns: Dict[str, List[Any]], n: int) -> Dict[str, Optional[float]]:
    avg: Dict[str, Optional[float]] = {}
    for k, col in columns.items():
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in col):
            avg[k] = float(sum(col)) / n
        else:
            avg[k] = None
    return avg
