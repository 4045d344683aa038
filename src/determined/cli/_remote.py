"""Helpers for commands that talk to a master: the client, id lists, flags (tables, CSV
and JSON: ``_table.py``, re-exported here)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, List, NoReturn

import yaml

from determined.cli._table import (cell, compact, csv_text, human_time, print_rows, table_text,
                                   terminal_width)
from determined.common.api import APIError, MasterClient
from determined.errors import InvalidConfigError, MasterError

__all__ = [
    "read_config_text",
    "add_format_flags",
    "add_local_flags",
    "cell",
    "client",
    "compact",
    "csv_text",
    "id_list",
    "is_local",
    "output_dir",
    "print_rows",
    "route_name",
    "sdk",
    "human_time",
    "table_text",
    "terminal_width",
    "unreachable_hint",
    "usage_error",
]


def client(args: argparse.Namespace) -> MasterClient:
    """A client of ``-m`` logged in as ``-u`` (or the cached user, else ``determined``);
    with ``--local``/``--local-dir``, a reader of the local directory's records that
    answers the same calls with the same JSON (``determined.local.LocalClient``)."""
    from determined.common.api import Authenticator

    if is_local(args):
        from determined.local import LocalClient

        return LocalClient(getattr(args, "local_dir", None))  # type: ignore[return-value]
    auth = Authenticator(args.master, user=getattr(args, "user", None))
    return MasterClient(args.master, auth=auth)


def is_local(args: argparse.Namespace) -> bool:
    """Whether the command reads local experiments (``--local`` or ``--local-dir``)."""
    return bool(getattr(args, "local", False) or getattr(args, "local_dir", None))


def add_local_flags(parser: argparse.ArgumentParser) -> None:
    """``--local`` and ``--local-dir``: read the records of local experiments instead of
    asking a master."""
    parser.add_argument("--local", action="store_true",
                        help="read local experiments (those run with --local), no master")
    parser.add_argument("--local-dir", default=None,
                        help="implies --local: the local directory "
                             "(default $DET_LOCAL_DIR or ~/.determined/local)")


def sdk(args: argparse.Namespace) -> Any:
    """The Python SDK's ``Determined`` for ``-m``/``-u``, or for the local directory."""
    from determined.experimental import Determined

    if is_local(args):
        return Determined.local(getattr(args, "local_dir", None))
    return Determined(args.master, user=getattr(args, "user", None))


def unreachable_hint(e: APIError, local: str = "run the experiment on this machine") -> APIError:
    """No answer from the master: say how to start one, or what ``--local`` does here."""
    if e.status is None:
        return APIError(f"{e}\nStart a master with `det deploy local up`, or {local} with --local")
    return e


def usage_error(message: str) -> NoReturn:
    """A bad argument combination: ``det: error: ...`` on stderr (folded at a terminal's
    width, as every det error) and exit status 2 (as argparse)."""
    from determined.cli._errors import error_text, error_width

    print(error_text(message, error_width()), file=sys.stderr)
    raise SystemExit(2)


def route_name(kind: str, name: str) -> str:
    """``name`` of a ``kind`` (a model, a template) if the master's routes can carry it
    (1-255 characters, no '/'), else a usage error naming it (a '/' made a "no API
    route" error, an empty name a redirect error)."""
    if not name.strip() or "/" in name or len(name) > 255:
        usage_error(f"Expected a {kind} name of 1-255 characters without '/'. "
                    f"Received: {name!r}")
    return name


def output_dir(text: str) -> str:
    """argparse type of ``-o/--output-dir``: a directory, or a path where one can be made
    (its nearest existing parent is a directory), not a file."""
    import os

    probe = os.path.abspath(text)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        where = "a file" if probe == os.path.abspath(text) else f"{probe!r} is a file"
        raise argparse.ArgumentTypeError(
            f"Expected a directory (or one to create). Received: {text!r}, {where}")
    return text


def id_list(text: str) -> List[int]:
    """argparse type of ``IDS``: comma-separated positive integers (``1,2,5``)."""
    ids: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise argparse.ArgumentTypeError(
                f"Expected comma-separated experiment ids such as 1,2,3. Received: {text!r}")
        ids.append(int(part))
    return ids


def add_format_flags(parser: argparse.ArgumentParser, csv_flag: bool = True,
                     suppress: bool = False) -> argparse._MutuallyExclusiveGroup:
    """``--json`` and (optionally) ``--csv``, mutually exclusive. ``suppress``: no
    default, so a flag given to the parent command (``det agent --json list``) holds."""
    group = parser.add_mutually_exclusive_group()
    default = argparse.SUPPRESS if suppress else False
    group.add_argument("--json", action="store_true", default=default,
                       help="print JSON (for scripts)")
    if csv_flag:
        group.add_argument("--csv", action="store_true", default=default,
                           help="print CSV (for scripts)")
    return group


def read_config_text(path: str) -> str:
    """The config file's text, checked to be YAML here (the master validates the rest)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InvalidConfigError([("", f"cannot read it: {e.strerror}")],
                                 source=f"config file {path}") from None
    except UnicodeDecodeError as e:
        raise MasterError(f"config file {path} is not UTF-8 text ({e.reason} at byte "
                          f"{e.start}); save it as UTF-8") from None
    try:
        yaml.safe_load(text)
    except yaml.YAMLError as e:
        from determined.config import yaml_error_text  # pydantic: only on this path

        raise InvalidConfigError([("", f"not valid YAML: {yaml_error_text(e)}")],
                                 source=f"config file {path}") from None
    return text
