"""``python3 -m determined.launch.wrap_rank RANK CMD...``: run CMD with every line of
its output prefixed ``[rank=N] `` (the trial's log shows which rank wrote what).

RANK is a number or a comma-separated list of environment variable names tried in
order (e.g. ``RANK`` under torchrun). A ``--`` before CMD is optional. Lines end at
``\\n`` or ``\\r`` (progress bars); stdout and stderr keep their streams. CMD has
``DET_RANK_PREFIXED`` set to the rank (:data:`RANK_PREFIXED`). The exit
code is CMD's; SIGTERM/SIGINT are passed on to it.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import threading
from typing import BinaryIO, Iterator, List, Optional

from determined._procs import die_with_parent, set_parent_death_signal
from determined.launch._command import forward_signals, resolve_command

_LINE_END = re.compile(rb"[\r\n]")
#: Set (to the rank) in CMD's environment: its log lines need not name the rank again
#: (``harness._rank_logs.ranks_named``).
RANK_PREFIXED = "DET_RANK_PREFIXED"


def split_lines(stream: BinaryIO, limit: int = io.DEFAULT_BUFFER_SIZE) -> Iterator[bytes]:
    """Lines of ``stream`` ending at ``\\n`` or ``\\r`` (each yielded with ``\\n``); a
    line longer than ``limit`` bytes is cut into pieces."""
    pending = b""
    while True:
        chunk = stream.read(limit)
        if not chunk:
            break
        pending += chunk
        while True:
            m = _LINE_END.search(pending)
            if m is None:
                break
            yield pending[:m.start()] + b"\n"
            pending = pending[m.end():]
        while len(pending) >= limit:
            yield pending[:limit] + b"\n"
            pending = pending[limit:]
    if pending:
        yield pending + b"\n"


def _forward(src: BinaryIO, dst_fd: int, prefix: bytes) -> None:
    for line in split_lines(src):
        os.write(dst_fd, prefix + line)


def resolve_rank(value: str, environ: Optional[dict] = None) -> int:
    """RANK as given: digits, or names of environment variables to try."""
    environ = os.environ if environ is None else environ
    if value.isdigit():
        return int(value)
    for name in value.split(","):
        raw = environ.get(name.strip())
        if raw is not None:
            if not raw.strip().isdigit():
                raise ValueError(f"Expected an integer rank in ${name}. Received: {raw!r}")
            return int(raw)
    raise ValueError(f"Expected RANK to be an integer or the name of a set environment "
                     f"variable. Received: {value!r} (none of them is set)")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m determined.launch.wrap_rank",
        usage="%(prog)s [--no-redirect-stdio] RANK [--] CMD...",
        description="Prefix each output line of CMD with its rank.")
    parser.add_argument("--no-redirect-stdio", action="store_true",
                        help="accepted for compatibility (output always goes to this "
                             "process's stdout/stderr)")
    parser.add_argument("rank", metavar="RANK")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="CMD")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("CMD is missing: expected a command to run after RANK")
    try:
        rank = resolve_rank(args.rank)
    except ValueError as e:
        parser.error(str(e))
    die_with_parent(os.getppid())
    proc = subprocess.Popen(resolve_command(command), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0,
                            env={**os.environ, RANK_PREFIXED: str(rank)},
                            preexec_fn=set_parent_death_signal)
    prefix = f"[rank={rank}] ".encode()
    with forward_signals(proc):
        readers = [threading.Thread(target=_forward, args=(proc.stdout, 1, prefix), daemon=True),
                   threading.Thread(target=_forward, args=(proc.stderr, 2, prefix), daemon=True)]
        for t in readers:
            t.start()
        for t in readers:
            t.join()
        code = proc.wait()
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell


if __name__ == "__main__":
    sys.exit(main())
