"""Reading a password from a person: ``det user`` and ``determined-master --set-password``."""

from __future__ import annotations

import getpass
import sys

from determined.errors import DeterminedError

__all__ = ["PasswordInputError", "PromptCanceled", "ask_password", "read_password"]


class PasswordInputError(DeterminedError, ValueError):
    """No usable password was read: the input ended, the two entries differ, or a blank
    one where a blank one is refused."""


class PromptCanceled(DeterminedError):
    """Ctrl-D (end of input) or Ctrl-C at a password prompt: the command stops there
    and sends nothing. ``str()`` is ``"<action> canceled"``; ``interrupted``: Ctrl-C."""

    def __init__(self, action: str, interrupted: bool):
        super().__init__(f"{action} canceled")
        self.action = action
        self.interrupted = interrupted


def ask_password(prompt: str, action: str) -> str:
    """A ``getpass`` prompt on the terminal. Ctrl-D or Ctrl-C there ends the line the
    prompt is on (getpass does not) and raises :class:`PromptCanceled` for ``action``
    (``"login"``).

    Raises:
        PromptCanceled: the person pressed Ctrl-D or Ctrl-C instead of answering.
    """
    try:
        return getpass.getpass(prompt)
    except EOFError:
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    sys.stderr.write("\n")
    sys.stderr.flush()
    raise PromptCanceled(action, interrupted) from None


def read_password(prompt: str, *, outcome: str, action: str, confirm: bool = False,
                  blank_refused: str = "", eof_is_blank: bool = False) -> str:
    """A password from a ``getpass`` prompt on a terminal (asked twice with ``confirm``),
    else from one line of stdin (without its line end).

    Args:
        prompt: the prompt on a terminal.
        outcome: what the errors add about the consequence ("nothing was changed").
        action: what a Ctrl-D or Ctrl-C at the prompt cancels ("login").
        confirm: on a terminal, ask a second time and compare.
        blank_refused: when set, a blank password is an error, with this hint (how to
            set a blank one on purpose); when empty, a blank password is returned.
        eof_is_blank: stdin (not a terminal) that ends before a line gives a blank
            password instead of an error (``det user login </dev/null``: 0.13's default
            users have blank passwords, and scripts log in that way).

    Raises:
        PasswordInputError: piped stdin ended before a line (``</dev/null``), the
            entries differ, or a refused blank password.
        PromptCanceled: Ctrl-D or Ctrl-C at a prompt on a terminal.

    Example:
        >>> read_password("New password: ", outcome="nothing was changed",  # doctest: +SKIP
        ...               action="password change", confirm=True,
        ...               blank_refused="use --password ''")
    """
    if sys.stdin is None or not sys.stdin.isatty():
        line = sys.stdin.readline() if sys.stdin is not None else ""
        if not line and not eof_is_blank:  # end of input: not even an empty line
            raise PasswordInputError(f"No password on stdin (it ended before a line); "
                                     f"{outcome}")
        password = line.rstrip("\r\n")
    else:
        password = ask_password(prompt, action)
        again = ask_password("Confirm password: ", action) if confirm else password
        if again != password:
            raise PasswordInputError(f"The passwords do not match; {outcome}")
    if not password and blank_refused:
        raise PasswordInputError(f"The password read is blank; {outcome} ({blank_refused})")
    return password
