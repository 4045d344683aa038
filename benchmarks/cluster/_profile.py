"""Run a module under cProfile in every thread; write one merged .prof at exit.

    python benchmarks/cluster/_profile.py OUT.prof -m determined.master --port ...

The cluster benchmarks use it for the master when ``DET_BENCH_PROFILE`` names the
output file (``BenchMaster``). cProfile profiles one thread per profiler, so each
thread gets its own, and their statistics are merged when the process exits
(SIGTERM included). Times are each thread's CPU time.
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
from typing import Any, List

_profiles: List[cProfile.Profile] = []
_lock = threading.Lock()


def _start_in_thread(*_: Any) -> None:
    profile = cProfile.Profile(time.thread_time)  # CPU time, not waits
    with _lock:
        _profiles.append(profile)
    profile.enable()  # replaces this hook for the rest of the thread


def _dump(path: str) -> None:
    for profile in list(_profiles):
        profile.disable()
    stats = None
    for profile in _profiles:
        try:
            profile.create_stats()
        except Exception:  # noqa: BLE001 - a thread's profile still running
            continue
        if stats is None:
            stats = pstats.Stats(profile)
        else:
            stats.add(profile)
    if stats is not None:
        stats.dump_stats(path)


def main() -> None:
    out = sys.argv[1]
    if sys.argv[2] != "-m":
        raise SystemExit("usage: _profile.py OUT.prof -m MODULE [ARGS...]")
    module = sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    atexit.register(_dump, os.path.abspath(out))
    threading.setprofile(_start_in_thread)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    _start_in_thread()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
