"""The five training/validation input types of a TFKerasTrial, behind one loader interface.

A loader yields batches for one epoch starting at a batch index, knows its
epoch length when it can, and tells a Keras ``Sequence`` when an epoch ends.
Arrays become a Sequence of per-slot batches (in order, no shuffling), so arrays
and Sequences resume at the exact batch a checkpoint recorded; a
``tf.data.Dataset`` restarts its epoch on resume.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import math
import multiprocessing
import types
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Union

import numpy as np
import tensorflow as tf

from determined.errors import InvalidTrialError
from determined.harness import user_code_error

__all__ = ["SequenceAdapter", "Loader", "make_loader", "batch_size_of"]

logger = logging.getLogger("determined")


class SequenceAdapter:
    """Load a ``tf.keras.utils.Sequence`` in background threads or processes.

    Args:
        data: a ``tf.keras.utils.Sequence`` holding the data. A plain Python
            generator is accepted too, but only loaded on the main thread.
        use_multiprocessing: use worker processes (forked; the Sequence's
            ``__getitem__`` must not use TensorFlow) instead of threads.
        workers: how many threads or processes; 0 loads on the main thread.
        max_queue_size: the most batches fetched ahead of training.

    Example::

        SequenceAdapter(sequence, workers=0)                           # main thread
        SequenceAdapter(sequence, workers=1, use_multiprocessing=True)  # one process
        SequenceAdapter(sequence, workers=2)                           # two threads
    """

    def __init__(
        self,
        data: Any,
        use_multiprocessing: bool = False,
        workers: int = 1,
        max_queue_size: int = 10,
    ):
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
            raise ValueError(f"Expected workers to be an int >= 0. Received: workers={workers!r}")
        if isinstance(max_queue_size, bool) or not isinstance(max_queue_size, int) or max_queue_size < 1:
            raise ValueError(
                f"Expected max_queue_size to be an int >= 1. Received: max_queue_size={max_queue_size!r}"
            )
        if not isinstance(data, tf.keras.utils.Sequence):
            if not _is_generator(data):
                raise TypeError(
                    "Expected SequenceAdapter(data) to receive a tf.keras.utils.Sequence (or a "
                    f"Python generator). Received: {type(data).__name__}"
                )
            if workers > 0 or use_multiprocessing:
                logger.warning(
                    "SequenceAdapter: multithreading and multiprocessing are not supported for "
                    "Python generators; loading on the main thread (use a Sequence instead)"
                )
            workers, use_multiprocessing = 0, False
        self.sequence = data
        self.use_multiprocessing = bool(use_multiprocessing)
        self.workers = workers
        self.max_queue_size = max_queue_size
        self._loader: Optional["Loader"] = None
        self._iterator: Optional[Iterator[Any]] = None

    def start(self, batch_offset: int = 0, is_validation: bool = False) -> None:
        """Start loading: endless epochs from batch ``batch_offset`` (training) or one
        pass (``is_validation``); read them from :meth:`get_iterator`."""
        self.stop()
        loader = make_loader(self, "SequenceAdapter", 1)
        self._loader = loader

        def batches() -> Iterator[Any]:
            start = batch_offset
            while True:
                yield from loader.epoch(start)
                if is_validation:
                    return
                loader.end_epoch()
                start = 0

        self._iterator = batches()

    def get_iterator(self) -> Iterator[Any]:
        """The batches of the last :meth:`start`."""
        if self._iterator is None:
            raise RuntimeError("SequenceAdapter.get_iterator(): call start() first")
        return self._iterator

    def stop(self, timeout: Optional[float] = None) -> None:
        """Stop the loading workers."""
        if self._loader is not None:
            self._loader.close()
        self._loader, self._iterator = None, None


def _is_generator(data: Any) -> bool:
    return isinstance(data, types.GeneratorType) or (
        hasattr(data, "__next__") and hasattr(data, "__iter__")
    )


def batch_size_of(batch: Any) -> int:
    """The number of records in a batch ``(x, y[, w])`` (the first input's leading dim)."""
    x = batch[0] if isinstance(batch, (tuple, list)) else batch
    for leaf in tf.nest.flatten(x):
        shape = getattr(leaf, "shape", None)
        if shape is not None and len(shape) > 0 and shape[0] is not None:
            return int(shape[0])
        if isinstance(leaf, (list, tuple)):
            return len(leaf)
    return 1


# ---------------------------------------------------------------------- loaders


class Loader:
    """Batches for one epoch at a time.

    ``length`` is the number of batches per epoch (None when unknown);
    ``resumable`` says whether :meth:`epoch` honours a start batch.
    """

    length: Optional[int] = None
    resumable: bool = True
    endless: bool = False

    def epoch(self, start: int = 0) -> Iterator[Any]:
        raise NotImplementedError

    def end_epoch(self) -> None:
        """The training epoch ended (tells a Sequence via ``on_epoch_end``)."""

    def close(self) -> None:
        """Stop background workers."""


class _ArraySequence(tf.keras.utils.Sequence):
    """Consecutive batches of ``(x, y[, sample_weights])`` arrays (no shuffling)."""

    def __init__(self, arrays: List[Any], batch_size: int):
        super().__init__()
        self.arrays = arrays
        self.batch_size = batch_size
        self.count = _num_records(arrays[0])

    def __len__(self) -> int:
        return math.ceil(self.count / self.batch_size)

    def __getitem__(self, index: int) -> Any:
        lo = index * self.batch_size
        hi = lo + self.batch_size
        return tuple(_slice(a, lo, hi) for a in self.arrays)


def _num_records(data: Any) -> int:
    if isinstance(data, dict):
        data = next(iter(data.values()))
    elif isinstance(data, (list, tuple)):
        data = data[0]
    return len(data)


def _slice(data: Any, lo: int, hi: int) -> Any:
    if data is None:
        return None
    if isinstance(data, dict):
        return {k: v[lo:hi] for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [v[lo:hi] for v in data]
    return data[lo:hi]


class _SequenceLoader(Loader):
    def __init__(self, sequence: Any, workers: int, use_multiprocessing: bool,
                 max_queue_size: int, rank: int, size: int, owner: str):
        self.sequence = sequence
        self.workers = workers
        self.use_multiprocessing = use_multiprocessing
        self.max_queue_size = max_queue_size
        self.rank, self.size = rank, size
        self.owner = owner
        self._open: List[Any] = []
        self.length = len(self._indices())

    def _indices(self) -> List[int]:
        try:
            n = len(self.sequence)
        except Exception as e:
            raise user_code_error(e, type(self.sequence), "__len__") from None
        return list(range(n))[self.rank::self.size]

    def epoch(self, start: int = 0) -> Iterator[Any]:
        indices = self._indices()[start:]
        self.length = len(self._indices())
        if self.workers == 0:
            return self._main_thread(indices)
        gen = _prefetch(self.sequence, indices, self.workers, self.use_multiprocessing,
                        self.max_queue_size)
        self._open = [g for g in self._open if g.gi_frame is not None] + [gen]
        return gen

    def _main_thread(self, indices: List[int]) -> Iterator[Any]:
        for i in indices:
            try:
                batch = self.sequence[i]
            except Exception as e:
                raise user_code_error(e, type(self.sequence), "__getitem__") from None
            yield batch

    def end_epoch(self) -> None:
        try:
            self.sequence.on_epoch_end()
        except Exception as e:
            raise user_code_error(e, type(self.sequence), "on_epoch_end") from None

    def close(self) -> None:
        for gen in self._open:
            gen.close()
        self._open.clear()


_WORKER_SEQUENCE: Any = None


def _init_worker(sequence: Any) -> None:
    global _WORKER_SEQUENCE
    _WORKER_SEQUENCE = sequence


def _worker_get(index: int) -> Any:
    return _WORKER_SEQUENCE[index]


def _prefetch(sequence: Any, indices: List[int], workers: int, processes: bool,
              max_queue_size: int) -> Iterator[Any]:
    """Yield ``sequence[i]`` for ``indices`` in order, fetching up to ``max_queue_size`` ahead.

    A new pool serves each epoch so forked workers see the Sequence as updated by
    ``on_epoch_end``.
    """
    pending: Deque[Any] = collections.deque()
    if processes:
        pool = multiprocessing.get_context("fork").Pool(
            workers, initializer=_init_worker, initargs=(sequence,)
        )
        submit: Callable[[int], Any] = lambda i: pool.apply_async(_worker_get, (i,))
        result: Callable[[Any], Any] = lambda f: f.get()
    else:
        executor = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="det-sequence")
        submit = lambda i: executor.submit(sequence.__getitem__, i)
        result = lambda f: f.result()
    todo = iter(indices)
    try:
        for i in todo:
            pending.append(submit(i))
            if len(pending) >= max_queue_size:
                break
        while pending:
            future = pending.popleft()
            for i in todo:
                pending.append(submit(i))
                break
            try:
                batch = result(future)
            except Exception as e:
                raise user_code_error(e, type(sequence), "__getitem__") from None
            yield batch
    finally:
        if processes:
            pool.terminate()
            pool.join()
        else:
            for f in pending:
                f.cancel()
            executor.shutdown(wait=True)


class _DatasetLoader(Loader):
    """A ``tf.data.Dataset``: one pass per epoch; restarts its epoch after a restore."""

    resumable = False

    def __init__(self, dataset: Any):
        self.dataset = dataset
        count = tf.get_static_value(dataset.cardinality()) if tf.executing_eagerly() else None
        self.length = int(count) if count is not None and count >= 0 else None
        self._graph_iter: Any = None

    def epoch(self, start: int = 0) -> Iterator[Any]:
        if tf.executing_eagerly():
            return iter(self.dataset)
        return self._graph_epoch()

    def _graph_epoch(self) -> Iterator[Any]:
        session = tf.compat.v1.keras.backend.get_session()
        if self._graph_iter is None:
            with session.graph.as_default():
                self._graph_iter = tf.compat.v1.data.make_initializable_iterator(self.dataset)
                self._graph_next = self._graph_iter.get_next()
        session.run(self._graph_iter.initializer)
        while True:
            try:
                yield session.run(self._graph_next)
            except tf.errors.OutOfRangeError:
                return


class _GeneratorLoader(Loader):
    """A Python generator: one endless epoch, or epochs of ``steps`` batches."""

    resumable = False

    def __init__(self, generator: Any, steps: Optional[int] = None):
        self.generator = generator
        self.length = steps
        self.endless = steps is None

    def epoch(self, start: int = 0) -> Iterator[Any]:
        n = 0
        while self.length is None or n < self.length:
            try:
                batch = next(self.generator)
            except StopIteration:
                return
            n += 1
            yield batch


# ---------------------------------------------------------------------- factory

_ACCEPTED = (
    "(x, y) or (x, y, sample_weights) arrays, a tf.data.Dataset, a tf.keras.utils.Sequence "
    "or a det.keras.SequenceAdapter"
)


def make_loader(
    data: Any,
    where: str,
    batch_size: int,
    rank: int = 0,
    size: int = 1,
    steps: Optional[int] = None,
) -> Loader:
    """Turn a value returned by ``build_*_data_loader`` into a :class:`Loader`.

    Args:
        data: the returned value.
        where: ``'<file>: <Class>.<method>'`` for error messages.
        batch_size: the per-slot batch size used to split arrays.
        steps: batches per epoch for generators (Native API).
    """
    if isinstance(data, SequenceAdapter):
        if isinstance(data.sequence, tf.keras.utils.Sequence):
            return _SequenceLoader(data.sequence, data.workers, data.use_multiprocessing,
                                   data.max_queue_size, rank, size, where)
        return _GeneratorLoader(data.sequence, getattr(data, "_steps", None) or steps)
    if isinstance(data, tf.keras.utils.Sequence):
        return _SequenceLoader(data, 0, False, 1, rank, size, where)
    if isinstance(data, tf.data.Dataset):
        return _DatasetLoader(data)
    if isinstance(data, tuple):
        if len(data) not in (2, 3):
            raise InvalidTrialError(
                f"{where} must return {_ACCEPTED}. Received: a tuple of {len(data)} elements"
            )
        arrays = [_as_array_like(a, where, i) for i, a in enumerate(data)]
        counts = {_num_records(a) for a in arrays if a is not None}
        if len(counts) != 1:
            raise InvalidTrialError(
                f"{where} returned arrays with different numbers of records: {sorted(counts)}"
            )
        if counts == {0}:
            raise InvalidTrialError(f"{where} returned empty arrays")
        return _SequenceLoader(_ArraySequence(arrays, batch_size), 0, False, 1, rank, size, where)
    if _is_generator(data):
        return _GeneratorLoader(data, steps)
    raise InvalidTrialError(f"{where} must return {_ACCEPTED}. Received: {type(data).__name__}")


def _as_array_like(value: Any, where: str, position: int) -> Any:
    """An array, a list of arrays (several inputs/outputs) or a dict of arrays (named inputs)."""
    if value is None and position == 2:
        return None
    if isinstance(value, dict) and value:
        return {k: _as_array_like(v, where, position) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and value and all(
        isinstance(v, np.ndarray) or hasattr(v, "numpy") for v in value
    ):
        return [np.asarray(v) for v in value]
    try:
        array = np.asarray(value)
    except Exception:
        array = None
    if array is None or array.ndim == 0 or array.dtype == object:
        raise InvalidTrialError(
            f"{where} returned a tuple whose element {position} is not an array, a list of "
            f"arrays or a dict of arrays. Received: {type(value).__name__}"
        )
    return array



# ---------------------------------------------------------------------- upstream 0.13 names

#: Arrays a loader may return: one array, a list of arrays (several inputs or outputs) or a
#: dict of arrays by input name.
ArrayLike = Union[np.ndarray, List[np.ndarray], Dict[str, np.ndarray]]
#: What ``build_training_data_loader``/``build_validation_data_loader`` may return.
InputData = Union[tf.keras.utils.Sequence, tf.data.Dataset, SequenceAdapter, tuple]


class _ArrayLikeAdapter(tf.keras.utils.Sequence):
    """Batches of ``batch_size`` records of ``(x, y[, sample_weights])`` arrays, in order;
    ``drop_leftovers`` leaves out a last, smaller batch."""

    def __init__(self, x: ArrayLike, y: ArrayLike, batch_size: int,
                 sample_weights: Optional[np.ndarray] = None, drop_leftovers: bool = False):
        super().__init__()
        if batch_size is None or batch_size < 1:
            raise ValueError(f"Expected batch_size >= 1. Received: batch_size={batch_size!r}")
        arrays = [x, y] + ([sample_weights] if sample_weights is not None else [])
        counts = {_num_records(a) for a in arrays}
        if len(counts) != 1:
            raise ValueError(f"x, y and sample_weights hold different numbers of records: "
                             f"{sorted(counts)}")
        self._inner = _ArraySequence(arrays, batch_size)
        self.drop_leftovers = drop_leftovers

    def __len__(self) -> int:
        if self.drop_leftovers:
            return self._inner.count // self._inner.batch_size
        return len(self._inner)

    def __getitem__(self, index: int) -> Any:
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of {len(self)}")
        return self._inner[index]


class _SequenceWithOffset(tf.keras.utils.Sequence):
    """``sequence`` read from batch ``batch_offset`` on (wrapping around at its end)."""

    def __init__(self, sequence: tf.keras.utils.Sequence, batch_offset: int = 0):
        super().__init__()
        self.sequence = sequence
        self.batch_offset = batch_offset

    def __len__(self) -> int:
        return len(self.sequence)

    def __getitem__(self, index: int) -> Any:
        return self.sequence[(index + self.batch_offset) % len(self.sequence)]

    def on_epoch_end(self) -> None:
        self.sequence.on_epoch_end()


def _get_x_y_and_sample_weight(input_data: Any) -> Any:
    """``(x, y, sample_weight)`` of a loader's return value (``None`` where absent)."""
    if isinstance(input_data, (tf.keras.utils.Sequence, tf.data.Dataset, SequenceAdapter)):
        return input_data, None, None
    if isinstance(input_data, tuple) and len(input_data) in (2, 3):
        x, y = input_data[0], input_data[1]
        return x, y, input_data[2] if len(input_data) == 3 else None
    raise InvalidTrialError(f"Expected {_ACCEPTED}. Received: {type(input_data).__name__}")


def _adapt_keras_data(
    x: Any,
    y: Any = None,
    sample_weight: Any = None,
    batch_size: Optional[int] = None,
    use_multiprocessing: bool = False,
    workers: int = 1,
    max_queue_size: int = 10,
    drop_leftovers: bool = False,
) -> Any:
    """Keras ``fit`` inputs as the platform loads them: a ``tf.data.Dataset`` as is, a
    ``SequenceAdapter`` as is, a ``Sequence`` or arrays in a :class:`SequenceAdapter`."""
    if isinstance(x, (tf.data.Dataset, SequenceAdapter)):
        return x
    if isinstance(x, tf.keras.utils.Sequence):
        return SequenceAdapter(x, use_multiprocessing, workers, max_queue_size)
    if y is None:
        raise InvalidTrialError("Expected y (targets) with array inputs x")
    if batch_size is None:
        raise InvalidTrialError("Expected a batch_size with array inputs x")
    adapter = _ArrayLikeAdapter(x, y, batch_size, sample_weight, drop_leftovers)
    return SequenceAdapter(adapter, use_multiprocessing, workers, max_queue_size)
