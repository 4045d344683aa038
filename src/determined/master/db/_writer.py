"""Group commit for high-rate rows (metrics, trial and task logs).

Callers hand rows to one writer thread and block until they are committed. The
thread takes every job queued meanwhile and writes them in a single transaction, so
50 reporters cost one commit per round instead of 50. If that transaction fails,
each job is retried in its own transaction, so one bad job (say, an unknown trial)
fails alone.

These are the tables live tails follow by id, and this writer is their only one: its
transactions run one at a time and each holds ``Engines.order_commits`` (also against
other processes), so their rows become visible in id order.
"""

import concurrent.futures
import logging
import queue
import threading
from typing import Any, Callable, Dict, List

import sqlalchemy as sa

from determined.master.db._engine import Engines
from determined.master.db._errors import StoreError

__all__ = ["GroupCommitWriter", "Job"]

logger = logging.getLogger(__name__)

# A handler gets the open connection and the rows of every queued job of its kind (a
# list per job) and returns one result per job.
Handler = Callable[[sa.Connection, List[List[Any]]], List[Any]]


class Job:
    __slots__ = ("kind", "rows", "future")

    def __init__(self, kind: str, rows: List[Any]):
        self.kind = kind
        self.rows = rows
        self.future: "concurrent.futures.Future[Any]" = concurrent.futures.Future()


_STOP = object()


class GroupCommitWriter:
    """One daemon thread committing queued jobs in groups of up to ``max_rows`` rows."""

    def __init__(
        self,
        engines: Engines,
        handlers: Dict[str, Handler],
        error_translator: Callable[[sa.Connection, str, List[Any], Exception], Exception],
        max_rows: int = 5000,
    ):
        self._engines = engines
        self._handlers = handlers
        self._translate = error_translator
        self._max_rows = max_rows
        self._queue: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="det-db-writer", daemon=True)
        self._thread.start()

    def submit(self, kind: str, rows: List[Any]) -> Any:
        """Queue ``rows`` and wait until they are committed; returns the handler's result."""
        job = Job(kind, rows)
        with self._close_lock:
            if self._closed:
                raise StoreError("The store is closed")
            self._queue.put(job)
        return job.future.result()

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        self._thread.join()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch = [first]
            n_rows = len(first.rows)
            stop = False
            while n_rows < self._max_rows:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is _STOP:
                    stop = True
                    break
                batch.append(job)
                n_rows += len(job.rows)
            try:
                self._commit(batch)
            except BaseException as exc:  # noqa: BLE001 - never leave a caller waiting
                logger.exception("group commit failed")
                for job in batch:
                    if not job.future.done():
                        job.future.set_exception(
                            StoreError(f"Could not store {job.kind} rows: {exc}")
                        )
            if stop:
                return

    def _commit(self, batch: List[Job]) -> None:
        by_kind: Dict[str, List[Job]] = {}
        for job in batch:
            by_kind.setdefault(job.kind, []).append(job)
        try:
            results: Dict[int, Any] = {}
            with self._engines.write_lock, self._engines.write.begin() as conn:
                self._engines.order_commits(conn)
                for kind, jobs in by_kind.items():
                    kind_results = self._handlers[kind](conn, [j.rows for j in jobs])
                    for job, result in zip(jobs, kind_results):
                        results[id(job)] = result
        except Exception:  # noqa: BLE001 - retried job by job below
            for job in batch:
                self._commit_alone(job)
            return
        for job in batch:
            job.future.set_result(results[id(job)])

    def _commit_alone(self, job: Job) -> None:
        try:
            with self._engines.write_lock, self._engines.write.begin() as conn:
                self._engines.order_commits(conn)
                (result,) = self._handlers[job.kind](conn, [job.rows])
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            job.future.set_exception(self._explain(job, exc))
        else:
            job.future.set_result(result)

    def _explain(self, job: Job, exc: Exception) -> Exception:
        try:
            with self._engines.read.connect() as conn:
                return self._translate(conn, job.kind, job.rows, exc)
        except Exception:  # noqa: BLE001 - keep the original error
            logger.exception("could not explain a failed %s write", job.kind)
            return exc
