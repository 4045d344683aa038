"""Request bodies of the REST API (validated by FastAPI; errors become 400s)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

import pydantic

from determined.common.int64 import INT64_MAX
from determined.config import check_labels
from determined.engine import check_checkpoint_id

__all__ = ["CreateExperiment", "Report", "ValidationReport", "CheckpointReport", "EarlyExit",
           "LogBatch"]


class _Body(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class CreateExperiment(_Body):
    config: Union[str, Dict[str, Any]] = pydantic.Field(
        description="the experiment config, as YAML text or an object")
    model_def: str = pydantic.Field(description="base64 of a tar.gz of the context directory")
    activate: bool = True
    git: Optional["GitInfo"] = pydantic.Field(
        default=None, description="where the model definition came from (`det e create --git`)")
    parent_id: Optional[int] = pydantic.Field(
        default=None, ge=1, le=INT64_MAX,
        description="the experiment this one is forked from: its credentials fill the "
                    "config's masked ones (`***`, as the API shows them) for its owner")


class GitInfo(_Body):
    """The model definition's git repository, as ``det e create --git`` records it."""

    git_remote: str = pydantic.Field(max_length=1024)
    git_commit: str = pydantic.Field(min_length=1, max_length=1024)
    git_committer: str = pydantic.Field(max_length=1024)
    git_commit_date: str = pydantic.Field(max_length=1024)


CreateExperiment.model_rebuild()


class Report(_Body):
    batches: int = pydantic.Field(ge=0, le=INT64_MAX)
    metrics: Dict[str, Any]


class ValidationReport(Report):
    """A validation; ``completes_op``: it also completes the trial's Validate operation
    (as ``validate-op-completed`` would, with these metrics); ``next_op`` (with
    ``completes_op``): answer the trial's next operation too, as ``next-op`` would,
    or null when the searcher has none yet."""

    completes_op: bool = False
    next_op: bool = False


class ReportBatch(_Body):
    """Training reports of one trial, oldest first."""

    reports: List[Report] = pydantic.Field(min_length=1, max_length=10000)


class CheckpointReport(_Body):
    batches: int = pydantic.Field(ge=0, le=INT64_MAX)
    uuid: str = pydantic.Field(min_length=1)
    metadata: Dict[str, Any] = {}

    @pydantic.field_validator("uuid")
    @classmethod
    def _canonical_uuid(cls, uuid: str) -> str:
        """A malformed id is a bad request (400), not a conflict with the trial's state."""
        return check_checkpoint_id(uuid)


class EarlyExit(_Body):
    reason: str


class ScriptProgress(_Body):
    """A script trial's progress, in the searcher's length unit."""

    units: float = pydantic.Field(ge=0, allow_inf_nan=False)


class ScriptExited(_Body):
    """A script trial's command ended (negative ``code``: killed by that signal)."""

    code: int = pydantic.Field(ge=-255, le=255)


class LogBatch(_Body):
    lines: List[str]


class Patch(_Body):
    description: Optional[str] = None
    labels: Optional[List[str]] = None
    weight: Optional[float] = pydantic.Field(default=None, gt=0, allow_inf_nan=False)
    priority: Optional[int] = pydantic.Field(default=None, ge=1, le=99)
    max_slots: Optional[int] = pydantic.Field(default=None, ge=1, le=INT64_MAX)

    @pydantic.field_validator("labels")
    @classmethod
    def _non_empty_labels(cls, labels: Optional[List[str]]) -> Optional[List[str]]:
        return None if labels is None else check_labels(labels)
