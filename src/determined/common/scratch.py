"""Scratch directories of trial processes, named after the process that owns them.

A trial process (and what it starts: ranks, a script) makes scratch directories in the
temporary directory: ``det-core-`` (a machine's local socket), ``det-script-`` (a
script's cluster info), ``det-dist-`` (the ranks' spec), ``det-shard-<rank>-`` (a
rank's part of a sharded checkpoint), ``det-ckpt-`` and ``det-restore-`` (a checkpoint
on its way to or from object storage), ``det-estimator-`` and ``det-export-`` (an
Estimator's model directory and its SavedModel exports). Other long-lived processes
make theirs the same way: a Ray node's actors (``det-ray-trial-<rank>-``, a rank's
model directory; ``det-ray-task-<task id>-``, a task's directory), a local test run
(``det-test-``, its checkpoints; ``det-test-mode-``, the copy of the model directory it
runs in) and the test suite (``det-test-home-``, its home). Each removes its own on a
clean exit; a process killed with SIGKILL removes nothing. So each name carries the
process that owns it, ``det-<kind>-<owner>-<random>``, and whoever started the process
removes what it left once it exited (:func:`remove_owned`); a starter that starts
sweeps what owners that no longer run left (:func:`sweep_dead_owners`), e.g. when the
starter itself was killed.

The working directories of trial processes (``harness._trial_setup``) are kept the same
way, in ``$DET_WORKDIR_ROOT`` (default ``<tmp>/det-workdirs``):
``exp<id>-trial<id>-pid<process>``, and ``...-pid<process>-of<owner>`` for a process the
trial process started (another rank). Each goes with its process's or its owner's end.

A process is named ``<pid>.<start>.<ns>``: its pid, its start time (clock ticks since
boot, ``/proc/<pid>/stat`` field 22) and its pid namespace (the inode of
``/proc/self/ns/pid``), both in hex. A sweep removes a directory only when its owner
surely no longer runs: in the sweeper's own pid namespace, no process has that pid, or
the one that has it started at another time (the pid was reused). Pids of another pid
namespace (a container sharing the temporary directory) mean other processes, so there
the sweep asks the owner's liveness lock instead: every process that owns directories
holds an exclusive ``flock`` on ``<tmp>/det-live/<its name>`` while it runs, which the
kernel releases when it ends however it ends; a directory goes when that file exists
and nobody holds its lock, and stays while it is held, or where the file is missing
(an owner of an older version). The same goes for every named directory when the
sweeper cannot read its own namespace. Where ``/proc`` is missing (or is not this
process's) a process is named by its pid alone, and such a directory goes once no
process has that pid.

The owner is the process in ``DET_SCRATCH_OWNER`` (its pid) and ``DET_SCRATCH_OWNER_ID``
(its full name), which the trial process sets to its own when it starts (:func:`claim`)
so that the processes it starts inherit them; a process without them owns its
directories itself.

Example::

    path = scratch.make("core")       # /tmp/det-core-4242.86a1f3.f0000ffc-k3j2h1x0
    ...                               # the trial process 4242 is killed
    scratch.remove_owned(4242)        # in its starter, after it exited
"""

from __future__ import annotations

import atexit
import fcntl
import os
import re
import shutil
import tempfile
from typing import Dict, List, NamedTuple, Optional, Tuple

__all__ = ["LIVE_DIR", "OWNER_ENV", "OWNER_ID_ENV", "WORKDIR_NAME", "WORKDIR_ROOT_ENV", "claim", "make",
           "owned", "owner", "remove_owned", "sweep_dead_owners", "workdir_path",
           "workdir_root"]

