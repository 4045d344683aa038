"""The exception tree of the platform.

::

    DeterminedError
    ├── InvalidConfigError        an experiment config failed validation
    ├── InvalidModelDefError      the model directory or entrypoint is unusable
    ├── InvalidTrialError         user trial code broke the API contract
    │   └── UserCodeError         user code raised; carries the user's traceback
    ├── CheckpointError           a checkpoint is missing, partial or unreadable
    ├── StorageError              checkpoint storage is misconfigured or unreachable
    ├── SearcherError             the search cannot go on (determined.searcher)
    ├── MasterError               the master refused a request or cannot be reached
    └── ReportError               a script's report sent without an answer was rejected
"""

from typing import List, Sequence, Tuple

from determined.common.wording import counted

__all__ = [
    "DeterminedError",
    "InvalidConfigError",
    "InvalidModelDefError",
    "InvalidTrialError",
    "UserCodeError",
    "CheckpointError",
    "StorageError",
    "MasterError",
    "InternalException",
    "InvalidExperimentException",
    "InvalidDataTypeException",
    "InvalidConfigurationException",
    "StopLoadingImplementation",
    "WorkerError",
    "WorkerFinishedGracefully",
    "SkipWorkloadException",
    "InvalidHP",
    "ReportError",
]


class DeterminedError(Exception):
    """Base class of every error the platform raises on purpose."""


class InvalidConfigError(DeterminedError):
    """An experiment config is invalid; ``errors`` lists ``(field path, message)``."""

    def __init__(self, errors: Sequence[Tuple[str, str]], source: str = "experiment config"):
        self.errors: List[Tuple[str, str]] = list(errors)
        # A whole-file error (unreadable, not YAML, not a mapping) names no field.
        lines = "\n".join(f"  - {path}: {msg}" if path else f"  - {msg}"
                          for path, msg in self.errors)
        super().__init__(f"Invalid {source} ({counted(len(self.errors), 'error')}):\n{lines}")


class InvalidModelDefError(DeterminedError):
    """The model definition directory or the entrypoint cannot be used."""


class InvalidTrialError(DeterminedError):
    """User trial code does not follow the API (missing method, bad return value, ...)."""


class UserCodeError(InvalidTrialError):
    """User code raised an exception; the message names where, plus the user traceback."""

    def __init__(self, message: str, user_traceback: str = ""):
        self.user_traceback = user_traceback
        text = message if not user_traceback else f"{message}\n{user_traceback.rstrip()}"
        super().__init__(text)


class CheckpointError(DeterminedError):
    """A checkpoint is missing, incomplete or cannot be loaded."""


class StorageError(DeterminedError):
    """Checkpoint storage is misconfigured or not available."""


class MasterError(DeterminedError):
    """The master rejected a request or could not be reached."""


class ReportError(DeterminedError):
    """A report sent without waiting for an answer (training metrics, progress) was
    rejected by the trial's host; raised at the script's next call that waits."""


# ---- upstream 0.13 names, for trial code that raises or catches them --------------------


class InternalException(Exception):
    """An error inside the platform (upstream 0.13 name)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidExperimentException(BaseException):
    """The experiment cannot run (upstream 0.13 name; a ``BaseException`` as upstream)."""


class InvalidDataTypeException(InvalidExperimentException):
    """A data loader returned an unsupported type."""

    def __init__(self, type: type, message: str):  # noqa: A002 - upstream parameter name
        super().__init__(f"Invalid data type ({getattr(type, '__name__', type)}): {message}")
        self.type = type


class InvalidConfigurationException(InvalidExperimentException):
    """The experiment config is unusable for this trial."""

    def __init__(self, config: dict, message: str):
        super().__init__(f"Invalid experiment configuration: {message}")
        self.config = config


class StopLoadingImplementation(Exception):
    """Raised to stop loading user code (upstream's Native API)."""


class WorkerError(Exception):
    """A worker process of a distributed trial failed."""


class WorkerFinishedGracefully(Exception):
    """A worker process exited cleanly."""


class SkipWorkloadException(Exception):
    """A workload was skipped (not the chief)."""


class InvalidHP(Exception):
    """Raised by a Core API script for a hyperparameter set it cannot train with: the
    trial ends early (exit 0) and the searcher is told (0.38's ``det.InvalidHP``)."""
