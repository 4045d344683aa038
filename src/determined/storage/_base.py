"""The checkpoint storage contract every backend keeps.

A checkpoint is a directory named by a UUID. ``store_path`` hands out a private
scratch directory and publishes it under its UUID only after the block exits
without error, in one atomic step: a reader never sees a half-written checkpoint,
and a crash mid-write leaves at most scratch files that ``list_checkpoints`` does
not report. ``restore_path`` yields a local directory with the checkpoint's files.
Backends are safe to use from several processes at once.
"""

from __future__ import annotations

import abc
import contextlib
from typing import Iterator, List

__all__ = ["StorageManager"]


class StorageManager(abc.ABC):
    @abc.abstractmethod
    @contextlib.contextmanager
    def store_path(self, uuid: str) -> Iterator[str]:
        """Yield a directory to write checkpoint ``uuid`` into; publish it on success."""

    @abc.abstractmethod
    @contextlib.contextmanager
    def restore_path(self, uuid: str) -> Iterator[str]:
        """Yield a local directory holding checkpoint ``uuid``'s files."""

    @abc.abstractmethod
    def delete(self, uuid: str) -> None:
        """Remove checkpoint ``uuid``'s files (no error if already gone)."""

    @abc.abstractmethod
    def list_checkpoints(self) -> List[str]:
        """UUIDs of the complete checkpoints in storage."""

    @abc.abstractmethod
    def describe(self, uuid: str) -> str:
        """Where checkpoint ``uuid`` lives, for people (a path or URL)."""
