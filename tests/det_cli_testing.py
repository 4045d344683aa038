"""Run the real ``det`` command line in a subprocess (for tests)."""

import os
import sys


def run_det(args, cwd=None, timeout=300, env=None):
    """Run the real ``det`` console entry point in a subprocess."""
    import subprocess

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "determined.cli", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env,
    )


ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"


def run_det_in_terminal(args, columns=80, env=None, timeout=300.0, respond=None):
    """Run ``det args`` on a pseudo-terminal ``columns`` wide (stdout and stderr both
    the terminal, as a person runs it): ``(exit code, output)``, the output with
    ``\\r\\n`` read as ``\\n``, terminal control codes removed and a line redrawn in
    place (after ``\\r``) as last drawn.

    ``respond``, when given, is called with the output so far (control codes removed,
    every frame of a redrawn line kept) each time more comes; the bytes it returns, if
    any, are typed into the terminal (``b"\\x03"``: Ctrl-C)."""
    import fcntl
    import pty
    import re
    import struct
    import termios
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal's size, then det
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
            os.environ.pop("COLUMNS", None)
            os.environ.pop("LINES", None)
            os.environ.update(env or {})
            os.execv(sys.executable, [sys.executable, "-m", "determined.cli", *map(str, args)])
        finally:
            os._exit(127)
    output, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
        if respond is not None:
            typed = respond(re.sub(ANSI, "", output.decode(errors="replace")))
            if typed:
                os.write(fd, typed)
    else:
        os.kill(pid, 9)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    text = re.sub(ANSI, "", output.decode(errors="replace").replace("\r\n", "\n"))
    # A line redrawn in place (a live progress bar): what the terminal shows, its last.
    shown = ["".join([part for part in line.split("\r") if part][-1:])
             for line in text.split("\n")]
    return os.waitstatus_to_exitcode(status), "\n".join(shown)
