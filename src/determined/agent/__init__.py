"""Running trial processes on a machine: what an agent does with its slots.

:class:`Spawner` starts trial processes by forking them from a *zygote*: one
process that has imported the platform and PyTorch once. A fork costs
milliseconds, so a slot freed by one trial is running the next within a few
milliseconds rather than an interpreter start and a framework import later, and
every trial still gets a fresh process of its own (its own session and process
group, clean state).
"""

from determined.agent._spawner import Spawner, SpawnError

__all__ = ["Spawner", "SpawnError"]