#: The environment variable naming the pid of the trial process that owns scratch
#: directories made by this process.
OWNER_ENV = "DET_SCRATCH_OWNER"
#: The owner's full name, ``<pid>.<start>.<ns>`` (set with ``DET_SCRATCH_OWNER``).
OWNER_ID_ENV = "DET_SCRATCH_OWNER_ID"
#: Where trial processes make their working directories (default ``<tmp>/det-workdirs``).
WORKDIR_ROOT_ENV = "DET_WORKDIR_ROOT"
#: The directory (in the temporary directory) of the owners' liveness locks.
LIVE_DIR = "det-live"

_KINDS = (r"core|script|dist|shard-\d+|ckpt|restore|estimator|export|ray-trial-\d+"
          r"|ray-task-[0-9A-Za-z_-]+|test|test-mode|test-home")
_KIND = re.compile(_KINDS)
_PROCESS = r"\d+(?:\.[0-9a-f]+\.[0-9a-f]+)?"
# mkdtemp's random part has letters, digits and underscores, never a dash: the last two
# dash-separated parts of a name are its owner and that (a task id may hold dashes).
_NAME = re.compile(rf"det-(?:{_KINDS})-({_PROCESS})-[a-z0-9_]+")
#: The pattern of a working directory's name (``exp<id>-trial<id>-pid<process>...``).
WORKDIR_NAME = rf"exp\d+-trial\d+-pid{_PROCESS}(?:-of{_PROCESS})?"
_WORKDIR = re.compile(rf"exp\d+-trial\d+-pid({_PROCESS})(?:-of({_PROCESS}))?")


class _Process(NamedTuple):
    """A process as a directory's name records it: start and ns are None where
    ``/proc`` was not readable (then the pid alone names it)."""

    pid: int
    start: Optional[int] = None
    ns: Optional[int] = None

    def __str__(self) -> str:
        if self.start is None or self.ns is None:
            return str(self.pid)
        return f"{self.pid}.{self.start:x}.{self.ns:x}"

    @classmethod
    def parse(cls, text: str) -> Optional["_Process"]:
        """The process ``text`` names, None if it names none."""
        return cls.of(text) if re.fullmatch(_PROCESS, text) else None

    @classmethod
    def of(cls, text: str) -> "_Process":
        """The process a name matched by ``_PROCESS`` names."""
        pid, *rest = text.split(".")
        return cls(int(pid), *(int(x, 16) for x in rest)) if rest else cls(int(pid))


def _start_time(pid: str) -> Optional[int]:
    """Field 22 of ``/proc/<pid>/stat`` (``pid`` may be ``self``); None if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # The name (field 2) is in parentheses and may hold spaces and parentheses.
        return int(stat[stat.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _own_namespace() -> Optional[int]:
    """The inode of this process's pid namespace, None where ``/proc`` is missing or
    belongs to another namespace (its ``self`` is not this process)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            if int(f.read().split()[0]) != os.getpid():
                return None
        return os.stat("/proc/self/ns/pid").st_ino
    except (OSError, ValueError, IndexError):
        return None


def _this_process() -> _Process:
    ns = _own_namespace()
    start = _start_time("self") if ns is not None else None
    return _Process(os.getpid(), start, ns if start is not None else None)


#: Liveness lock files this process holds (path -> open descriptor).
_held: Dict[str, int] = {}


def _live_path(proc: _Process, root: Optional[str] = None) -> str:
    """Where ``proc`` keeps its liveness lock: in ``root`` (default: the temporary
    directory, where an owner makes its directories and its lock)."""
    return os.path.join(root or tempfile.gettempdir(), LIVE_DIR, str(proc))


def _hold_liveness(proc: _Process) -> None:
    """Hold ``proc``'s (this process's) liveness lock until this process ends: how a
    sweep in another pid namespace learns that it ended. Best effort: where the file
    cannot be made or locked, its directories are left alone there."""
    if proc.start is None or proc.ns is None:
        return  # named by the pid alone: a sweep goes by the pid
    path = _live_path(proc)
    if path in _held:
        return
    folder = os.path.dirname(path)
    try:
        os.mkdir(folder)
        os.chmod(folder, 0o1777)  # shared by every user, as the temporary directory is
    except FileExistsError:
        pass
    except OSError:
        return
    # Locked before it appears under its name: a sweep never sees it unlocked.
    try:
        fd, tmp = tempfile.mkstemp(prefix=".", dir=folder)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(tmp, path)
    except OSError:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    _held[path] = fd


