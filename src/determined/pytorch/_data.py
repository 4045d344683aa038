"""``det.pytorch.DataLoader`` and the loaders the platform builds from it.

The user's DataLoader only records its arguments (checked by torch's rules). The
platform builds the real ``torch.utils.data.DataLoader``: for training an
endless stream of epochs that starts at any batch (resume) and takes every
N-th batch on rank r of N; for validation one pass. Shuffling is reseeded from
(trial seed, epoch) at every epoch, so a resumed trial sees the very batches an
uninterrupted one would.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np
import torch
import torch.utils.data as tud

__all__ = [
    "DataLoader",
    "DistributedBatchSampler",
    "RepeatBatchSampler",
    "SkipBatchSampler",
    "TorchData",
    "TrainingBatches",
    "adapt_batch_sampler",
    "data_length",
    "to_device",
]

logger = logging.getLogger("determined")

#: What ``train_batch``/``evaluate_batch`` receive: a tensor or a dict or sequence of them.
TorchData = Union[Dict[str, torch.Tensor], Sequence[torch.Tensor], torch.Tensor]
_Array = Union[np.ndarray, torch.Tensor]
_Data = Union[Dict[str, _Array], Sequence[_Array], _Array]


class DataLoader:
    """A drop-in for ``torch.utils.data.DataLoader`` (same arguments and rules).

    Example:
        >>> def build_training_data_loader(self):                     # doctest: +SKIP
        ...     return det.pytorch.DataLoader(
        ...         dataset, batch_size=self.context.get_per_slot_batch_size(), shuffle=True)
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: Optional[int] = 1,
        shuffle: bool = False,
        sampler: Optional[Any] = None,
        batch_sampler: Optional[Any] = None,
        num_workers: int = 0,
        collate_fn: Optional[Callable] = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Optional[Callable] = None,
        multiprocessing_context: Any = None,
        generator: Optional[torch.Generator] = None,
        *,
        prefetch_factor: Optional[int] = None,
        persistent_workers: bool = False,
    ):
        if batch_sampler is not None and (
            batch_size != 1 or shuffle or sampler is not None or drop_last
        ):
            raise ValueError(
                "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                "sampler, and drop_last"
            )
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is None and batch_size is None:
            raise ValueError("Expected a batch_size; batch_size=None is not supported")
        if isinstance(dataset, tud.IterableDataset) and (shuffle or sampler or batch_sampler):
            raise ValueError("An IterableDataset takes no shuffle, sampler or batch_sampler")
        if num_workers < 0:
            raise ValueError(f"Expected num_workers >= 0. Received: num_workers={num_workers}")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.drop_last = drop_last
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        # Set by the harness for trials on a GPU: page-locked batches let the copy to the
        # device run without blocking (to_device copies with non_blocking=True).
        self._pin_for_device = False

    @property
    def is_iterable(self) -> bool:
        return isinstance(self.dataset, tud.IterableDataset)

    def _epoch_batch_sampler(self, shuffle_gen: torch.Generator) -> Any:
        if self.batch_sampler is not None:
            return self.batch_sampler
        if self.sampler is not None:
            sampler = self.sampler
        elif self.shuffle:
            sampler = tud.RandomSampler(self.dataset, generator=self.generator or shuffle_gen)
        else:
            sampler = tud.SequentialSampler(self.dataset)
        return tud.BatchSampler(sampler, self.batch_size, self.drop_last)  # type: ignore[arg-type]

    def __len__(self) -> int:
        """Batches in one epoch."""
        if self.is_iterable:
            return len(self.get_data_loader())
        return len(self._epoch_batch_sampler(torch.Generator()))

    def _torch_loader(self, **overrides: Any) -> tud.DataLoader:
        kwargs = dict(
            num_workers=self.num_workers,
            collate_fn=self.collate_fn,
            pin_memory=self.pin_memory or self._pin_for_device,
            timeout=self.timeout,
            worker_init_fn=self.worker_init_fn,
            multiprocessing_context=self.multiprocessing_context,
            persistent_workers=self.persistent_workers and self.num_workers > 0,
        )
        if self.num_workers > 0 and self.prefetch_factor is not None:
            kwargs["prefetch_factor"] = self.prefetch_factor
        kwargs.update(overrides)
        return tud.DataLoader(self.dataset, **kwargs)

    def get_data_loader(
        self, repeat: bool = False, skip: int = 0, num_replicas: int = 1, rank: int = 0
    ) -> tud.DataLoader:
        """A ``torch.utils.data.DataLoader`` of this loader's arguments: one pass over the
        data, or endless passes (``repeat``); the first ``skip`` batches left out; every
        ``num_replicas``-th batch from ``rank`` (see :func:`adapt_batch_sampler`)."""
        if self.is_iterable:
            if repeat or skip or num_replicas > 1:
                raise ValueError("get_data_loader: repeat, skip and num_replicas need a map-style "
                                 "dataset; this DataLoader's dataset is an IterableDataset")
            return self._torch_loader(batch_size=self.batch_size, drop_last=self.drop_last)
        sampler = self._epoch_batch_sampler(torch.Generator().manual_seed(0))
        if num_replicas > 1 and not repeat and not skip:
            sampler = _Shard(sampler, num_replicas, rank)
        else:
            sampler = adapt_batch_sampler(sampler, repeat, skip, num_replicas, rank)
        return self._torch_loader(batch_sampler=sampler)

    def training_iterator(
        self, seed: int, start_batch: int, num_replicas: int = 1, rank: int = 0
    ) -> Iterator[Any]:
        """Endless batches for training, starting at this rank's batch ``start_batch``."""
        if self.is_iterable:
            return _iterable_training(self, start_batch, num_replicas, rank)
        batches = TrainingBatches(self, seed, start_batch, num_replicas, rank)
        gen = torch.Generator().manual_seed(_mix(seed, start_batch, 0x5EED))
        return iter(self._torch_loader(batch_sampler=batches, generator=gen))

    def batches_per_epoch(self, num_replicas: int = 1) -> int:
        """Batches one rank sees per epoch (epoch boundaries for user code)."""
        n = len(self)
        return max(1, n // num_replicas) if num_replicas > 1 else max(1, n)


def _mix(seed: int, epoch: int, salt: int = 0) -> int:
    return (seed * 1_000_003 + epoch * 7_919 + salt) % (2**63 - 1)


class _Shard(tud.Sampler):
    def __init__(self, batch_sampler: Any, num_replicas: int, rank: int):
        self.batch_sampler, self.n, self.rank = batch_sampler, num_replicas, rank

    def __iter__(self) -> Iterator[List[int]]:
        return itertools.islice(iter(self.batch_sampler), self.rank, None, self.n)

    def __len__(self) -> int:
        total = len(self.batch_sampler)
        return max(0, (total - self.rank + self.n - 1) // self.n)


class TrainingBatches(tud.Sampler):
    """Index batches of endless epochs, from batch ``start`` of this rank on.

    Epoch e's order comes from a generator seeded with (seed, e); a user sampler
    with ``set_epoch`` (e.g. DistributedSampler) is told the epoch instead.
    """

    def __init__(self, loader: DataLoader, seed: int, start: int, num_replicas: int, rank: int):
        self.loader, self.seed, self.start = loader, seed, start
        self.n, self.rank = num_replicas, rank
        self.per_epoch = loader.batches_per_epoch(num_replicas)

    def __iter__(self) -> Iterator[List[int]]:
        # Chained in C: no Python frame between the loader and each epoch's batches.
        return itertools.chain.from_iterable(self._epochs())

    def _epochs(self) -> Iterator[Iterator[List[int]]]:
        """Each epoch's batches, set up when the one before is used up."""
        epoch, skip = divmod(self.start, self.per_epoch)
        gen = torch.Generator()
        while True:
            gen.manual_seed(_mix(self.seed, epoch))
            sampler = self.loader._epoch_batch_sampler(gen)
            inner = getattr(sampler, "sampler", None)
            if hasattr(inner, "set_epoch"):
                inner.set_epoch(epoch)
            first = skip * self.n + self.rank
            last = self.per_epoch * self.n
            yield itertools.islice(iter(sampler), first, last, self.n)
            epoch += 1
            skip = 0


def _iterable_training(
    loader: DataLoader, start_batch: int, num_replicas: int = 1, rank: int = 0
) -> Iterator[Any]:
    """Passes over an IterableDataset, end to end; rank r of N takes batches r, r+N, ..."""
    torch_loader = loader.get_data_loader()

    def endless() -> Iterator[Any]:
        while True:
            yield from iter(torch_loader)

    if num_replicas == 1:
        skip = start_batch
        while True:
            it = iter(torch_loader)
            if skip:
                it = itertools.islice(it, skip, None)
                skip = 0
            yield from it
    yield from itertools.islice(endless(), start_batch * num_replicas + rank, None, num_replicas)


def to_device(data: Any, device: torch.device, log_warning: bool = False) -> Any:
    """Move tensors and arrays in any nesting of tuples, lists and dicts to ``device``;
    other values stay as they are (``log_warning``: say so, once per call)."""
    warned: List[type] = []

    def move(d: Any) -> Any:
        if isinstance(d, torch.Tensor):
            return d.to(device, non_blocking=True)
        if isinstance(d, np.ndarray):
            return torch.from_numpy(d).to(device, non_blocking=True)
        if isinstance(d, dict):
            return {k: move(v) for k, v in d.items()}
        if isinstance(d, tuple) and hasattr(d, "_fields"):
            return type(d)(*(move(v) for v in d))
        if isinstance(d, (list, tuple)):
            return type(d)(move(v) for v in d)
        if log_warning and type(d) not in warned and not isinstance(d, (str, int, float, bool,
                                                                        type(None))):
            warned.append(type(d))
            logger.warning("to_device: left a %s where it is (not a tensor or array)",
                           type(d).__name__)
        return d

    return move(data)


def data_length(data: Any) -> int:
    """Records in a batch: the first dimension of its first tensor or array.

    Example:
        >>> data_length({"x": torch.zeros(4, 3), "y": torch.zeros(4)})
        4
    """
    if isinstance(data, (torch.Tensor, np.ndarray)):
        return int(data.shape[0]) if data.ndim else 1
    if isinstance(data, dict):
        if not data:
            raise ValueError("data_length: an empty dict holds no records")
        return data_length(next(iter(data.values())))
    if isinstance(data, (list, tuple)):
        if not data:
            raise ValueError("data_length: an empty sequence holds no records")
        return data_length(data[0])
    raise TypeError(f"data_length: expected a tensor, an array, or a dict, list or tuple of "
                    f"them. Received: {type(data).__name__}")


class SkipBatchSampler(tud.BatchSampler):
    """The batches of ``batch_sampler`` after its first ``skip`` (resuming mid-epoch).
    ``same_length``: report the wrapped sampler's length (for an endless one)."""

    def __init__(self, batch_sampler: Any, skip: int, same_length: bool = False) -> None:
        if skip < 0:
            raise ValueError(f"Expected skip >= 0. Received: skip={skip}")
        self.batch_sampler = batch_sampler
        self.skip = skip
        self.same_length = same_length

    def __len__(self) -> int:
        n = len(self.batch_sampler)
        return n if self.same_length else max(n - self.skip, 0)

    def __iter__(self) -> Iterator[List[int]]:
        return itertools.islice(iter(self.batch_sampler), self.skip, None)


class RepeatBatchSampler(tud.BatchSampler):
    """``batch_sampler``'s epochs, one after another, forever (``len`` is one epoch)."""

    def __init__(self, batch_sampler: Any) -> None:
        self.batch_sampler = batch_sampler

    def __len__(self) -> int:
        return len(self.batch_sampler)

    def __iter__(self) -> Iterator[List[int]]:
        while True:
            empty = True
            for batch in self.batch_sampler:
                empty = False
                yield batch
            if empty:
                return


class DistributedBatchSampler(tud.BatchSampler):
    """Every ``num_replicas``-th batch of ``batch_sampler``, starting at ``rank``."""

    def __init__(self, batch_sampler: Any, num_replicas: int, rank: int) -> None:
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"Expected 0 <= rank < num_replicas. Received: rank={rank}, "
                             f"num_replicas={num_replicas}")
        self.batch_sampler = batch_sampler
        self.num_replicas = num_replicas
        self.rank = rank

    def __len__(self) -> int:
        n = len(self.batch_sampler)
        return max(0, (n - self.rank + self.num_replicas - 1) // self.num_replicas)

    def __iter__(self) -> Iterator[List[int]]:
        return itertools.islice(iter(self.batch_sampler), self.rank, None, self.num_replicas)


def adapt_batch_sampler(
    batch_sampler: Any,
    repeat: bool = False,
    skip: int = 0,
    num_replicas: int = 1,
    rank: int = 0,
) -> Any:
    """Wrap ``batch_sampler``: repeat it, shard it across replicas, then skip ``skip`` of
    this replica's batches (as upstream 0.13 composed them)."""
    if repeat:
        batch_sampler = RepeatBatchSampler(batch_sampler)
    if num_replicas > 1:
        batch_sampler = DistributedBatchSampler(batch_sampler, num_replicas, rank)
    if skip > 0:
        batch_sampler = SkipBatchSampler(batch_sampler, skip, same_length=repeat)
    return batch_sampler
