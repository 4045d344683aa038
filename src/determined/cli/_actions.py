"""A command group given no action (``det trial``, ``det e label``, ``det deploy local``):
its usage and its actions, one line each, on stderr, and exit status 2 (a usage error,
as upstream 0.13's argparse gave, which printed only "the following arguments are
required"). Groups with an action of their own when given none (``det e`` lists
experiments, ``det master`` prints the config, as in 0.13) keep it.

A group given something that is not one of its actions (``det e label 1``: the id
before the action) lists them the same way, its last line naming what was given
(argparse's "invalid choice: '1' (choose from ...)" was one line, however long)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable, Iterator, List, Optional, Tuple

__all__ = ["list_actions_when_none", "actions_text", "not_an_action_text"]

#: The listing is never wider than this, even on a wider terminal.
MAX_WIDTH = 80


def _groups(parser: argparse.ArgumentParser) -> Iterator[
        Tuple[argparse.ArgumentParser, "argparse._SubParsersAction[Any]"]]:
    """Each parser below ``parser`` (itself included) that has sub-commands, once."""
    seen = set()
    todo = [parser]
    while todo:
        p = todo.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                yield p, action
                todo.extend(action.choices.values())


def list_actions_when_none(parser: argparse.ArgumentParser) -> None:
    """Give every group below ``parser`` without a default action of its own one that
    lists its actions (and make its action optional, so argparse does not stop first)."""
    for group, sub in _groups(parser):
        if group is parser:
            continue  # ``det`` alone prints its help
        sub.required = False
        if group.get_default("func") is None:
            group.set_defaults(func=_lister(group, sub))


def _lister(group: argparse.ArgumentParser,
            sub: "argparse._SubParsersAction[Any]") -> Callable[[argparse.Namespace], int]:
    def list_actions(args: argparse.Namespace) -> int:
        print(actions_text(group, sub, _stderr_width()), file=sys.stderr)
        return 2

    return list_actions


def _stderr_width() -> int:
    try:
        if sys.stderr.isatty():
            return min(MAX_WIDTH, os.get_terminal_size(sys.stderr.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        pass
    return MAX_WIDTH


def _fit(text: str, room: int) -> str:
    """``text`` in ``room`` columns: whole if it fits, else what comes before its first
    bracket or ``; `` if that fits, else cut after a word with an ellipsis."""
    if len(text) <= room:
        return text
    for mark in (" (", "; "):
        head = text.split(mark, 1)[0]
        if len(head) <= room:
            return head
    cut = text[:max(room - 1, 1)]
    if " " in cut.strip():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "\u2026"


def not_an_action_text(group: argparse.ArgumentParser,
                       sub: "argparse._SubParsersAction[Any]", given: str,
                       width: Optional[int] = None) -> str:
    """As :func:`actions_text`, the last line saying that ``given`` is none of them (an
    id given first: where the id goes, after the first action)."""
    metavar = sub.metavar or "ACTION"
    error = f"{group.prog}: error: {given!r} is not a{_n(metavar)} {metavar.lower()}"
    names = [str(a.metavar or a.dest).split(" (")[0] for a in sub._choices_actions]
    if given.isdigit() and names:
        example = "describe" if "describe" in names else names[0]
        error += (f"; the {metavar.lower()} comes before the id "
                  f"(`{group.prog} {example} {given} ...`)")
    from determined.cli._errors import fold_error

    width = _stderr_width() if width is None else width
    return actions_text(group, sub, width, error=fold_error(error, width))


def _n(word: str) -> str:
    return "n" if word[:1].lower() in "aeiou" else ""


def actions_text(group: argparse.ArgumentParser, sub: "argparse._SubParsersAction[Any]",
                 width: int = MAX_WIDTH, error: Optional[str] = None) -> str:
    """The usage of ``group``, its actions with their help (a line each, aliases in
    brackets as ``-h`` shows them) and what was missing (or ``error``), no line wider
    than ``width``."""
    width = min(width, MAX_WIDTH)
    metavar = sub.metavar or "ACTION"
    rows: List[Tuple[str, Optional[str]]] = [
        (str(a.metavar or a.dest), a.help) for a in sub._choices_actions]
    name_width = max((len(name) for name, _ in rows), default=0)
    lines = [_usage(group, width), "", f"{metavar.lower()}s:"]
    for name, help_text in rows:
        line = f"  {name.ljust(name_width)}"
        if help_text and help_text != argparse.SUPPRESS:
            line += "  " + _fit(help_text, width - len(line) - 2)
        lines.append(line.rstrip())
    lines += ["", error or f"{group.prog}: error: {metavar} is required"]
    return "\n".join(lines)


def _usage(group: argparse.ArgumentParser, width: int) -> str:
    """``usage: ...`` wrapped at ``width`` (argparse wraps at the terminal's width)."""
    formatter = group.formatter_class(prog=group.prog, width=width)
    formatter.add_usage(group.usage, group._actions, group._mutually_exclusive_groups)
    return formatter.format_help().rstrip("\n")
