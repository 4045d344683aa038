"""Mixed precision on ``torch.amp``: what ``configure_apex_amp`` runs where apex is missing.

The harness autocasts around each ``train_batch`` / ``evaluate_batch`` call and owns a
dynamic :class:`torch.amp.GradScaler` (float16 only: bfloat16 has float32's range and
needs no scaling). ``context.backward`` scales the loss, ``context.step_optimizer``
steps through the scaler, and the scaler is updated once after each training batch, so
a trial with several optimizers unscales every one with the same scale.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, ContextManager, Dict, Optional

import torch

__all__ = ["NativeAmp", "OPT_LEVELS", "choose_dtype"]

logger = logging.getLogger("determined")

OPT_LEVELS = ("O0", "O1", "O2", "O3")


def choose_dtype(device: torch.device, requested: Any = None) -> torch.dtype:
    """The autocast dtype: ``requested`` (float16 or bfloat16) if given; float16 on a
    GPU (apex's choice, with loss scaling); bfloat16 on the CPU (its only fast one)."""
    if requested is not None:
        if requested not in (torch.float16, torch.bfloat16):
            raise ValueError(
                "configure_apex_amp: cast_model_type must be torch.float16 or torch.bfloat16 "
                f"without apex. Received: {requested!r}"
            )
        if requested is torch.bfloat16 and device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ValueError("configure_apex_amp: this GPU does not support torch.bfloat16")
        return requested
    return torch.float16 if device.type == "cuda" else torch.bfloat16


class NativeAmp:
    """Autocast and (for float16) a dynamic gradient scaler for one trial."""

    def __init__(self, device: torch.device, dtype: torch.dtype, init_scale: Optional[float] = None):
        self.device_type = device.type
        self.dtype = dtype
        self.scaler: Optional[torch.amp.GradScaler] = None
        if dtype is torch.float16:
            kwargs: Dict[str, Any] = {} if init_scale is None else {"init_scale": float(init_scale)}
            self.scaler = torch.amp.GradScaler(self.device_type, **kwargs)
        self._stepped = False

    def autocast(self) -> ContextManager[Any]:
        return torch.autocast(device_type=self.device_type, dtype=self.dtype)

    def no_autocast(self) -> ContextManager[Any]:
        """Backward runs outside autocast (its ops follow the forward's dtypes anyway)."""
        return torch.autocast(device_type=self.device_type, enabled=False)

    def mark_stepped(self) -> None:
        self._stepped = True

    def wrap_train_step(self, step: Callable[..., Any]) -> Callable[..., Any]:
        """``step`` under autocast, then one scaler update if an optimizer stepped."""

        def amp_step(*args: Any) -> Any:
            with self.autocast():
                out = step(*args)
            if self._stepped:
                self._stepped = False
                assert self.scaler is not None
                self.scaler.update()
            return out

        return amp_step

    def state_dict(self) -> Dict[str, Any]:
        return {"dtype": str(self.dtype), "scaler": self.scaler.state_dict() if self.scaler else None}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        if self.scaler is not None and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
