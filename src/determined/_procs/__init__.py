"""Starting and watching processes on one machine: the leaf shared by whatever runs
trials and tasks (the remote agent, the master's embedded resource manager, Ray's
node-side actors, local runs).

- :class:`Spawner` forks trial processes from a *zygote* (``_zygote``): one process
  that has imported the platform and PyTorch once, so a freed slot runs the next
  trial within milliseconds, each in a fresh process (own session and group).
- ``_gpus``: the machine's GPUs and how slots lie over them; ``_gpu_metrics``: their
  periodic readings.
- :func:`read_line_batches`: a process's output, shipped in batches of lines, until
  the process exited (not only until the end of its output).
- :class:`ExitCodes`: exit codes by pid; :func:`follow_spawned`: a spawned process's
  output until it exited, then :func:`kill_leftovers` (what it left in its group).
- :func:`die_with_parent`: a child that must not outlive the process that started it.

It imports nothing of the master or the agent.
"""

from determined._procs._exits import ExitCodes, follow_spawned, kill_leftovers
from determined._procs._lines import read_line_batches
from determined._procs._parent import die_with_parent, set_parent_death_signal
from determined._procs._spawner import Spawner, SpawnError

__all__ = ["ExitCodes", "Spawner", "SpawnError", "die_with_parent", "follow_spawned",
           "kill_leftovers", "read_line_batches", "set_parent_death_signal"]
