"""The zygote: imports once, then forks one trial process per request.

Run as ``python -m determined._procs._zygote FD`` by :class:`~determined._procs.Spawner`,
which holds the other end of the SOCK_SEQPACKET socket ``FD``. Messages are JSON
objects, one per packet:

- in: ``{"spawn": id, "env": {...}, "cwd": path, "module": name, "args": [...]}``
  with one file descriptor attached (the write end of the pipe that becomes the
  child's stdout and stderr); the child runs ``module`` as ``python -m`` would
  (default: the trial runner, ``determined.harness._rest_host``);
- out: ``{"spawned": id, "pid": pid}`` or ``{"failed": id, "error": text}``, and
  ``{"exited": pid, "code": code}`` when a child ends (negative code: killed by
  that signal, as :mod:`subprocess` reports it).

When the spawner's end closes (the master exited or died), the zygote kills the
process groups of its children and exits, so no trial outlives its agent.

Forking a process that imported PyTorch copies a few hundred megabytes of page
tables (tens of milliseconds), so the zygote keeps ``SPARES`` children forked
ahead of requests, each waiting on its own socket for a request and its output
pipe; a spawn hands the request to one and forks its replacement after replying.
A spare whose zygote is gone reads end-of-file and exits.
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import socket
import sys
import traceback
from typing import Dict, List, Tuple

from determined.common import scratch

MAX_PACKET = 1 << 20
#: children forked ahead of spawn requests
SPARES = 2


def _preload() -> None:
    import determined.harness._native_trial  # noqa: F401
    import determined.harness._rest_host  # noqa: F401
    import determined.harness._trial_setup  # noqa: F401  (imported by every trial: 3 ms)
    import determined.harness._runner  # noqa: F401
    # The rest of what _rest_host.main imports for every trial (the script runner's
    # multiprocessing imports alone took ~18 ms per trial).
    import determined.harness._gpu_cap  # noqa: F401
    import determined.harness._ranks  # noqa: F401
    import determined.harness._script_trial  # noqa: F401
    import determined.storage  # noqa: F401
    import determined.tensorboard._events  # noqa: F401  (every chief writes event files)

    import encodings.idna  # noqa: F401  (socket.getaddrinfo imports it on first use)

    import httpx

    httpx.Client(verify=False).close()  # imports httpcore and the transport lazily

    for module in filter(None, os.environ.get("DET_ZYGOTE_PRELOAD", "").split(",")):
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    if "torch" in sys.modules:
        warm_torch()


def warm_torch() -> None:
    """Run once what every PyTorch trial runs first, so its lazy imports happen here.

    Nothing here starts a thread (no tensor math), so forking stays safe.
    """
    import io

    import torch
    import torch._dynamo  # noqa: F401  (the first optimizer built imports it: 1-2 s)

    import determined.pytorch._controller  # noqa: F401

    torch.save({"w": torch.zeros(1)}, io.BytesIO())


def _set_comm(name: str) -> None:
    try:  # visible in ps and /proc/<pid>/comm; Linux only
        with open("/proc/self/comm", "w") as f:
            f.write(name)
    except OSError:
        pass


def _child(out_fd: int, request: Dict, close: List[int]) -> None:
    """Runs in the forked child; never returns."""
    code = 1
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for fd in close:
            try:
                os.close(fd)
            except OSError:
                pass
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.close(null)
        os.close(out_fd)
        os.environ.update(request.get("env", {}))
        scratch.claim()  # it owns the scratch dirs of its tree
        os.chdir(request.get("cwd", "/"))
        _set_comm("det-trial")
        module = request.get("module")
        if module is None:
            from determined.harness import _rest_host

            sys.argv = [_rest_host.__file__]
            code = _rest_host.main()
        else:
            import runpy

            sys.argv = [module, *request.get("args", [])]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported in the trial's log
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _spare(conn: socket.socket, close: List[int]) -> None:
    """Runs in a child forked ahead of a request: waits for one, then runs it as
    :func:`_child`; exits when the zygote's end closes first. Never returns."""
    try:
        signal.set_wakeup_fd(-1)
        for fd in close:
            try:
                os.close(fd)
            except OSError:
                pass
        data, fds, _, _ = socket.recv_fds(conn, MAX_PACKET, 1)
    except BaseException:  # noqa: BLE001 - nothing to report to: the zygote saw no request
        os._exit(1)
    if not data or len(fds) != 1:
        os._exit(0)
    conn.close()
    _child(fds[0], json.loads(data), [])


def serve(sock: socket.socket) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: Dict[int, int] = {}  # pid -> request id
    spares: List[Tuple[int, socket.socket]] = []  # (pid, our end of its socket)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)

    def send(message: Dict) -> None:
        sock.sendall(json.dumps(message).encode())

    def reap() -> None:
        while children or spares:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in children:
                del children[pid]
                send({"exited": pid, "code": os.waitstatus_to_exitcode(status)})
            else:  # a spare that died before it got a request (killed from outside)
                for spare in [s for s in spares if s[0] == pid]:
                    spares.remove(spare)
                    spare[1].close()

    def fork_spare() -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        inherited = [sock.fileno(), wake_r, wake_w, sel.fileno(), ours.fileno()]
        inherited += [conn.fileno() for _, conn in spares]
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return
        if pid == 0:
            _spare(theirs, inherited)
        theirs.close()
        spares.append((pid, ours))

    def start(request: Dict, out_fd: int) -> int:
        """The pid of a process running ``request``: a spare's, else a new fork's."""
        while spares:
            pid, conn = spares.pop(0)
            try:
                socket.send_fds(conn, [json.dumps(request).encode()], [out_fd])
                return pid
            except OSError:  # it died meanwhile; reap() collects it
                pass
            finally:
                conn.close()
        pid = os.fork()
        if pid == 0:
            _child(out_fd, request, [sock.fileno(), wake_r, wake_w, sel.fileno()])
        return pid

    for _ in range(SPARES):
        fork_spare()

    while True:
        for key, _ in sel.select():
            if key.fileobj == wake_r:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
                reap()
                continue
            try:
                data, fds, _, _ = socket.recv_fds(sock, MAX_PACKET, 4)
            except InterruptedError:
                continue
            if not data:
                for pid in list(children):
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass
                for _, conn in spares:
                    conn.close()  # each reads end-of-file and exits
                return
            request = json.loads(data)
            req_id = request.get("spawn")
            if len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                send({"failed": req_id, "error": f"expected 1 file descriptor, got {len(fds)}"})
                continue
            try:
                pid = start(request, fds[0])
            except OSError as e:
                send({"failed": req_id, "error": f"fork failed: {e}"})
                continue
            finally:
                os.close(fds[0])
            children[pid] = req_id
            send({"spawned": req_id, "pid": pid})
        reap()
        while len(spares) < SPARES:  # after replying: the next spawn finds one ready
            before = len(spares)
            fork_spare()
            if len(spares) == before:  # fork failed: retry at the next request
                break


def main() -> None:
    fd = int(sys.argv[1])
    sock = socket.socket(fileno=fd)
    _set_comm("det-zygote")
    _preload()
    sock.sendall(json.dumps({"ready": os.getpid()}).encode())
    serve(sock)


if __name__ == "__main__":
    main()
