"""Scratch directories of trial processes, named after the process that owns them.

A trial process (and what it starts: ranks, a script) makes scratch directories in the
temporary directory: ``det-core-`` (a machine's local socket), ``det-script-`` (a
script's cluster info), ``det-dist-`` (the ranks' spec), ``det-shard-<rank>-`` (a
rank's part of a sharded checkpoint), ``det-ckpt-`` and ``det-restore-`` (a checkpoint
on its way to or from object storage), ``det-estimator-`` and ``det-export-`` (an
Estimator's model directory and its SavedModel exports). Each removes its own on a clean exit; a process
killed with SIGKILL removes nothing. So each name carries the pid of the trial process
that owns it, ``det-<kind>-<owner pid>-<random>``, and whoever started the trial process
removes what it left once it exited (:func:`remove_owned`); a starter that starts
sweeps what owners that no longer exist left (:func:`sweep_dead_owners`), e.g. when
the starter itself was killed.

The working directories of trial processes (``harness._trial_setup``) are kept the same
way, in ``$DET_WORKDIR_ROOT`` (default ``<tmp>/det-workdirs``):
``exp<id>-trial<id>-pid<pid>``, and ``...-pid<pid>-of<owner>`` for a process the trial
process started (another rank). Each goes with its process's or its owner's end.

The owner is the pid in ``DET_SCRATCH_OWNER``, which the trial process sets to its own
pid when it starts (:func:`claim`) so that the processes it starts inherit it; a process
without it owns its directories itself.

Example::

    path = scratch.make("core")       # /tmp/det-core-4242-k3j2h1x0
    ...                               # the trial process 4242 is killed
    scratch.remove_owned(4242)        # in its starter, after it exited
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import List, Optional, Tuple

__all__ = ["OWNER_ENV", "WORKDIR_ROOT_ENV", "claim", "make", "owned", "owner", "remove_owned",
           "sweep_dead_owners", "workdir_path", "workdir_root"]

#: The environment variable naming the pid of the trial process that owns scratch
#: directories made by this process.
OWNER_ENV = "DET_SCRATCH_OWNER"
#: Where trial processes make their working directories (default ``<tmp>/det-workdirs``).
WORKDIR_ROOT_ENV = "DET_WORKDIR_ROOT"

_KINDS = r"core|script|dist|shard-\d+|ckpt|restore|estimator|export"
_KIND = re.compile(_KINDS)
# mkdtemp's random part has letters, digits and underscores, never a dash.
_NAME = re.compile(rf"det-(?:{_KINDS})-(\d+)-[a-z0-9_]+")
_WORKDIR = re.compile(r"exp\d+-trial\d+-pid(\d+)(?:-of(\d+))?")


def claim() -> None:
    """Make this process the owner of the scratch directories it and the processes it
    starts make (call first thing in a trial process)."""
    os.environ[OWNER_ENV] = str(os.getpid())


def owner() -> int:
    """The pid owning scratch directories this process makes: ``DET_SCRATCH_OWNER``,
    else this process's."""
    value = os.environ.get(OWNER_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else os.getpid()


def make(kind: str, root: Optional[str] = None) -> str:
    """A new scratch directory ``det-<kind>-<owner>-<random>`` in ``root`` (default:
    the temporary directory); returns its path.

    Args:
        kind: ``core``, ``script``, ``dist``, ``shard-<rank>``, ``ckpt``, ``restore``,
            ``estimator`` or ``export``.
        root: where (default :func:`tempfile.gettempdir`).
    """
    if not _KIND.fullmatch(kind):
        raise ValueError("Expected kind core, script, dist, shard-<rank>, ckpt, restore, "
                         "estimator or export. "
                         f"Received: kind={kind!r}")
    return tempfile.mkdtemp(prefix=f"det-{kind}-{owner()}-", dir=root)


def workdir_root(root: Optional[str] = None) -> str:
    """Where trial processes make their working directories: ``$DET_WORKDIR_ROOT``,
    else ``det-workdirs`` in ``root`` (default: the temporary directory)."""
    return os.environ.get(WORKDIR_ROOT_ENV) or os.path.join(root or tempfile.gettempdir(),
                                                            "det-workdirs")


def workdir_path(experiment_id: int, trial_id: int) -> str:
    """The path of this process's working directory for a trial (not created)."""
    me, own = os.getpid(), owner()
    name = f"exp{experiment_id}-trial{trial_id}-pid{me}" + ("" if own == me else f"-of{own}")
    return os.path.join(workdir_root(), name)


def _listdir(base: str) -> List[str]:
    try:
        return os.listdir(base)
    except OSError:
        return []


def _scan(root: Optional[str]) -> List[Tuple[List[int], str]]:
    """(the pids whose end ends it, path) of each scratch and working directory under
    ``root``: its owner, and for a working directory also its process."""
    base = root or tempfile.gettempdir()
    out = []
    for name in _listdir(base):
        m = _NAME.fullmatch(name)
        if m:
            out.append(([int(m.group(1))], os.path.join(base, name)))
    workdirs = workdir_root(root)
    for name in _listdir(workdirs):
        m = _WORKDIR.fullmatch(name)
        if m:
            pids = [int(m.group(1))] + ([int(m.group(2))] if m.group(2) else [])
            out.append((pids, os.path.join(workdirs, name)))
    return out


def owned(pid: int, root: Optional[str] = None) -> List[str]:
    """Paths of the scratch (and working) directories ``pid`` owns under ``root``."""
    return sorted(path for pids, path in _scan(root) if pids[-1] == pid)


def remove_owned(pid: int, root: Optional[str] = None) -> int:
    """Remove the scratch and working directories of trial process ``pid`` (call once
    it exited); returns how many were removed."""
    paths = owned(pid, root)
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
    return len(paths)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def sweep_dead_owners(root: Optional[str] = None) -> int:
    """Remove the scratch and working directories whose owner (or, for a working
    directory, whose process) no longer exists (call when a starter or a trial process
    starts); returns how many were removed."""
    removed = 0
    for pids, path in _scan(root):
        if not all(pid > 0 and _alive(pid) for pid in pids):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def _main(argv: List[str]) -> None:
    """``python -m determined.common.scratch MODULE [ARG ...]``: run ``MODULE`` as
    ``python -m`` would, in a process that owns its tree's scratch directories (for a
    starter that execs a trial process, whose pid it learns only once started)."""
    import runpy
    import sys

    if not argv:
        raise SystemExit("usage: python -m determined.common.scratch MODULE [ARG ...]")
    claim()
    sys.argv = list(argv)
    runpy.run_module(argv[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    import sys

    _main(sys.argv[1:])
