"""Run a module under cProfile in every thread; write one merged .prof at exit.

    python benchmarks/cluster/_profile.py OUT.prof -m determined.master --port ...
    python benchmarks/cluster/_profile.py threads -m determined.master --port ...

The cluster benchmarks use it for the master when ``DET_BENCH_PROFILE`` names the
output file (``BenchMaster``). cProfile profiles one thread per profiler, so each
thread gets its own, and their statistics are merged when the process exits
(SIGTERM included). Times are each thread's CPU time. SIGUSR1 clears what was
collected so far (a benchmark sends it when its measured part starts: see
``BenchMaster.profile_from_here``).

``threads`` in place of a file: no profile, but every thread gets its Python name as its
name in the OS (``/proc/PID/task/*/comm``, 15 characters), so that a benchmark can
read each thread's CPU time at no cost (``_master.thread_cpu``).
"""

import atexit
import cProfile
import os
import pstats
import runpy
import signal
import sys
import threading
import time
from typing import Any, Dict, List

_profiles: List[cProfile.Profile] = []
_names: List[str] = []
_lock = threading.Lock()


def _start_in_thread(*_: Any) -> None:
    profile = cProfile.Profile(time.thread_time)  # CPU time, not waits
    with _lock:
        _profiles.append(profile)
        _names.append(threading.current_thread().name)
    profile.enable()  # replaces this hook for the rest of the thread


def _name_thread(*_: Any) -> None:
    import ctypes

    name = threading.current_thread().name.encode()[:15]
    ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
    sys.setprofile(None)


def _clear(*_: Any) -> None:
    with _lock:
        for profile in _profiles:
            profile.clear()


def _dump(path: str) -> None:
    """Write every thread's statistics merged to ``path``, and those of the threads of
    each name (digits dropped: one file for a pool) to ``path`` + ``.NAME``."""
    for profile in list(_profiles):
        profile.disable()
    merged: Dict[str, pstats.Stats] = {}
    for name, profile in zip(_names, _profiles):
        for key in ("", "." + name.rstrip("0123456789_-").replace(" ", "_")):
            try:
                stats = pstats.Stats(profile)  # a snapshot: may be taken again
            except TypeError:  # pstats refuses a thread that ran nothing since SIGUSR1
                break
            if key in merged:
                merged[key].add(stats)
            else:
                merged[key] = stats
    for key, stats in merged.items():
        stats.dump_stats(path + key)


def main() -> None:
    out = sys.argv[1]
    if sys.argv[2] != "-m":
        raise SystemExit("usage: _profile.py OUT.prof -m MODULE [ARGS...]")
    module = sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    if out == "threads":
        threading.setprofile(_name_thread)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return
    atexit.register(_dump, os.path.abspath(out))
    threading.setprofile(_start_in_thread)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGUSR1, _clear)
    _start_in_thread()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
