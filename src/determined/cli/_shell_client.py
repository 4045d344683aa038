"""The terminal side of ``det shell open``: the local terminal joined to a shell task's
PTY over a websocket through the master's proxy (see ``determined.tasks.shell``).

In a terminal, the local tty is put in raw mode (keys such as Ctrl-C go to the remote
shell); the window's size goes with the connection (the shell starts with it) and its
changes are sent as ``{"resize": [rows, cols]}``. Without a
terminal (a pipe), the task runs stdin as a script (no prompts or echo: ``?batch=1``)
and its output is copied to stdout. Either way the shell's exit code is returned (``det``
exits with it, as ssh does).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
from typing import Any

__all__ = ["open_shell"]


def _window_size() -> os.terminal_size:
    """The terminal's own size (what its window shows), read from the terminal itself:
    ``COLUMNS``/``LINES`` in the environment (``shutil``'s first choice) go stale when
    the window is resized, and the remote shell must match the window."""
    for stream in (sys.stdin, sys.stdout):
        try:
            size = os.get_terminal_size(stream.fileno())
        except (OSError, ValueError, AttributeError):
            continue
        if size.columns and size.lines:
            return size
    return shutil.get_terminal_size()


def open_shell(master_url: str, task_id: str, token: str) -> int:
    """Run an interactive session in shell task ``task_id``; returns when it ends."""
    from websockets.sync.client import connect

    url = master_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
    interactive = sys.stdin.isatty()
    size = _window_size()
    query = f"?rows={size.lines}&cols={size.columns}" if interactive else "?batch=1"
    ws = connect(f"{url}/proxy/{task_id}/{query}",
                 additional_headers={"Authorization": f"Bearer {token}"}, max_size=None)
    old: Any = None
    stdin_fd = sys.stdin.fileno()
    if interactive:
        import termios
        import tty

        old = termios.tcgetattr(stdin_fd)
        tty.setraw(stdin_fd)

        def resize(*_: Any) -> None:
            size = _window_size()
            try:
                ws.send(json.dumps({"resize": [size.lines, size.columns]}))
            except Exception:
                pass

        signal.signal(signal.SIGWINCH, resize)

    def pump_stdin() -> None:
        try:
            while True:
                data = os.read(stdin_fd, 4096)
                if not data:
                    if not interactive:
                        ws.send(b"\x04")  # end of input: Ctrl-D to the shell
                    return
                ws.send(data)
        except Exception:
            return

    threading.Thread(target=pump_stdin, daemon=True).start()
    out = sys.stdout.buffer
    code = 0
    try:
        for message in ws:
            if isinstance(message, str):  # the last one: {"exit": N}
                code = int(json.loads(message).get("exit", 0))
                code = 128 - code if code < 0 else code  # killed by a signal, as a shell says
                continue
            out.write(message if isinstance(message, bytes) else message.encode())
            out.flush()
    except Exception:
        pass
    finally:
        if interactive and old is not None:
            import termios

            termios.tcsetattr(stdin_fd, termios.TCSADRAIN, old)
        ws.close()
    return code
