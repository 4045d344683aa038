"""What the master keeps per remote agent: its session, queued commands and launches
(shared by the registry, :mod:`._remote`, and the spanning-trial logic, :mod:`._spanning`)."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, Dict, List, Tuple

__all__ = ["Launch", "RemoteAgent", "TaskLaunch"]


@dataclasses.dataclass
class Launch:
    id: str
    trial_id: int
    slot_ids: Tuple[int, ...]
    command: Dict[str, Any]
    delivered: bool = False


@dataclasses.dataclass
class TaskLaunch:
    id: str
    task_id: str
    delivered: bool = False


@dataclasses.dataclass
class RemoteAgent:
    id: str
    slots: int
    label: str
    session: str
    address: str
    last_seen: float
    registered_at: float
    commands: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    launches: Dict[str, Launch] = dataclasses.field(default_factory=dict)  # live ones
    wake: threading.Event = dataclasses.field(default_factory=threading.Event)
    draining: bool = False  # shutting down: gets no new trials
    task_launches: Dict[str, TaskLaunch] = dataclasses.field(default_factory=dict)
    #: The GPU of each slot (``{index, uuid, name, memory_total}``; [] without GPUs).
    slot_gpus: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
