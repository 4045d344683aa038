"""Experiment contexts (model definitions) on the master: the quotas on their stored
size (:func:`check_context_quota`) and their unpacked copies under the data directory
(:class:`ModelDirs`)."""

from __future__ import annotations

import compileall
import contextlib
import os
import shutil
import tempfile
from typing import Any, Iterator

from determined.common.api import unpack_context

__all__ = ["ContextQuotaError", "ModelDirs", "check_context_quota"]

_STAGING_PREFIX = ".incoming-"


class ContextQuotaError(Exception):
    """Storing a context would exceed a context quota; ``limit`` names its config key."""

    def __init__(self, message: str, limit: str):
        super().__init__(message)
        self.limit = limit


def check_context_quota(store: Any, limits: Any, owner: str, context_bytes: int) -> None:
    """ContextQuotaError if storing a context of ``context_bytes`` (unpacked) would put
    ``owner``'s or the master's stored contexts over their ``limits`` (the master
    config's ``limits``)."""
    mine, total = store.context_bytes_used(owner)
    for used, limit, key, whose in (
            (mine, limits.max_context_bytes_per_user, "max_context_bytes_per_user",
             f"user {owner!r}'s experiments"),
            (total, limits.max_context_bytes_total, "max_context_bytes_total",
             "all experiments")):
        if used + context_bytes > limit:
            raise ContextQuotaError(
                f"Storing this context ({context_bytes / 2**20:.1f} MiB unpacked) would "
                f"put the contexts of {whose} at {(used + context_bytes) / 2**20:.1f} "
                f"MiB, over the master's limits.{key} of {limit / 2**20:.1f} MiB; "
                "delete finished experiments (`det e delete`) to make room",
                f"limits.{key}")


class ModelDirs:
    """Unpacked contexts: ``<data_dir>/experiments/<id>/model_def``, byte-compiled once
    here rather than in every trial process."""

    def __init__(self, data_dir: str):
        self.root = os.path.join(data_dir, "experiments")

    def path(self, experiment_id: int) -> str:
        return os.path.join(self.root, str(experiment_id), "model_def")

    @staticmethod
    def _unpack(packed: bytes, dest: str) -> None:
        unpack_context(packed, dest)
        compileall.compile_dir(dest, quiet=2, workers=1)

    @contextlib.contextmanager
    def staged(self, packed: bytes) -> Iterator[str]:
        """A context unpacked into a staging directory (a big one takes long: done
        before the experiment has an id), for :meth:`place`; removed if not placed."""
        os.makedirs(self.root, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=_STAGING_PREFIX, dir=self.root)
        try:
            self._unpack(packed, os.path.join(staging, "model_def"))
            yield staging
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def place(self, staging: str, experiment_id: int) -> str:
        """Move a staged context into place; its path."""
        path = self.path(experiment_id)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)  # a stale one
        os.rename(staging, os.path.dirname(path))
        return path

    def ensure(self, store: Any, experiment_id: int) -> str:
        """The experiment's unpacked context, unpacked from the store if missing."""
        path = self.path(experiment_id)
        if not os.path.isdir(path):
            self._unpack(store.get_model_def(experiment_id), path)
        return path

    def remove_unfinished(self) -> None:
        """Remove the staging directories of creations a stopped master did not finish."""
        for name in os.listdir(self.root) if os.path.isdir(self.root) else []:
            if name.startswith(_STAGING_PREFIX):
                shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)
