"""What PyTorch trials exchange across ranks (``slots_per_trial`` > 1).

Gradients: on GPUs (NCCL), each wrapped model is a ``DistributedDataParallel``:
gradients are averaged in buckets while the backward pass still runs. Elsewhere
(gloo; ``DET_DDP=1`` forces DDP there too, ``DET_DDP=0`` turns it off) one
all-reduce per step of each optimizer, all of its gradients in a flat buffer per
dtype, averaged over ranks. Initial weights: broadcast from
rank 0. Validation metrics: each rank reduces its own batches, the chief
combines the ranks' results. Training metrics: the chief's, or per-batch means
over ranks when ``optimizations.average_training_metrics`` is set.
"""

from __future__ import annotations

import inspect
import numbers
import os
from typing import Any, Collection, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.distributed as dist

from determined.harness._collective import CollectiveError
from determined.pytorch._reducer import (
    MetricReducer,
    Reducer,
    _to_python,
    reduce_metric,
)

__all__ = [
    "allreduce_gradients",
    "use_ddp",
    "wrap_ddp",
    "average_batch_metrics",
    "broadcast_models",
    "combine_slot_metrics",
    "slot_metrics",
]


def broadcast_models(models: Sequence[torch.nn.Module]) -> None:
    """Make every rank's weights and buffers rank 0's."""
    with torch.no_grad():
        for model in models:
            for tensor in model.state_dict(keep_vars=False).values():
                if isinstance(tensor, torch.Tensor):
                    try:
                        dist.broadcast(tensor, src=0)
                    except RuntimeError as e:
                        raise CollectiveError.wrap("broadcasting rank 0's weights", e) from None


def use_ddp(backend: str) -> bool:
    """Whether wrapped models become ``DistributedDataParallel``: with NCCL, unless
    ``DET_DDP`` says otherwise (``1`` or ``0``)."""
    forced = os.environ.get("DET_DDP")
    if forced not in (None, "", "0", "1"):
        raise ValueError(f"Expected DET_DDP 0 or 1. Received: {forced!r}")
    return forced == "1" if forced else backend == "nccl"


def wrap_ddp(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """``model`` in ``DistributedDataParallel``: bucketed all-reduce overlapped with the
    backward pass (default 25 MB buckets), gradients averaged over the ranks.

    Buffers (batch-norm statistics) stay each rank's own, as without DDP, so that a
    forward pass never waits on other ranks (ranks may validate different numbers
    of batches); checkpoints hold rank 0's.
    """
    from torch.nn.parallel import DistributedDataParallel

    device_ids = [device.index if device.index is not None else torch.cuda.current_device()] \
        if device.type == "cuda" else None
    # torch >= 2.13 names it forward_sync_buffers (broadcast_buffers is deprecated there).
    params = inspect.signature(DistributedDataParallel.__init__).parameters
    no_sync = ({"forward_sync_buffers": False} if "forward_sync_buffers" in params
               else {"broadcast_buffers": False})
    return DistributedDataParallel(model, device_ids=device_ids, **no_sync)


def allreduce_gradients(optimizer: torch.optim.Optimizer, size: int,
                        skip: Collection[int] = ()) -> None:
    """Average the gradients of ``optimizer``'s parameters over the ranks (but those
    whose ``id`` is in ``skip``: DDP averaged them already).

    Each parameter also sends whether it has a gradient here, so that a
    parameter no rank computed a gradient for stays ``None`` everywhere and one
    that some ranks skipped gets their zeros.
    """
    buckets: Dict[Tuple[torch.dtype, torch.device], List[torch.Tensor]] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) in skip:
                continue
            dtype = p.grad.dtype if p.grad is not None else p.dtype
            buckets.setdefault((dtype, p.device), []).append(p)
    for (dtype, device), params in buckets.items():
        pieces = []
        for p in params:
            g = p.grad
            if g is None:
                pieces.append(torch.zeros(p.numel(), dtype=dtype, device=device))
            else:
                pieces.append((g.to_dense() if g.is_sparse else g).reshape(-1))
        presence = torch.tensor([0.0 if p.grad is None else 1.0 for p in params],
                                dtype=dtype, device=device)
        flat = torch.cat(pieces + [presence])
        try:
            dist.all_reduce(flat)
        except RuntimeError as e:
            raise CollectiveError.wrap("averaging gradients", e) from None
        counts = flat[-len(params):].tolist()
        flat = flat[: -len(params)].div_(size)
        offset = 0
        for p, count in zip(params, counts):
            n = p.numel()
            if count > 0:
                value = flat[offset:offset + n].view_as(p)
                if p.grad is None or p.grad.is_sparse:
                    p.grad = value.clone()
                else:
                    p.grad.copy_(value)
            offset += n


