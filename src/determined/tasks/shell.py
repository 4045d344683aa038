"""A shell task: each websocket connection gets an interactive shell on a new PTY.

Protocol (``ws://127.0.0.1:PORT/...``, reached through the master's proxy): binary
messages from the client are keystrokes written to the PTY (Ctrl-C is byte 3; the
terminal line discipline turns it into SIGINT for the foreground job); binary
messages to the client are the PTY's output; a text message
``{"resize": [rows, cols]}`` sets the window size (the shell gets SIGWINCH);
``?rows=R&cols=C`` in the URL gives the size the PTY has before the shell starts. When
the shell exits, a last text message ``{"exit": CODE}`` carries its exit code (negative:
the signal that ended it) and the connection closes (as ssh passes a remote shell's
exit code on); the server keeps serving new connections.

``?batch=1`` (``det shell start`` in a pipe): no PTY and no interactive shell, so no
prompts, echo or terminal escapes; the client's bytes are the shell's stdin (byte 4, the
client's end of input, closes it), its stdout and stderr come back, and a last text
message ``{"exit": CODE}`` carries its exit code.
With ``$DET_TASK_TOKEN`` set (tasks always set it) a connection must send
``Authorization: token <it>`` (the master's proxy adds it): on a remote agent the
server listens on the agent's own address, where others could reach it.

    python -m determined.tasks.shell --port 8765 --workdir /path/to/context
"""

from __future__ import annotations

import argparse
import fcntl
import hmac
import json
import logging
import os
import signal
import struct
import subprocess
import termios
import threading
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

__all__ = ["main", "set_window_size"]

logger = logging.getLogger("determined.tasks.shell")


def set_window_size(fd: int, rows: int, cols: int) -> None:
    """Set the PTY's window size (the shell's process group gets SIGWINCH)."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _shell_argv() -> List[str]:
    shell = os.environ.get("SHELL") or "/bin/bash"
    if not os.path.exists(shell):
        shell = "/bin/sh"
    return [shell, "-i"]


def _serve_batch(ws: Any, workdir: str) -> None:
    """A shell reading the client's bytes as a script (see the module's docstring)."""
    shell = _shell_argv()[0]
    proc = subprocess.Popen([shell], cwd=workdir, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    logger.info("shell %d started (batch)", proc.pid)
    assert proc.stdin is not None and proc.stdout is not None

    def pump_input() -> None:
        try:
            for message in ws:
                if isinstance(message, bytes):
                    end = message.endswith(b"\x04")
                    proc.stdin.write(message[:-1] if end else message)
                    proc.stdin.flush()
                    if end:
                        break
        except Exception:  # the client went away, or the shell closed its stdin
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    threading.Thread(target=pump_input, daemon=True).start()
    try:
        for data in iter(lambda: os.read(proc.stdout.fileno(), 65536), b""):
            ws.send(data)
        code = proc.wait()
        ws.send(json.dumps({"exit": code}))
    except Exception:  # the client went away: end the shell and what it started
        try:
            os.killpg(proc.pid, signal.SIGHUP)
        except OSError:
            pass
        proc.wait()
    finally:
        ws.close()
        logger.info("shell %d ended (batch)", proc.pid)


def _initial_size(query: Dict[str, List[str]]) -> Optional[Tuple[int, int]]:
    """``rows`` and ``cols`` from the connection's URL, or None (left out or not sizes)."""
    try:
        rows, cols = int(query["rows"][0]), int(query["cols"][0])
    except (KeyError, ValueError):
        return None
    return (rows, cols) if 0 < rows < 65536 and 0 < cols < 65536 else None


def _fork_shell(workdir: str, size: Optional[Tuple[int, int]]) -> Tuple[int, int]:
    """Start an interactive shell on a new PTY whose window size (when given) is set
    before the shell exists; returns (pid, the PTY's controlling side)."""
    master, slave = os.openpty()
    if size:
        set_window_size(master, *size)
    pid = os.fork()
    if pid == 0:  # the child: the shell, with the PTY as its controlling terminal
        try:
            os.close(master)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            for target in (0, 1, 2):
                os.dup2(slave, target)
            if slave > 2:
                os.close(slave)
            os.chdir(workdir)
            os.environ["TERM"] = os.environ.get("TERM") or "xterm-256color"
            argv = _shell_argv()
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    os.close(slave)
    return pid, master


def _serve_connection(ws: Any, workdir: str) -> None:
    query = parse_qs(urlsplit(ws.request.path).query)
    if query.get("batch") == ["1"]:
        _serve_batch(ws, workdir)
        return
    pid, fd = _fork_shell(workdir, _initial_size(query))
    logger.info("shell %d started", pid)
    done = threading.Event()
    reaped = threading.Lock()  # the shell is waited for once: here or at the end below

    def pump_output() -> None:
        try:
            while True:
                try:
                    data = os.read(fd, 65536)
                except OSError:  # EIO: the shell exited
                    break
                if not data:
                    break
                ws.send(data)
            with reaped:
                _, status = os.waitpid(pid, 0)
            ws.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}))
        except Exception:  # the client went away (or the shell was reaped already)
            pass
        finally:
            done.set()
            try:
                ws.close()
            except Exception:
                pass

    threading.Thread(target=pump_output, daemon=True).start()
    try:
        for message in ws:
            if isinstance(message, bytes):
                os.write(fd, message)
                continue
            try:
                request = json.loads(message)
                rows, cols = request["resize"]
                set_window_size(fd, int(rows), int(cols))
            except (ValueError, KeyError, TypeError) as e:
                logger.warning("ignoring a text message that is not a resize: %s", e)
    except Exception:
        pass
    finally:
        if not done.is_set():
            try:
                os.killpg(pid, signal.SIGHUP)
            except OSError:
                pass
        done.wait(30)  # the output's last bytes and the exit code go first
        with reaped:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # reaped by pump_output
                pass
        os.close(fd)
        logger.info("shell %d ended", pid)


def _check_token(connection: Any, request: Any) -> Any:
    """``process_request``: refuse a connection without the task's token (403); answer
    a plain HTTP request (no websocket upgrade: ``det shell start``'s readiness check)
    with 200 instead of a failed handshake's traceback in the log."""
    expected = os.environ.get("DET_TASK_TOKEN")
    if expected:
        scheme, _, given = (request.headers.get("Authorization") or "").partition(" ")
        if not (scheme.lower() == "token" and hmac.compare_digest(given.strip().encode(),
                                                                  expected.encode())):
            return connection.respond(403, "The shell needs the task's token (connect "
                                           "through the master's proxy)\n")
    if "websocket" not in (request.headers.get("Upgrade") or "").lower():
        return connection.respond(200, "The shell server is ready: open a terminal over "
                                       "a websocket (`det shell open ID`)\n")
    return None


def main(argv: Optional[List[str]] = None) -> None:
    from websockets.sync.server import serve

    parser = argparse.ArgumentParser(prog="python -m determined.tasks.shell")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--workdir", default=os.getcwd())
    args = parser.parse_args(argv)
    from determined.common.log_format import configure_logging

    configure_logging()
    with serve(lambda ws: _serve_connection(ws, args.workdir), args.host, args.port,
               max_size=None, process_request=_check_token) as server:
        logger.info("shell server listening on %s:%d", args.host, args.port)
        server.serve_forever()


if __name__ == "__main__":
    main()
