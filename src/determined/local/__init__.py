"""Local experiments: the whole search on this machine, no master (``--local``)."""

from determined.local._client import LocalClient
from determined.local._driver import LocalDriver
from determined.local._result import ExperimentResult
from determined.local._resume import resume_local_experiment
from determined.local._run import prepare_config, run_local_experiment, run_test_mode
from determined.local._store import LocalStore, default_local_dir, open_store

__all__ = [
    "ExperimentResult",
    "LocalClient",
    "LocalDriver",
    "LocalStore",
    "default_local_dir",
    "open_store",
    "prepare_config",
    "resume_local_experiment",
    "run_local_experiment",
    "run_test_mode",
]
