"""``det``: argument parsing and dispatch. Handlers live in one module per noun.

Global flags (``-m/--master``, ``-u/--user``) work before or after the command
(``det e list -m URL``). Errors are one line on stderr (``det: error: ...``), never a
traceback; ``DET_DEBUG=1`` shows the traceback of an unexpected one. Shell completion:
``eval "$(register-python-argcomplete det)"`` (argcomplete).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import Any, Callable, List, NoReturn, Optional

import determined
from determined.common.password import PromptCanceled
from determined.cli._errors import error_text, error_width, fold_error, with_list_hint
from determined.errors import DeterminedError

__all__ = ["main", "build_parser", "NOUN_MODULES"]

#: Modules that each add one noun (or more) with ``add_parser(nouns)``; a new command
#: module only needs a line here.
NOUN_MODULES = [
    "determined.cli._experiment",
    "determined.cli._preview",
    "determined.cli._trial",
    "determined.cli._checkpoint",
    "determined.cli._cluster",
    "determined.cli._deploy",
    "determined.cli._user",
    "determined.cli._model",
    "determined.cli._template",
    "determined.cli._tasks",
]


def _master_default() -> str:
    return os.environ.get("DET_MASTER") or os.environ.get("DET_MASTER_ADDR") or "localhost:8080"


def _global_flags(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """``-m/--master`` and ``-u/--user``, each unless the parser has one of its spellings."""
    default: Callable[[Any], Any] = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
    taken = parser._option_string_actions
    if not {"-m", "--master"} & set(taken):
        parser.add_argument("-m", "--master", default=default(_master_default()),
                            help="master address (default: $DET_MASTER or localhost:8080)")
    if not {"-u", "--user"} & set(taken):
        parser.add_argument("-u", "--user", default=default(None),
                            help="act as this user for this command (default: the last one "
                                 "logged in, else determined); see `det user login`")


def _share_global_flags(parser: argparse.ArgumentParser) -> None:
    """Accept the global flags in every sub-command too (default: the top level's)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                _global_flags(sub, suppress=True)
                _share_global_flags(sub)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its errors folded at a terminal's width as det's other errors
    (sub-commands' parsers are of this class too)."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A sub-command group (not ``det`` itself) given none of its actions lists
        them (cli/_actions.py), as it does when given no action."""
        if (isinstance(action, argparse._SubParsersAction) and self.prog != "det"
                and value not in action.choices):
            from determined.cli._actions import not_an_action_text

            self.exit(2, not_an_action_text(self, action, str(value)) + "\n")
        super()._check_value(action, value)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        """A sub-command's parser refuses what it does not know itself, so that the
        error shows that sub-command's usage (``det experiment list: error:
        unrecognized arguments: --bogus``), not ``det``'s. (Its parents would only
        refuse them later: every option a parent knows, a sub-command knows too.)"""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self.prog != "det" and not os.environ.get("_ARGCOMPLETE"):
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, fold_error(f"{self.prog}: error: {message}", error_width()) + "\n")


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = _Parser(
        prog="det",
        description="Determined: run and track deep-learning experiments.",
    )
    _global_flags(parser, suppress=False)
    parser.add_argument("-v", "--version", action="version",
                        version=f"det {determined.__version__}")
    nouns = parser.add_subparsers(dest="noun", metavar="COMMAND")
    for name in NOUN_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:  # a module that is there but fails to import
                raise
            continue
        module.add_parser(nouns)
    from determined.cli import _cluster

    version = nouns.add_parser("version", help="print the client's and the master's versions")
    version.set_defaults(func=_cluster.version)
    _share_global_flags(parser)
    from determined.cli._actions import list_actions_when_none

    list_actions_when_none(parser)
    return parser


def _one_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on
    the write end): only then is a ``BrokenPipeError`` the reader going away rather
    than a failure inside the command."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return True  # no poll here (or no stdout): keep the quiet ending


def _reader_went_away() -> int:
    """``det ... | head``: the reader closed the pipe. End quietly, as a command killed
    by SIGPIPE would (exit status 141), with nothing left to flush."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    try:
        import argcomplete

        argcomplete.autocomplete(parser)
    except ImportError:  # completion is a convenience
        pass
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise
        return _reader_went_away()
    except PromptCanceled as e:  # Ctrl-D (1) or Ctrl-C (130) at a password prompt
        print(f"det: {e}", file=sys.stderr)
        return 130 if e.interrupted else 1
    except DeterminedError as e:
        message = str(e)
        if getattr(e, "status", None) == 404:
            message = with_list_hint(message)
        print(error_text(message, error_width()), file=sys.stderr)
        return 1
    except KeyboardInterrupt as interrupt:
        if not getattr(interrupt, "reported", False):  # a local run said what it left
            print("det: interrupted", file=sys.stderr)
        return 130
    except EOFError:  # Ctrl-D at a prompt
        print("det: error: no input (end of file at a prompt); nothing was changed",
              file=sys.stderr)
        return 1
    except UnicodeDecodeError as e:
        print(f"det: error: a file is not UTF-8 text ({e.reason} at byte {e.start})",
              file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - one line, never a traceback
        if os.environ.get("DET_DEBUG"):
            raise
        print(f"det: error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1
    finally:
        if argv is None:
            # Run as the program (``det``): the process exits next, so what it allocated
            # needs no collecting (files and the database are closed by now), and the
            # collector's pass over it at interpreter exit took 0.1-0.6 s (SQLAlchemy,
            # pydantic, rich objects). A caller passing ``argv`` goes on running: its
            # objects stay collectable.
            gc.freeze()
