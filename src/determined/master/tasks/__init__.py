"""Tasks: commands, notebooks, shells and TensorBoards scheduled next to trials."""

from determined.master.tasks._manager import PREFIX, LiveTask, TaskManager
from determined.master.tasks._spec import (
    KINDS,
    SERVICE_KINDS,
    default_description,
    validate_task_config,
)

__all__ = ["KINDS", "PREFIX", "LiveTask", "SERVICE_KINDS", "TaskManager", "default_description",
           "validate_task_config"]
