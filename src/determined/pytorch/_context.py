"""``PyTorchTrialContext``: wrap models and optimizers, run backward and steps."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import warnings
from typing import Any, Callable, ContextManager, Dict, Iterator, List, Optional, Set

import torch

from determined.harness import TrialContext, TrialEnv
from determined.pytorch._amp import OPT_LEVELS, NativeAmp, choose_dtype
from determined.pytorch._data import to_device
from determined.pytorch._distributed import allreduce_gradients, wrap_ddp
from determined.pytorch._lr_scheduler import LRScheduler

__all__ = ["PyTorchTrialContext"]

logger = logging.getLogger("determined")


@dataclasses.dataclass
class RunState:
    """What the controller running a trial tells its context: the controller makes it
    and keeps it current, the context only reads it."""

    ddp: bool = False  # wrap models in DistributedDataParallel (a distributed NCCL trial)
    batch_idx: int = 0  # the batch being trained
    epoch_len: int = 1  # batches per data-loader epoch


class PyTorchTrialContext(TrialContext):
    """The context of a PyTorch trial (adds to :class:`~determined.harness.TrialContext`).

    ``wrap_*`` return the object they were given, registered for checkpoints and
    device placement, the way ``accelerate.prepare`` hands objects back.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        """``PyTorchTrialContext(env, hvd_config=None, device=None)``; ``env`` is a
        ``TrialEnv`` or upstream's ``det.EnvContext``. The controller also passes
        ``run_state`` (a :class:`RunState`)."""
        rest = list(args)
        env: TrialEnv = kwargs.pop("env") if "env" in kwargs else rest.pop(0)
        hvd_config = kwargs.pop("hvd_config", None)
        if rest and not isinstance(rest[0], (torch.device, str, type(None))):
            hvd_config = rest.pop(0)
        device: Optional[torch.device] = kwargs.pop("device", rest.pop(0) if rest else None)
        self._run: RunState = kwargs.pop("run_state", None) or RunState()
        if rest or kwargs:
            raise TypeError(f"PyTorchTrialContext: unexpected arguments {rest or ''} "
                            f"{sorted(kwargs) or ''}")
        super().__init__(env, hvd_config)
        env = self.env
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.models: List[torch.nn.Module] = []
        self.optimizers: List[torch.optim.Optimizer] = []
        self.lr_schedulers: List[LRScheduler] = []
        opts = env.experiment_config.get("optimizations", {})
        self._aggregation_frequency = int(opts.get("aggregation_frequency", 1))
        self._average_aggregated_gradients = bool(opts.get("average_aggregated_gradients", True))
        self._before_step_hooks: List[Callable[[Iterator[Any]], None]] = []
        # Mixed precision: the harness's own (configure_apex_amp without apex) or the
        # user's scalers (wrap_scaler); both are checkpointed.
        self._amp: Optional[NativeAmp] = None
        self._apex = False
        self.scalers: List[Any] = []
        self._ddp_params: Set[int] = set()
        # Ranks to average gradients over (0: one slot, nothing to exchange).
        self._grad_ranks = env.distributed.size if env.distributed.size > 1 else 0
        self._check_plain_step()

    # ---- wrapping

    def wrap_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """Register ``model`` (moved to this trial's device) and return it.

        In a distributed trial on GPUs the model comes back inside
        ``torch.nn.parallel.DistributedDataParallel`` (reach the model itself as
        ``.module``); checkpoints hold the model's own ``state_dict``.
        """
        if not isinstance(model, torch.nn.Module):
            raise TypeError(
                f"Expected a torch.nn.Module in wrap_model. Received: {type(model).__name__}"
            )
        model = model.to(self.device)
        self.models.append(model)
        if self._run.ddp and any(p.requires_grad for p in model.parameters()):
            self._ddp_params.update(id(p) for p in model.parameters())
            return wrap_ddp(model, self.device)
        return model

    def wrap_optimizer(self, optimizer: torch.optim.Optimizer) -> torch.optim.Optimizer:
        """Register ``optimizer`` and return it."""
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                "Expected a torch.optim.Optimizer in wrap_optimizer. "
                f"Received: {type(optimizer).__name__}"
            )
        self.optimizers.append(optimizer)
        return optimizer

    def wrap_lr_scheduler(
        self, lr_scheduler: Any, step_mode: LRScheduler.StepMode
    ) -> Any:
        """Register a torch LR scheduler, stepped per ``step_mode``; returns it."""
        optimizer = getattr(lr_scheduler, "optimizer", None)
        if not any(optimizer is o for o in self.optimizers):
            raise ValueError(
                "Expected the LR scheduler's optimizer to be wrapped with "
                "context.wrap_optimizer() before wrap_lr_scheduler()"
            )
        self.lr_schedulers.append(LRScheduler(lr_scheduler, step_mode))
        return lr_scheduler

    def configure_apex_amp(
        self,
        models: Any,
        optimizers: Any,
        enabled: Optional[bool] = True,
        opt_level: Optional[str] = "O1",
        cast_model_type: Any = None,
        patch_torch_functions: Optional[bool] = None,
        keep_batchnorm_fp32: Optional[bool] = None,
        master_weights: Optional[bool] = None,
        loss_scale: Any = None,
        cast_model_outputs: Any = None,
        num_losses: Optional[int] = 1,
        verbosity: Optional[int] = 1,
        min_loss_scale: Optional[float] = None,
        max_loss_scale: Optional[float] = 2.0**24,
    ) -> Any:
        """Train ``models`` with ``optimizers`` in mixed precision; returns them.

        With NVIDIA apex installed and a GPU: ``apex.amp.initialize`` with these
        arguments. Otherwise ``torch.amp``: the harness autocasts around
        ``train_batch``/``evaluate_batch``, and for float16 ``context.backward`` scales
        the loss with a dynamic ``GradScaler`` (initial scale ``loss_scale`` if it is a
        number) that ``context.step_optimizer`` steps through and checkpoints save.
        Every ``opt_level`` but ``O0`` means autocast (apex's O1); ``cast_model_type``
        picks ``torch.float16`` (the default on a GPU) or ``torch.bfloat16`` (the
        default on the CPU, no scaler). Call it once, in ``__init__``, after wrapping.
        """
        if not enabled:
            return models, optimizers
        if opt_level not in OPT_LEVELS:
            raise ValueError(
                f"configure_apex_amp: expected opt_level one of {', '.join(OPT_LEVELS)}. "
                f"Received: {opt_level!r}"
            )
        if self._amp is not None or self._apex:
            raise RuntimeError("configure_apex_amp was already called (mixed precision is on)")
        if self.scalers:
            raise RuntimeError("configure_apex_amp cannot be combined with wrap_scaler")
        for what, given, wrapped in (("model", models, self.models), ("optimizer", optimizers,
                                                                      self.optimizers)):
            for obj in given if isinstance(given, (list, tuple)) else [given]:
                # A distributed model comes back from wrap_model inside DDP.
                if not any(obj is w or getattr(obj, "module", None) is w for w in wrapped):
                    raise ValueError(
                        f"configure_apex_amp: every {what} must be wrapped first "
                        f"(context.wrap_{what}); got an unwrapped {type(obj).__name__}"
                    )
        if opt_level == "O0":
            return models, optimizers
        if self.device.type == "cuda" and _apex_amp() is not None:
            self._apex = True
            return _apex_amp().initialize(
                models, optimizers, opt_level=opt_level, cast_model_type=cast_model_type,
                patch_torch_functions=patch_torch_functions,
                keep_batchnorm_fp32=keep_batchnorm_fp32, master_weights=master_weights,
                loss_scale=loss_scale, cast_model_outputs=cast_model_outputs,
                num_losses=num_losses, verbosity=verbosity, min_loss_scale=min_loss_scale,
                max_loss_scale=max_loss_scale,
            )
        dtype = choose_dtype(self.device, cast_model_type)
        init_scale = loss_scale if isinstance(loss_scale, (int, float)) else None
        self._amp = NativeAmp(self.device, dtype, init_scale)
        self._check_plain_step()
        logger.info("mixed precision: torch.amp autocast to %s on %s%s", dtype, self.device.type,
                    " with a dynamic loss scaler" if self._amp.scaler else "")
        return models, optimizers

    def wrap_scaler(self, scaler: Any) -> Any:
        """Register a ``torch.amp.GradScaler`` for trials that autocast themselves; returns it.

        As in later Determined: scale the loss yourself
        (``context.backward(scaler.scale(loss))``), step with
        ``context.step_optimizer(opt, scaler=scaler)`` (the one wrapped scaler is used
        if ``scaler`` is left out), then call ``scaler.update()``. Its state is saved in
        checkpoints and restored with them.
        """
        if not all(callable(getattr(scaler, m, None)) for m in ("scale", "step", "update",
                                                                 "state_dict")):
            raise TypeError(
                "Expected a torch.amp.GradScaler in wrap_scaler. "
                f"Received: {type(scaler).__name__}"
            )
        if self._amp is not None:
            raise RuntimeError("wrap_scaler cannot be combined with configure_apex_amp")
        self.scalers.append(scaler)
        return scaler

    # ---- training steps

    def backward(
        self,
        loss: torch.Tensor,
        gradient: Optional[torch.Tensor] = None,
        retain_graph: bool = False,
        create_graph: bool = False,
    ) -> None:
        """Compute gradients of ``loss`` (``loss.backward`` with the same arguments); under
        ``configure_apex_amp`` the loss is scaled first."""
        amp = self._amp
        if amp is None and not self._apex:
            if gradient is None and not retain_graph and not create_graph:
                loss.backward()
            else:
                loss.backward(gradient=gradient, retain_graph=retain_graph,
                              create_graph=create_graph)
        elif self._apex:
            with _apex_amp().scale_loss(loss, self.optimizers) as scaled:
                scaled.backward(gradient=gradient, retain_graph=retain_graph,
                                create_graph=create_graph)
        else:
            scaled = amp.scaler.scale(loss) if amp.scaler is not None else loss
            with amp.no_autocast():
                scaled.backward(gradient=gradient, retain_graph=retain_graph,
                                create_graph=create_graph)

    def step_optimizer(
        self,
        optimizer: torch.optim.Optimizer,
        clip_grads: Optional[Callable[[Iterator[Any]], None]] = None,
        auto_zero_grads: bool = True,
        scaler: Optional[Any] = None,
    ) -> None:
        """Step ``optimizer`` (every ``aggregation_frequency``-th batch), then zero grads.

        In a distributed trial the gradients are first averaged over the ranks (once
        per step, after ``aggregation_frequency`` batches of accumulation).

        Args:
            clip_grads: called with the parameters before the step, e.g.
                ``lambda p: torch.nn.utils.clip_grad_norm_(p, 1.0)``.
            auto_zero_grads: zero gradients after the step.
            scaler: a ``GradScaler`` given to :meth:`wrap_scaler`: the step goes through
                it (``scaler.step``), gradients unscaled before clipping.
        """
        if self._plain_step and scaler is None and clip_grads is None and not self.scalers:
            optimizer.step()
            if auto_zero_grads:
                optimizer.zero_grad()
            return
        k = self._aggregation_frequency
        scaler = self._step_scaler(scaler)
        if k > 1:
            if not auto_zero_grads:
                raise ValueError(
                    "auto_zero_grads=False is not allowed with aggregation_frequency > 1"
                )
            if not self._steps_after(self._run.batch_idx):
                return
        if self._grad_ranks:
            allreduce_gradients(optimizer, self._grad_ranks, self._ddp_params)
        if k > 1:
            if self._average_aggregated_gradients:
                for group in optimizer.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.grad.div_(k)
        if scaler is not None and (self._before_step_hooks or clip_grads is not None):
            scaler.unscale_(optimizer)  # hooks and clipping see true gradients
        if self._before_step_hooks:
            for hook in self._before_step_hooks:
                hook(_params(optimizer))
        if clip_grads is not None:
            clip_grads(_params(optimizer))
        if scaler is None:
            optimizer.step()
        else:
            scaler.step(optimizer)
            if self._amp is not None:
                self._amp.mark_stepped()
        if auto_zero_grads:
            optimizer.zero_grad()

    def _step_scaler(self, given: Optional[Any]) -> Optional[Any]:
        if given is not None:
            if not any(given is s for s in self.scalers):
                raise ValueError("step_optimizer: scaler must be one given to context.wrap_scaler")
            return given
        if self._amp is not None:
            return self._amp.scaler
        if len(self.scalers) == 1:
            return self.scalers[0]
        if self.scalers:
            raise ValueError("step_optimizer: several scalers are wrapped; pass scaler=")
        return None

    def to_device(self, data: Any) -> Any:
        """Move tensors/arrays (any nesting) to this trial's device."""
        return to_device(data, self.device)

    def is_epoch_start(self) -> bool:
        """Whether the current batch is the first of a data-loader epoch."""
        return self._run.batch_idx % self._run.epoch_len == 0

    def is_epoch_end(self) -> bool:
        """Whether the current batch is the last of a data-loader epoch."""
        return (self._run.batch_idx + 1) % self._run.epoch_len == 0

    # ---- the controller's side (not for trial code)

    def _wrap_det_lr_scheduler(self, scheduler: LRScheduler) -> None:
        self.lr_schedulers.append(scheduler)

    def _add_before_step_hook(self, hook: Callable[[Iterator[Any]], None]) -> None:
        """Call ``hook`` with the parameters before each optimizer step."""
        self._before_step_hooks.append(hook)
        self._check_plain_step()

    def _check_plain_step(self) -> None:
        """Whether a step is ``optimizer.step()`` alone when the call asks for nothing more
        (no clipping, no scaler): one slot, no aggregation, no hooks, no harness scaler."""
        self._plain_step = (
            self._aggregation_frequency == 1 and not self._grad_ranks
            and not self._before_step_hooks and (self._amp is None or self._amp.scaler is None)
        )

    def _steps_after(self, batch_idx: int) -> bool:
        """Whether optimizers step after batch ``batch_idx`` (``aggregation_frequency``)."""
        return (batch_idx + 1) % self._aggregation_frequency == 0

    def _mixed_precision_on(self) -> bool:
        """Whether the trial set up mixed precision itself (either way)."""
        return self._amp is not None or self._apex or bool(self.scalers)

    def _wrap_train_step(self, step: Callable[..., Any]) -> Callable[..., Any]:
        """``step`` (``train_batch``), autocast under the harness's mixed precision."""
        return self._amp.wrap_train_step(step) if self._amp is not None else step

    def _autocast(self) -> ContextManager[Any]:
        """Autocast for evaluation under the harness's mixed precision."""
        return self._amp.autocast() if self._amp is not None else contextlib.nullcontext()

    def _amp_state_dict(self) -> Optional[Dict[str, Any]]:
        """The harness's mixed precision state (its loss scaler) for a checkpoint."""
        return self._amp.state_dict() if self._amp is not None else None

    def _load_amp_state_dict(self, state: Optional[Dict[str, Any]]) -> None:
        if self._amp is not None and state:
            self._amp.load_state_dict(state)

    # ---- deprecated accessors

    def get_model(self) -> torch.nn.Module:
        warnings.warn("get_model() is deprecated; keep the wrapped model yourself", DeprecationWarning)
        return self.models[0]

    def get_optimizer(self) -> torch.optim.Optimizer:
        warnings.warn("get_optimizer() is deprecated", DeprecationWarning)
        return self.optimizers[0]

    def get_lr_scheduler(self) -> Optional[LRScheduler]:
        warnings.warn("get_lr_scheduler() is deprecated", DeprecationWarning)
        return self.lr_schedulers[0] if self.lr_schedulers else None


def _apex_amp() -> Any:
    try:
        from apex import amp  # type: ignore
    except ImportError:
        return None
    return amp


def _params(optimizer: torch.optim.Optimizer) -> Iterator[Any]:
    for group in optimizer.param_groups:
        yield from group["params"]