# ---------------------------------------------------------------------- metrics


def slot_metrics(columns: Dict[str, List[Any]], reducers: Dict[str, Any]) -> Dict[str, Any]:
    """This rank's part of each validation metric: what the chief needs to combine.

    AVG: (mean, batches); SUM/MAX/MIN: the reduction; a ``MetricReducer``: its
    ``per_slot_reduce()``; a function of all values: the raw values.
    """
    part: Dict[str, Any] = {}
    for name, values in columns.items():
        reducer = reducers[name]
        if isinstance(reducer, Reducer):
            part[name] = (reduce_metric(name, values, reducer), len(values))
        elif isinstance(reducer, MetricReducer):
            reducer.reset()
            for v in values:
                reducer.update(v)
            part[name] = reducer.per_slot_reduce()
        else:
            part[name] = [_to_python(v) for v in values]
    return part


def combine_slot_metrics(
    parts: List[Optional[Dict[str, Any]]], reducers: Dict[str, Any]
) -> Dict[str, Any]:
    """The chief's cross-rank reduction of :func:`slot_metrics` results (None: a rank
    that had no validation batches)."""
    present = [p for p in parts if p is not None]
    keys = list(present[0])
    for p in present[1:]:
        if set(p) != set(keys):
            raise ValueError(
                "Expected every rank's evaluate_batch to return the same metric names. "
                f"Received: {sorted(keys)} and {sorted(p)}"
            )
    out: Dict[str, Any] = {}
    for name in keys:
        reducer = reducers[name]
        values = [p[name] for p in present]
        if isinstance(reducer, Reducer):
            out[name] = _combine_builtin(reducer, values)
        elif isinstance(reducer, MetricReducer):
            out[name] = reducer.cross_slot_reduce(values)
        else:
            out[name] = _to_python(reducer([v for per_rank in values for v in per_rank]))
    return out


def _combine_builtin(reducer: Reducer, values: List[Tuple[Any, int]]) -> Any:
    arrays = [np.asarray(v, dtype=np.float64) for v, _ in values]
    if reducer is Reducer.AVG:
        weights = np.asarray([n for _, n in values], dtype=np.float64)
        out = sum(a * w for a, w in zip(arrays, weights)) / weights.sum()
    elif reducer is Reducer.SUM:
        out = sum(arrays)
    elif reducer is Reducer.MAX:
        out = np.maximum.reduce(arrays)
    else:
        out = np.minimum.reduce(arrays)
    return _to_python(np.asarray(out))


def average_batch_metrics(per_rank: List[List[Dict[str, Any]]]) -> List[Dict[str, Any]]:
    """Per-batch means over ranks of numeric metrics (None and non-numbers ignored;
    a metric no rank has a number for keeps the chief's value)."""
    chief = per_rank[0]
    out = []
    for i, metrics in enumerate(chief):
        row = {}
        for name, value in metrics.items():
            nums = [
                r[i][name] for r in per_rank
                if i < len(r) and isinstance(r[i].get(name), numbers.Real)
                and not isinstance(r[i].get(name), bool)
            ]
            row[name] = float(sum(nums)) / len(nums) if nums else value
        out.append(row)
    return out
