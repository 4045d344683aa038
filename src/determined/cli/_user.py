"""``det user|u list | login [NAME] | logout | whoami | create NAME [--admin] | activate NAME
| deactivate NAME | change-password [NAME] | rename OLD NEW | link-with-agent-user NAME
--agent-uid UID --agent-gid GID --agent-user USER --agent-group GROUP`` (SPEC 6.4).

Passwords come from ``--password``, else one line of piped stdin, else a ``getpass``
prompt. For a new password, stdin that ends before a line is an error, and so is a
blank one read that way (``--password ''`` sets one on purpose); ``login`` reads either
as a blank password (0.13's default users have one; scripts log in with ``</dev/null``). Session tokens are cached in
``$DET_AUTH_DIR/auth.json`` (default ``~/.determined``); ``det -u NAME ...`` picks the
user of any command.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from determined.cli._remote import client, print_rows
from determined.common.api import APIError, Authenticator, MasterClient, TokenCache
from determined.common.api._client import user_path
from determined.common.password import read_password
from determined.errors import DeterminedError
from determined.cli._argtypes import count

__all__ = ["add_parser"]


def add_parser(nouns: Any) -> None:
    user = nouns.add_parser("user", aliases=["u"], help="users, login and logout")
    verbs = user.add_subparsers(dest="verb", metavar="ACTION")

    lst = verbs.add_parser("list", help="list users")
    for p in (user, lst):
        fmt = p.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true", help="print JSON (for scripts)")
        fmt.add_argument("--csv", action="store_true", help="print CSV (for scripts)")
        p.set_defaults(func=_list)

    login = verbs.add_parser("login", help="log in (default user: -u, else determined)")
    login.add_argument("username", nargs="?", default=None)
    _password_flag(login)
    login.set_defaults(func=_login)
    verbs.add_parser("logout", help="end the session of the current user").set_defaults(
        func=_logout)
    verbs.add_parser("whoami", help="print the current user").set_defaults(func=_whoami)

    create = verbs.add_parser("create", help="create a user (admins only)")
    create.add_argument("username")
    create.add_argument("--admin", action="store_true", help="give the user admin rights")
    create.add_argument("--password", default="", help="initial password (default: blank)")
    create.set_defaults(func=_create)
    for verb, active in (("activate", True), ("deactivate", False)):
        p = verbs.add_parser(verb, help=f"{verb} a user (admins only)")
        p.add_argument("username")
        p.set_defaults(func=_set_active, active=active)

    change = verbs.add_parser("change-password",
                              help="change your password, or a user's (admins only)")
    change.add_argument("username", nargs="?", default=None)
    _password_flag(change, "the new password")
    change.set_defaults(func=_change_password)

    rename = verbs.add_parser("rename", help="rename a user (admins only)")
    rename.add_argument("old_name")
    rename.add_argument("new_name")
    rename.set_defaults(func=_rename)

    link = verbs.add_parser(
        "link-with-agent-user",
        help="record the POSIX user and group a user's work runs as on agents (admins "
             "only; recorded and shown by `det user list`: trials and tasks here run as "
             "the agent process's own user)")
    link.add_argument("det_username")
    link.add_argument("--agent-uid", type=count, required=True, help="the POSIX user id")
    link.add_argument("--agent-gid", type=count, required=True, help="the POSIX group id")
    link.add_argument("--agent-user", required=True, help="the POSIX user name")
    link.add_argument("--agent-group", required=True, help="the POSIX group name")
    link.set_defaults(func=_link_with_agent_user)


def _password_flag(p: argparse.ArgumentParser, what: str = "the password") -> None:
    p.add_argument("--password", default=None,
                   help=f"{what} (default: one line of piped stdin, else a prompt)")


def _read_password(args: argparse.Namespace, prompt: str, outcome: str, action: str,
                   new: bool = False) -> str:
    """``--password``, else what :func:`read_password` reads; a ``new`` one is asked
    twice on a terminal and may not be blank unless given by ``--password ''``."""
    if args.password is not None:
        return str(args.password)
    return read_password(prompt, outcome=outcome, action=action, confirm=new,
                         blank_refused="to set a blank one on purpose: --password ''"
                         if new else "", eof_is_blank=not new)


def _agent_text(group: Any) -> str:
    if not group:
        return ""
    return (f"{group['agent_user']}:{group['agent_group']} "
            f"({group['agent_uid']}:{group['agent_gid']})")


def _list(args: argparse.Namespace) -> int:
    with client(args) as c:
        rows = c.list_users()
    if not (args.json or args.csv):
        rows = [{**r, "agent_user_group": _agent_text(r.get("agent_user_group"))}
                for r in rows]
    elif args.csv:
        rows = [{**r, **(r.get("agent_user_group") or {})} for r in rows]
    columns = ["username", "admin", "active"]
    if args.csv:
        columns += ["agent_uid", "agent_gid", "agent_user", "agent_group"]
    elif any(r.get("agent_user_group") for r in rows):
        columns.append("agent_user_group")
    print_rows(rows, columns, args)
    return 0


def _link_with_agent_user(args: argparse.Namespace) -> int:
    for flag, value in (("--agent-user", args.agent_user), ("--agent-group", args.agent_group)):
        if not value:
            raise DeterminedError(f"{flag} must not be empty")
    group = {"agent_uid": args.agent_uid, "agent_gid": args.agent_gid,
             "agent_user": args.agent_user, "agent_group": args.agent_group}
    with client(args) as c:
        c.patch_user(args.det_username, agent_user_group=group)
    print(f"Linked user {args.det_username!r} with agent user {_agent_text(group)}")
    return 0


def _login(args: argparse.Namespace) -> int:
    name = args.username or args.user or "determined"
    auth = Authenticator(args.master, user=name, activate=True)  # the default user from now
    auth.login(_read_password(args, f"Password for user {name!r}: ", "not logged in", "login"))
    print(f"Logged in as user {name!r}")
    return 0


def _logout(args: argparse.Namespace) -> int:
    auth = Authenticator(args.master, user=args.user)
    token = auth.cache.get(auth.master, auth.username)
    if token is None:
        print(f"User {auth.username!r} is not logged in to {auth.master}")
        return 0
    try:
        with MasterClient(auth.master, token=token) as c:
            c.logout()
    except APIError as e:
        if e.status != 401:  # 401: the session had ended already
            print(f"det: warning: the master did not end the session: {e}", file=sys.stderr)
    auth.forget()
    print(f"Logged out user {auth.username!r}")
    return 0


def _whoami(args: argparse.Namespace) -> int:
    with client(args) as c:
        me = c.me()
    print(f"You are logged in as user {me['username']!r}" + (" (admin)" if me["admin"] else ""))
    return 0


def _create(args: argparse.Namespace) -> int:
    with client(args) as c:
        c.create_user(args.username, admin=args.admin, password=args.password)
    print(f"Created user {args.username!r}" + (" (admin)" if args.admin else ""))
    return 0


def _set_active(args: argparse.Namespace) -> int:
    with client(args) as c:
        c.patch_user(args.username, active=args.active)
    print(f"User {args.username!r} is {'active' if args.active else 'deactivated'}")
    return 0


def _change_password(args: argparse.Namespace) -> int:
    with client(args) as c:
        name = args.username or c.username
        if args.password is None:  # a user not there, or not to be changed by you: first
            c.request("POST", user_path(name) + "/password", params={"dry_run": "true"})
        c.set_password(name, _read_password(args, f"New password for user {name!r}: ",
                                            "nothing was changed", "password change",
                                            new=True))
    print(f"Changed the password of user {name!r}")
    return 0


def _rename(args: argparse.Namespace) -> int:
    with client(args) as c:
        c.patch_user(args.old_name, username=args.new_name)
        TokenCache().rename(c.url, args.old_name, args.new_name)
    print(f"Renamed user {args.old_name!r} to {args.new_name!r}")
    return 0
