"""Reading a password from a person: ``det user`` and ``determined-master --set-password``."""

from __future__ import annotations

import getpass
import sys

from determined.errors import DeterminedError

__all__ = ["PasswordInputError", "read_password"]


class PasswordInputError(DeterminedError, ValueError):
    """No usable password was read: the input ended, the two entries differ, or a blank
    one where a blank one is refused."""


def read_password(prompt: str, *, outcome: str, confirm: bool = False,
                  blank_refused: str = "", eof_is_blank: bool = False) -> str:
    """A password from a ``getpass`` prompt on a terminal (asked twice with ``confirm``),
    else from one line of stdin (without its line end).

    Args:
        prompt: the prompt on a terminal.
        outcome: what the errors add about the consequence ("nothing was changed").
        confirm: on a terminal, ask a second time and compare.
        blank_refused: when set, a blank password is an error, with this hint (how to
            set a blank one on purpose); when empty, a blank password is returned.
        eof_is_blank: stdin (not a terminal) that ends before a line gives a blank
            password instead of an error (``det user login </dev/null``: 0.13's default
            users have blank passwords, and scripts log in that way).

    Raises:
        PasswordInputError: stdin ended before a line (``</dev/null``, Ctrl-D), the
            entries differ, or a refused blank password.

    Example:
        >>> read_password("New password: ", outcome="nothing was changed",  # doctest: +SKIP
        ...               confirm=True, blank_refused="use --password ''")
    """
    if sys.stdin is None or not sys.stdin.isatty():
        line = sys.stdin.readline() if sys.stdin is not None else ""
        if not line and not eof_is_blank:  # end of input: not even an empty line
            raise PasswordInputError(f"No password on stdin (it ended before a line); "
                                     f"{outcome}")
        password = line.rstrip("\r\n")
    else:
        try:
            password = getpass.getpass(prompt)
            again = getpass.getpass("Confirm password: ") if confirm else password
        except EOFError:  # Ctrl-D at the prompt
            raise PasswordInputError(f"No password given (end of input); {outcome}") from None
        if again != password:
            raise PasswordInputError(f"The passwords do not match; {outcome}")
    if not password and blank_refused:
        raise PasswordInputError(f"The password read is blank; {outcome} ({blank_refused})")
    return password
