"""Imported last by the local fork server (``_pool.process_context``): when the server
exits (its driver ended), it exits at once.

An interpreter that imported PyTorch spends about a second tearing it down
(finalizers, module clean-up) on exit; the fork server has nothing to clean up (its
socket lives in the driver's temporary directory), and it shares the driver's
standard output, so whoever reads that output to its end would wait for the
teardown. Processes forked from the server inherit this handler and ignore it; a
process that imports this module without being that server (``SERVER_MARK`` unset)
registers nothing.
"""

import atexit
import os
import sys

#: Set (to "1") by :func:`determined.local._pool.start_fork_server` only while it starts
#: the server: any other process importing this module (a tool importing every module)
#: keeps its own exit, and its exit status.
SERVER_MARK = "DET_LOCAL_FORK_SERVER"

_SERVER_PID = os.getpid()


def _exit_now() -> None:
    if os.getpid() == _SERVER_PID:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if os.environ.pop(SERVER_MARK, None) == "1":  # popped: trial processes do not inherit it
    # atexit runs the handlers registered last first: this one goes before any module's.
    atexit.register(_exit_now)
