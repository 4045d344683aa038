"""The trial runner: workloads, periods, metric averaging, resume, user-code loading.

Framework-free: frameworks plug in through :class:`TrialController`, drivers
through :class:`TrialHost`.
"""

from determined.harness._context import DistributedContext, TrialContext
from determined.harness._controller import TrialController
from determined.harness._env import DistributedInfo, TrialEnv
from determined.harness._frameworks import controller_for
from determined.harness._host import OpKind, TrialHost, TrialOp
from determined.harness._inprocess import InProcessHost, train_validate_plan
from determined.harness._runner import ExitReason, TrialRunner
from determined.harness._sequencer import Next, Sequencer
from determined.harness._usercode import (
    check_trial_class,
    describe_class,
    load_trial_class,
    user_code_error,
)
from determined.harness._workload import Kind, Workload

__all__ = [
    "DistributedContext",
    "DistributedInfo",
    "ExitReason",
    "InProcessHost",
    "Kind",
    "Next",
    "OpKind",
    "Sequencer",
    "TrialContext",
    "TrialController",
    "TrialEnv",
    "TrialHost",
    "TrialOp",
    "TrialRunner",
    "Workload",
    "check_trial_class",
    "controller_for",
    "describe_class",
    "load_trial_class",
    "train_validate_plan",
    "user_code_error",
]
