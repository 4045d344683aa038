"""The contract every resource manager keeps: the embedded agent, remote agents, a Ray
cluster, and the composite the master holds over them.

A manager offers *agents* (an id and its slots) to the scheduler, starts a trial's
processes on the slots the scheduler picked (:meth:`ResourceManager.launch`), kills
them, and reports each trial's end exactly once through the ``on_exit(trial_id, code)``
callback it was built with -- after the trial's output reached ``log_sink``. Trials
whose agent is lost end with :data:`LOST_EXIT_CODE`. Callbacks into the master are
made without the manager's own lock; the master may call any method with its lock held,
so none blocks on a trial's processes.

Tasks (commands, notebooks, shells, TensorBoards) go to an agent through
:meth:`ResourceManager.launch_task` where :meth:`ResourceManager.runs_tasks` says so; the
embedded agent's tasks are the task manager's own processes.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from determined.master import scheduler

__all__ = ["ExitCallback", "LOST_EXIT_CODE", "LogSink", "Part", "ResourceManager",
           "TrialLaunch"]

#: The exit code a trial of a lost agent or node is reported with (as if SIGKILLed).
LOST_EXIT_CODE = -9

#: ``(trial_id, exit_code)``; negative codes are signals.
ExitCallback = Callable[[int, int], None]
#: ``(trial_id, lines)``: stores a trial's output.
LogSink = Callable[[int, List[str]], None]
#: ``(agent_id, slot_ids)``: the slots of a trial on one agent.
Part = Tuple[str, Tuple[int, ...]]


@dataclasses.dataclass(frozen=True)
class TrialLaunch:
    """One start of a trial's processes.

    Args:
        trial_id, experiment_id: whose processes.
        parts: ``(agent_id, slot_ids)`` per agent, rank 0's first (more than one only
            where :meth:`ResourceManager.can_span` allowed it).
        env: ``DET_MASTER``, ``DET_TRIAL_TOKEN`` and ``DET_TRIAL_SPEC`` (a file on the
            master's machine holding ``spec``).
        spec: the trial spec (``env``, ``storage``, ``threads``); agents on other machines
            get it itself and point its ``model_dir`` at their copy of the model definition.
        model_dir: the model definition on the master's machine (the embedded agent's
            working directory).
    """

    trial_id: int
    experiment_id: int
    parts: Tuple[Part, ...]
    env: Dict[str, str]
    spec: Dict[str, Any]
    model_dir: str

    def __post_init__(self) -> None:
        if not self.parts:
            raise ValueError(f"Expected at least one (agent_id, slot_ids) part for trial "
                             f"{self.trial_id}. Received: parts={self.parts!r}")

    @property
    def agent_id(self) -> str:
        """The agent of rank 0."""
        return self.parts[0][0]

    @property
    def slot_ids(self) -> Tuple[int, ...]:
        """Rank 0's agent's slots."""
        return self.parts[0][1]

    @property
    def spans(self) -> bool:
        return len(self.parts) > 1


class ResourceManager(Protocol):
    """Agents and the trial processes on them (see the module docstring)."""

    @property
    def slots(self) -> int:
        """Slots of every live agent that takes new trials."""

    def agents(self) -> List[scheduler.Agent]:
        """Live agents, for the scheduler."""

    def has_agent(self, agent_id: str) -> bool:
        """Whether ``agent_id`` is one of this manager's live agents."""

    def can_span(self, parts: Sequence[Part]) -> bool:
        """Whether one trial may run across these parts (ranks rendezvous at rank 0's)."""

    def launch(self, launch: TrialLaunch) -> Optional[int]:
        """Start the trial's processes (possibly in the background); the pid where rank 0
        is a process of the master's machine (for orphan clean-up), else None. Raises
        when an agent is gone."""

    def holds(self, trial_id: int) -> bool:
        """Whether the trial runs here (or is about to)."""

    def kill(self, trial_id: int) -> None:
        """SIGKILL the trial's processes; its end is reported through ``on_exit``."""

    def runs_tasks(self, agent_id: str) -> bool:
        """Whether tasks placed on ``agent_id`` go through :meth:`launch_task`."""

    def launch_task(self, agent_id: str, task_id: str, command: Dict[str, Any]) -> str:
        """Start a task on ``agent_id`` (see ``determined.tasks._launch.task_from_command``);
        returns a launch id."""

    def holds_task(self, task_id: str) -> bool:
        """Whether a task :meth:`launch_task` started runs here."""

    def kill_task(self, task_id: str) -> None:
        """Stop the task (SIGTERM, then SIGKILL); its end is reported as usual."""

    def close(self) -> None:
        """Kill or abandon every process; no callback follows."""
