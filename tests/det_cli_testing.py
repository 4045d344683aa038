"""Run the real ``det`` command line in a subprocess, on a pipe or on a terminal, and
read the tables it prints (for tests)."""

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


def wait_while_running(proc, done, what, timeout=120.0, every=0.1):
    """Poll ``done()`` until it is true while ``proc`` (a ``subprocess.Popen``) runs;
    fail with its output if it ended first, or with ``what`` after ``timeout`` s."""
    import time

    deadline = time.monotonic() + timeout
    while not done():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, what
        time.sleep(every)


def trial_started(log):
    """Whether the local trial log ``log`` (a ``pathlib.Path``) says where it runs."""
    return log.exists() and "runs in" in log.read_text()


ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"


def run_det_in_terminal(args, columns=80, env=None, timeout=300.0, answer=None,
                        every_drawing=False, respond=None, module="determined.cli",
                        rows=40, idle=None):
    """Run ``det args`` on a pseudo-terminal ``columns`` wide (stdout and stderr both
    the terminal, as a person runs it): ``(exit code, output)``, the output with
    ``\\r\\n`` read as ``\\n``, terminal control codes removed and a line redrawn in
    place (after ``\\r``) as last drawn (``every_drawing``: each drawing of it, in
    order, a line each). ``answer``: ``(prompt, text)``, ``text`` typed once, when the
    output first shows ``prompt`` (``("Password", "\\x04")``: Ctrl-D at a password
    prompt).

    ``respond``, when given, is called with the output so far (control codes removed,
    every frame of a redrawn line kept) each time more comes; the bytes it returns, if
    any, are typed into the terminal (``b"\\x03"``: Ctrl-C). With ``idle`` (seconds) it
    is also called when nothing came for that long, so that it can type again into a
    program that waits (a remote shell not yet connected). ``module``: the program run
    as ``python -m`` (``determined.master``: the master's command line). ``rows``: the
    terminal's height."""
    import fcntl
    import pty
    import re
    import select
    import struct
    import termios
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the terminal's size, then det
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
            os.environ.pop("COLUMNS", None)
            os.environ.pop("LINES", None)
            os.environ.update(env or {})
            os.execv(sys.executable, [sys.executable, "-m", module, *map(str, args)])
        finally:
            os._exit(127)
    output, deadline = b"", time.monotonic() + timeout
    prompt, typed = (answer[0].encode(), answer[1].encode()) if answer else (None, b"")
    while time.monotonic() < deadline:
        if idle is None or select.select([fd], [], [], idle)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
            if prompt is not None and prompt in output:
                os.write(fd, typed)
                prompt = None
        if respond is not None:
            reply = respond(re.sub(ANSI, "", output.decode(errors="replace")))
            if reply:
                os.write(fd, reply)
    else:
        os.kill(pid, 9)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    text = re.sub(ANSI, "", output.decode(errors="replace").replace("\r\n", "\n"))
    # A line redrawn in place (a live progress bar): what the terminal shows, its last
    # drawing (or each of them).
    shown = []
    for line in text.split("\n"):
        drawings = [part for part in line.split("\r") if part]
        shown += drawings if every_drawing and drawings else ["".join(drawings[-1:])]
    return os.waitstatus_to_exitcode(status), "\n".join(shown)


def table_rule(lines):
    """The index of a table's ``---+---`` rule among its lines."""
    return next(i for i, line in enumerate(lines) if line and set(line) <= {"-", "+"})


def table_lines(text, title):
    """The lines of the table under the line ``title`` (up to the next blank line)."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def table_headers(lines):
    """A table's headers as it shows them, from its lines (the first is a header line),
    each joined from its wrapped lines: after ``.``, ``_`` or ``-`` directly, else with a
    space (``best validation_`` + ``loss``: ``best validation_loss``)."""
    cells = [[c.strip() for c in line.split("|")] for line in lines[:table_rule(lines)]]
    joined = []
    for i in range(len(cells[0])):
        text = ""
        for piece in (row[i] for row in cells if i < len(row) and row[i]):
            text += piece if not text or text[-1] in "._-" else " " + piece
        joined.append(text)
    return joined


def hidden_names(lines):
    """The columns a table says it left out in its last line (``(hidden: a, b; --csv/--json
    show all)``, folded over several lines, the later ones indented), [] without one.
    Lines after the note (not indented) are no part of it."""
    start = next((i for i, line in enumerate(lines) if line.startswith("(hidden:")), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")),
               len(lines))
    note = " ".join(line.strip() for line in lines[start:end])
    return note[len("(hidden: "):].split("; --csv")[0].split(", ")