def _forget_held() -> None:
    """In a forked child: close the parent's lock descriptors (closing leaves the
    parent's lock held; only the parent's end releases it)."""
    for fd in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


def _drop_held() -> None:
    """At a clean exit: remove this process's liveness files (a sweep removes those of a
    process that was killed)."""
    for path, fd in list(_held.items()):
        try:
            os.unlink(path)
        except OSError:
            pass
        os.close(fd)
    _held.clear()


os.register_at_fork(after_in_child=_forget_held)
atexit.register(_drop_held)


def _released(proc: _Process, root: Optional[str] = None) -> bool:
    """Whether ``proc``'s liveness lock exists and nobody holds it: it ended."""
    if proc.start is None or proc.ns is None:
        return False
    try:
        fd = os.open(_live_path(proc, root), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held (EWOULDBLOCK), or locks do not work here: it may run
        return False
    finally:
        os.close(fd)  # releases the lock, if it was taken
    return True


def claim() -> None:
    """Make this process the owner of the scratch directories it and the processes it
    starts make (call first thing in a trial process)."""
    me = _this_process()
    os.environ[OWNER_ENV] = str(os.getpid())
    os.environ[OWNER_ID_ENV] = str(me)
    _hold_liveness(me)


def owner() -> int:
    """The pid owning scratch directories this process makes: ``DET_SCRATCH_OWNER``,
    else this process's."""
    value = os.environ.get(OWNER_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else os.getpid()


def _owner_process() -> _Process:
    """The owner's name: ``DET_SCRATCH_OWNER_ID`` where it names ``DET_SCRATCH_OWNER``'s
    pid, this process's when that is this process, else the pid alone."""
    pid = owner()
    if pid == os.getpid():
        return _this_process()
    named = _Process.parse(os.environ.get(OWNER_ID_ENV, ""))
    return named if named is not None and named.pid == pid else _Process(pid)


def make(kind: str, root: Optional[str] = None, own: bool = False) -> str:
    """A new scratch directory ``det-<kind>-<owner>-<random>`` in ``root`` (default:
    the temporary directory); returns its path.

    Args:
        kind: ``core``, ``script``, ``dist``, ``shard-<rank>``, ``ckpt``, ``restore``,
            ``estimator``, ``export``, ``ray-trial-<rank>``, ``ray-task-<task id>``,
            ``test``, ``test-mode`` or ``test-home``.
        root: where (default :func:`tempfile.gettempdir`).
        own: owned by this process whatever ``DET_SCRATCH_OWNER`` says (a long-lived
            process that is no trial process's, e.g. a Ray actor).
    """
    if not _KIND.fullmatch(kind):
        raise ValueError("Expected kind core, script, dist, shard-<rank>, ckpt, restore, "
                         "estimator, export, ray-trial-<rank>, ray-task-<task id: letters, "
                         "digits, _ and ->, test, test-mode or test-home. "
                         f"Received: kind={kind!r}")
    who = _this_process() if own else _owner_process()
    if who.pid == os.getpid():
        _hold_liveness(who)
    return tempfile.mkdtemp(prefix=f"det-{kind}-{who}-", dir=root)


def workdir_root(root: Optional[str] = None) -> str:
    """Where trial processes make their working directories: ``$DET_WORKDIR_ROOT``,
    else ``det-workdirs`` in ``root`` (default: the temporary directory)."""
    return os.environ.get(WORKDIR_ROOT_ENV) or os.path.join(root or tempfile.gettempdir(),
                                                            "det-workdirs")


def workdir_path(experiment_id: int, trial_id: int) -> str:
    """The path of this process's working directory for a trial (not created)."""
    me, own = _this_process(), _owner_process()
    _hold_liveness(me)
    name = f"exp{experiment_id}-trial{trial_id}-pid{me}"
    if own.pid != me.pid:
        name += f"-of{own}"
    return os.path.join(workdir_root(), name)


def _listdir(base: str) -> List[str]:
    try:
        return os.listdir(base)
    except OSError:
        return []


def _scan(root: Optional[str]) -> List[Tuple[List[_Process], str]]:
    """(the processes whose end ends it, path) of each scratch and working directory
    under ``root``: its owner, and for a working directory its process first."""
    base = root or tempfile.gettempdir()
    out: List[Tuple[List[_Process], str]] = []
    for name in _listdir(base):
        m = _NAME.fullmatch(name)
        if m:
            out.append(([_Process.of(m.group(1))], os.path.join(base, name)))
    workdirs = workdir_root(root)
    for name in _listdir(workdirs):
        m = _WORKDIR.fullmatch(name)
        if m:
            procs = [_Process.of(g) for g in m.groups() if g]
            out.append((procs, os.path.join(workdirs, name)))
    return out


def _here(proc: _Process, ns: Optional[int]) -> bool:
    """Whether ``proc``'s pid means a process of this pid namespace (``ns``): a pid alone
    is taken to."""
    return proc.ns is None or (ns is not None and proc.ns == ns)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _ended(proc: _Process) -> bool:
    """Whether ``proc``, a process of this pid namespace (:func:`_here`), surely no
    longer runs."""
    if proc.pid <= 0 or not _alive(proc.pid):
        return True
    if proc.start is None:
        return False
    start = _start_time(str(proc.pid))
    return start is not None and start != proc.start  # None: hidden, or just exited


def _gone(proc: _Process, ns: Optional[int], root: Optional[str] = None) -> bool:
    """Whether ``proc`` surely no longer runs (``ns``: this process's pid namespace): a
    process of another namespace once its liveness lock (in ``root``) is free."""
    return _ended(proc) if _here(proc, ns) else _released(proc, root)


def owned(pid: int, root: Optional[str] = None) -> List[str]:
    """Paths of the scratch (and working) directories under ``root`` whose owner's pid is
    ``pid`` in this process's pid namespace."""
    ns = _own_namespace()
    return sorted(path for procs, path in _scan(root)
                  if procs[-1].pid == pid and _here(procs[-1], ns))


def remove_owned(pid: int, root: Optional[str] = None) -> int:
    """Remove the scratch and working directories of process ``pid`` (call once it
    exited: a directory named by the pid alone goes; one of a process that started
    later with the same pid stays); returns how many were removed."""
    ns = _own_namespace()
    removed = 0
    for procs, path in _scan(root):
        last = procs[-1]
        if last.pid == pid and _here(last, ns) and (last.start is None or _ended(last)):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    _drop_liveness(ns, root, pid)
    return removed


def _drop_liveness(ns: Optional[int], root: Optional[str], pid: Optional[int] = None) -> None:
    """Remove the liveness files in ``root`` of processes that ended (of pid ``pid``
    only, if given)."""
    live = os.path.join(root or tempfile.gettempdir(), LIVE_DIR)
    for name in _listdir(live):
        proc = _Process.parse(name)
        if proc is not None and (pid is None or proc.pid == pid) and _gone(proc, ns, root):
            try:
                os.unlink(os.path.join(live, name))
            except OSError:
                pass


def sweep_dead_owners(root: Optional[str] = None) -> int:
    """Remove the scratch and working directories whose owner (or, for a working
    directory, whose process) surely no longer runs (call when a starter or a trial
    process starts); returns how many were removed."""
    ns = _own_namespace()
    removed = 0
    for procs, path in _scan(root):
        if any(_gone(proc, ns, root) for proc in procs):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    _drop_liveness(ns, root)  # of the processes that ended (their directories went above)
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
