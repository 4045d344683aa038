"""Datasets cached on disk by id and version (SPEC 4.9), shared by det.keras and det.estimator.

The first call of a decorated function materialises its (unbatched)
``tf.data.Dataset`` under ``<root>/<dataset_id>/<dataset_version>/``; every later
call, in this trial or any other, reads the cache instead. ``<root>`` is the
``data_layer`` storage path of the experiment config (``shared_fs``:
``container_storage_path`` or ``host_storage_path``; ``s3``/``gcs``: the local
cache path, since buckets are not reachable here) or, when unset,
``$DET_DATA_LAYER_DIR`` or ``~/.cache/determined/data_layer``.

Writes go to a scratch directory renamed into place, so concurrent trials never
read a half-written cache. The function runs in a fresh thread: its own eager
context even when the caller is building a graph (Estimator input functions).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import threading
import uuid
from typing import Any, Callable, Dict, Mapping

from determined.errors import InvalidTrialError

__all__ = ["DatasetCache", "cache_root"]

logger = logging.getLogger("determined")

_COMPLETE = "COMPLETE"
_SHUFFLE_BUFFER_CAP = 100_000


def cache_root(config: Mapping[str, Any]) -> str:
    """The directory datasets are cached under for this experiment config."""
    layer = config.get("data_layer") or {}
    kind = layer.get("type", "shared_fs")
    if kind == "shared_fs":
        path = layer.get("container_storage_path") or layer.get("host_storage_path")
    else:
        path = layer.get("local_cache_container_path") or layer.get("local_cache_host_path")
        logger.warning(
            "data_layer.type %s: caching datasets locally only (%s); buckets are not used here",
            kind, path or "default directory",
        )
    if not path:
        path = os.environ.get("DET_DATA_LAYER_DIR") or os.path.join(
            os.path.expanduser("~"), ".cache", "determined", "data_layer"
        )
    return os.path.abspath(path)


def _check_name(kind: str, value: Any) -> str:
    if not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\\" in value:
        raise ValueError(
            f"Expected {kind} to be a non-empty string without path separators. "
            f"Received: {kind}={value!r}"
        )
    return value


class DatasetCache:
    """The cache decorators of one trial.

    Args:
        config: the experiment config (for ``data_layer``).
        seed: the trial seed used for shuffling.
        rank, size: this process's shard of every cached dataset.
    """

    def __init__(self, config: Mapping[str, Any], seed: int, rank: int = 0, size: int = 1):
        self.root = cache_root(config)
        self.seed = seed
        self.rank = rank
        self.size = size
        self.used: Dict[str, bool] = {"train": False, "validation": False}

    def path(self, dataset_id: str, dataset_version: str) -> str:
        return os.path.join(
            self.root, _check_name("dataset_id", dataset_id),
            _check_name("dataset_version", dataset_version),
        )

    def decorator(
        self,
        role: str,
        dataset_id: str,
        dataset_version: str,
        shuffle: bool,
        reshuffle_each_epoch: bool,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        target = self.path(dataset_id, dataset_version)

        def decorate(make_dataset: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(make_dataset)
            def cached(*args: Any, **kwargs: Any) -> Any:
                import tensorflow as tf

                self.used[role] = True
                if not os.path.exists(os.path.join(target, _COMPLETE)):
                    self._materialise(make_dataset, args, kwargs, target)
                else:
                    logger.info("reading cached dataset %s", target)
                dataset = tf.data.Dataset.load(os.path.join(target, "data"))
                if self.size > 1:
                    dataset = dataset.shard(self.size, self.rank)
                if shuffle:
                    buffer = _buffer_size(dataset)
                    dataset = dataset.shuffle(
                        buffer, seed=self.seed, reshuffle_each_iteration=reshuffle_each_epoch
                    )
                return dataset

            return cached

        return decorate

    def _materialise(
        self, make_dataset: Callable[..., Any], args: Any, kwargs: Any, target: str
    ) -> None:
        parent = os.path.dirname(target)
        os.makedirs(parent, exist_ok=True)
        scratch = os.path.join(parent, f".partial-{os.path.basename(target)}-{uuid.uuid4().hex[:8]}")
        errors: list = []

        def work() -> None:
            try:
                _save(make_dataset, args, kwargs, os.path.join(scratch, "data"))
            except BaseException as e:  # re-raised in the calling thread
                errors.append(e)

        logger.info("caching dataset into %s", target)
        thread = threading.Thread(target=work, name="det-dataset-cache")
        thread.start()
        thread.join()
        try:
            if errors:
                raise errors[0]
            open(os.path.join(scratch, _COMPLETE), "w").close()
            try:
                os.rename(scratch, target)
            except OSError:
                if not os.path.exists(os.path.join(target, _COMPLETE)):
                    raise
                # another trial finished the same cache first; use theirs
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def _save(make_dataset: Callable[..., Any], args: Any, kwargs: Any, path: str) -> None:
    import tensorflow as tf

    def build() -> Any:
        dataset = make_dataset(*args, **kwargs)
        if not isinstance(dataset, tf.data.Dataset):
            raise InvalidTrialError(
                f"the function {getattr(make_dataset, '__qualname__', make_dataset)!r} decorated "
                f"with cache_train_dataset/cache_validation_dataset must return a "
                f"tf.data.Dataset. Received: {type(dataset).__name__}"
            )
        return dataset

    if tf.executing_eagerly():
        build().save(path)
        return
    with tf.Graph().as_default():
        op = build().save(path)
        if op is not None:
            with tf.compat.v1.Session() as session:
                session.run(op)


def _buffer_size(dataset: Any) -> int:
    import tensorflow as tf

    try:
        count = int(tf.get_static_value(dataset.cardinality()) or -1)
    except (TypeError, ValueError):
        count = -1
    if count <= 0:
        return 10_000
    return min(count, _SHUFFLE_BUFFER_CAP)
