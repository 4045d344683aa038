"""A warm pool of trial processes.

Starting a Python process and importing a framework takes seconds (a cold ``import
torch`` is 1-3 s of CPU); a search of many short trials would pay that per trial. For
PyTorch and framework-free models the processes are forked by a fork server that
imported the platform and the framework once (``multiprocessing``'s ``forkserver``,
as the master's agent forks trials from its zygote), so a new trial process costs
milliseconds; TensorFlow models get freshly spawned processes (TensorFlow is not
fork-safe once imported). The pool also keeps processes started ahead of need;
starting a trial hands one of them the trial's environment. Each process still runs
exactly one trial and exits, so trials never share state.

A run starts the fork server (:func:`start_fork_server`) as soon as its config is
valid, so the server's imports overlap the run's own set-up (the database, the
records); and the server exits at once when the run ends (``_fork_server``).
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["WarmPool", "frameworks_used", "process_context", "start_fork_server",
           "trial_frameworks"]

_IMPORTS = {
    "torch": re.compile(r"^\s*(import|from)\s+torch\b", re.M),
    "tensorflow": re.compile(r"^\s*(import|from)\s+tensorflow\b", re.M),
}


def frameworks_used(model_dir: str) -> List[str]:
    """Frameworks the model definition imports (top-level modules and one level down)."""
    found = set()
    for root, dirs, files in os.walk(model_dir):
        if root[len(model_dir):].count(os.sep) > 1:
            dirs[:] = []
            continue
        for name in files:
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            found.update(fw for fw, pattern in _IMPORTS.items() if pattern.search(text))
    return sorted(found)


def trial_frameworks(config: Dict[str, Any], model_dir: str) -> List[str]:
    """What trial processes of ``config`` preload: the frameworks the model definition
    imports; none for a script, whose trial process only starts the script."""
    from determined.config import is_script_entrypoint

    if is_script_entrypoint(config.get("entrypoint")):
        return []
    return frameworks_used(os.path.abspath(model_dir))


def process_context(frameworks: List[str]) -> Any:
    """The ``multiprocessing`` context trial processes start from: a fork server that
    preloaded the platform (and PyTorch, warmed up) when that is safe, else ``spawn``."""
    import multiprocessing

    if "tensorflow" in frameworks or os.environ.get("DET_LOCAL_START") == "spawn" or \
            "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["determined.local._preload_torch" if "torch" in frameworks
                                else "determined.local._trial_process",
                                *_main_script_imports(), "determined.local._fork_server"])
    return ctx


def _main_script_imports() -> List[str]:
    """A main module run by its path (a script that runs experiments) is imported again
    by every process ``multiprocessing`` starts; such a script imports the driver and
    its database, so the fork server imports them once for all trial processes."""
    import sys

    main = sys.modules.get("__main__")
    by_path = getattr(getattr(main, "__spec__", None), "name", None) is None
    if by_path and getattr(main, "__file__", None):
        return ["determined.local._run", "determined.local._driver"]
    return []


def start_fork_server(frameworks: List[str]) -> None:
    """Start the fork server for ``frameworks`` now, without waiting for its imports
    (seconds with PyTorch); the first trial process started waits for them."""
    ctx = process_context(frameworks)
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        from determined.local._fork_server import SERVER_MARK

        os.environ[SERVER_MARK] = "1"  # read (and dropped) by the server's _fork_server
        try:
            forkserver.ensure_running()
        finally:
            os.environ.pop(SERVER_MARK, None)


def _worker_main(conn: Any, preload: List[str], threads: int) -> None:
    """A pooled process: import the frameworks, then wait to be given a trial."""
    import signal

    # Ctrl-C reaches the terminal's whole process group: the driver ends idle pooled
    # processes (closing their pipes) and stops trials in order.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import importlib

    import determined.harness  # noqa: F401

    for module in preload:
        try:
            importlib.import_module(module)
            if module == "torch":  # what every PyTorch trial imports lazily (1-2 s)
                from determined._procs._zygote import warm_torch

                warm_torch()
        except ImportError:
            pass
    try:
        message = conn.recv()
    except EOFError:
        return
    if message[0] != "run":
        return
    import atexit

    from determined.local._trial_process import trial_main

    try:
        trial_main(conn, *message[1])
    finally:
        # A forked process ends with os._exit, which skips atexit: run the handlers
        # (the trial's working directory is removed by one) here, but not PyTorch's
        # per-library finalizers (about 0.1 s per trial, for a process about to end).
        _drop_torch_library_finalizers()
        atexit._run_exitfuncs()


def _drop_torch_library_finalizers() -> None:
    """Keep PyTorch's ``torch.library`` finalizers (each resets operator registrations)
    from running at exit; every other exit finalizer still runs."""
    import weakref

    registry = getattr(weakref.finalize, "_registry", {})
    for finalizer, info in list(registry.items()):
        if getattr(info.func, "__module__", "") == "torch.library":
            finalizer.atexit = False


class WarmPool:
    """Keeps up to ``size`` idle processes ready to run a trial."""

    def __init__(self, ctx: Any, size: int, preload: List[str], threads: int):
        self.ctx, self.size, self.preload, self.threads = ctx, size, preload, threads
        self.idle: List[Tuple[Any, Any]] = []

    def _start_one(self) -> Tuple[Any, Any]:
        parent, child = self.ctx.Pipe()
        process = self.ctx.Process(
            target=_worker_main, args=(child, self.preload, self.threads),
            name="det-trial-pool", daemon=True,
        )
        process.start()
        child.close()
        return process, parent

    def fill(self, wanted: Optional[int] = None) -> None:
        """Start processes until ``wanted`` (default ``size``) are idle."""
        self.idle = [(p, c) for p, c in self.idle if p.is_alive()]
        while len(self.idle) < min(self.size, self.size if wanted is None else wanted):
            self.idle.append(self._start_one())

    def run(self, args: Tuple[Any, ...]) -> Tuple[Any, Any]:
        """Start a trial with ``trial_main(conn, *args)`` in a pooled process."""
        while self.idle:
            process, conn = self.idle.pop(0)
            if process.is_alive():
                conn.send(("run", args))
                return process, conn
        process, conn = self._start_one()
        conn.send(("run", args))
        return process, conn

    def close(self) -> None:
        for process, conn in self.idle:
            try:
                conn.close()
            except OSError:
                pass
            process.join(2)
            if process.is_alive():
                process.terminate()
        self.idle = []
