"""The :class:`Store`: the only way the master touches its database."""

from determined.master.db._checkpoints import CheckpointsMixin
from determined.master.db._cluster import ClusterMixin
from determined.master.db._experiments import ExperimentsMixin
from determined.master.db._gpu_metrics import GpuMetricsMixin
from determined.master.db._metrics import MetricsMixin
from determined.master.db._registry import RegistryMixin
from determined.master.db._tasks import TasksMixin
from determined.master.db._trials import TrialsMixin
from determined.master.db._users import UsersMixin

__all__ = ["Store"]


class Store(
    ExperimentsMixin, TrialsMixin, MetricsMixin, CheckpointsMixin, ClusterMixin, UsersMixin,
    RegistryMixin, TasksMixin, GpuMetricsMixin,
):
    """The master's database: experiments, trials, metrics, checkpoints, logs, agents,
    users and tokens, on SQLite (embedded default) or PostgreSQL.

    Contract, kept identically by both backends (one test suite runs on each):

    - **Threads.** Every method is synchronous and safe to call from any number of
      threads at once; each call uses its own session and transaction.
    - **Visibility.** A write is committed when its method returns: any later call,
      from any thread or process, sees it. Metrics and log writes (trials' and
      tasks') are group-committed (one writer thread commits every request queued
      meanwhile in one transaction) but still return only after their commit. There
      is nothing to flush.
    - **Order.** Metrics rows and trial and task log lines become visible in id order
      (only the group-commit writer inserts them, one transaction at a time, also
      against other processes: ``Engines.order_commits``), so a follower reading "the
      rows after id X" misses none. Metrics ids are never reused.
    - **Atomicity.** Each call is one transaction: it happens completely or not at
      all (``add_metrics_bulk`` included). Read-modify-write calls lock the row.
    - **Results.** Methods return the frozen records of ``_records.py`` (or ints,
      strs, bytes, dicts), never ORM objects; timestamps are aware UTC datetimes.
      JSON values (configs, hparams, metrics, snapshots, metadata) round-trip exactly,
      including NaN and +-Infinity floats.
    - **States.** Experiment, trial and checkpoint states change only along the
      SPEC 1.4 lifecycle (``_states.py``); an illegal change raises
      :class:`IllegalTransitionError` naming both states; repeating the current state
      is a no-op. Terminal experiment and trial states set ``end_time``.
    - **Idempotence.** Metrics are unique per (trial, kind, total_batches): reporting
      a workload again keeps the first row. :meth:`rollback_trial` forgets everything
      after a batch so a restarted trial can report again.
    - **Errors.** Bad arguments raise ``ValueError`` naming the argument and value,
      before any database access; a missing row raises :class:`NotFoundError`
      (``get_*``), or gives None where the docstring says so (``trial_by_request``,
      ``latest_checkpoint``, ``get_searcher_snapshot``, ``check_*_token``); a taken
      unique key raises :class:`ConflictError`.
    - **Schema.** :meth:`upgrade` must run once before use (the master calls it at
      every start; it is idempotent). :meth:`close` waits for queued writes.

    SQLite runs in WAL mode with ``synchronous=NORMAL``: a crash of the machine (not of
    the process) may lose the last commits, never corrupt the file. Writers in one
    process take turns (a lock) so they never wait on SQLite's file lock.

    Args:
        url: ``sqlite:///path/to/master.db`` (the parent directory is created) or
            ``postgresql+psycopg://user:password@host:port/dbname``.

    Example:
        >>> store = Store("sqlite:////var/lib/determined/master.db")
        >>> store.upgrade()
        '0001'
        >>> exp_id = store.create_experiment(config, model_def, owner="determined")
        >>> trial_id = store.create_trial(exp_id, "r1", {"lr": 0.1}, seed=42)
        >>> store.add_training_metrics(trial_id, 100, {"loss": 0.5})
        True
        >>> store.close()
    """
