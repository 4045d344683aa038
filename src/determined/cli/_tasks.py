"""``det task``, ``det command|cmd``, ``det notebook``, ``det shell``, ``det tensorboard``.

Tasks run on the cluster next to trials (see ``master/tasks``); services are reached
through the master's proxy at ``MASTER/proxy/<id>/``. ``open`` prints that URL with a
one-time login parameter (and opens a browser when run in a terminal).
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import time
from typing import Any, Dict, List, Optional

from determined.cli._remote import (
    add_format_flags,
    client,
    print_rows,
    read_config_text,
    usage_error,
)
from determined.common.api._log_tail import PAGE, LogTail, follow_log
from determined.cli._waiting import wait_details, with_waiting
from determined.cli._argtypes import count, positive_int

__all__ = ["add_parser"]

TASK_COLUMNS = ["id", "kind", "owner", "state", "description", "exit_code", "end_reason",
                "slots", "agent_id", "start_time", "end_time"]
#: What a narrow terminal leaves out of a task list first (its owner stays).
_TASK_DROP_FIRST = ["end_time", "start_time", "agent_id", "slots", "end_reason"]
_PATHS = {"notebook": "lab", "tensorboard": "", "shell": ""}


def add_parser(nouns: Any) -> None:
    task = nouns.add_parser("task", help="list every task (commands, notebooks, shells, "
                                         "TensorBoards)")
    verbs = task.add_subparsers(dest="verb", metavar="ACTION")
    lst = verbs.add_parser("list", aliases=["ls"], help="list tasks of every user")
    add_format_flags(lst)
    lst.set_defaults(func=_task_list)

    command = nouns.add_parser("command", aliases=["cmd"], help="run commands on a slot")
    cverbs = command.add_subparsers(dest="verb", metavar="ACTION")
    run = cverbs.add_parser("run", help="run a command in the uploaded context directory; "
                                        "prints its output and exits with its exit code")
    run.add_argument("entrypoint", nargs=argparse.REMAINDER, metavar="ENTRYPOINT",
                     help="the command and its arguments (one argument runs in sh -c)")
    _start_flags(run, browser=False)
    run.set_defaults(func=_command_run, kind="command")
    _common_verbs(cverbs, "command")

    notebook = nouns.add_parser("notebook", help="JupyterLab on a slot, behind the proxy")
    nverbs = notebook.add_subparsers(dest="verb", metavar="ACTION")
    start = nverbs.add_parser("start", help="start JupyterLab in the context directory")
    _start_flags(start, browser=True)
    start.set_defaults(func=_service_start, kind="notebook")
    _open_verb(nverbs, "notebook")
    _common_verbs(nverbs, "notebook")

    shell = nouns.add_parser("shell", help="interactive shells on a slot, over the master")
    sverbs = shell.add_subparsers(dest="verb", metavar="ACTION")
    sstart = sverbs.add_parser("start", help="start a shell task and open a terminal in it")
    _start_flags(sstart, browser=False)
    _ssh_opts(sstart)
    sstart.add_argument("-p", "--passphrase", action="store_true",
                        help="accepted for 0.13 compatibility, no effect: the terminal goes "
                             "over the master's websocket, there is no SSH key to protect")
    sstart.set_defaults(func=_service_start, kind="shell")
    sopen = sverbs.add_parser("open", help="open a terminal in a running shell task")
    sopen.add_argument("id")
    _ssh_opts(sopen)
    sopen.set_defaults(func=_shell_open, kind="shell")
    _common_verbs(sverbs, "shell")

    tb = nouns.add_parser("tensorboard", help="TensorBoard over experiments' trials")
    tverbs = tb.add_subparsers(dest="verb", metavar="ACTION")
    tstart = tverbs.add_parser("start", help="start TensorBoard over the trials of "
                                             "experiments (or of single trials)")
    tstart.add_argument("experiment_ids", nargs="*", type=positive_int, metavar="EXP_ID")
    tstart.add_argument("-t", "--trial-ids", nargs="+", type=positive_int, default=[], metavar="ID",
                        help="trials to show (besides every trial of EXP_IDs)")
    tstart.add_argument("--config-file", default=None, help="a task config (YAML)")
    tstart.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="set a task config field (e.g. idle_timeout=600)")
    tstart.add_argument("--no-browser", action="store_true", help="only print the URL")
    tstart.add_argument("-d", "--detach", action="store_true",
                        help="print the task id and return at once")
    _volume_flag(tstart)
    tstart.set_defaults(func=_service_start, kind="tensorboard", context=None, template=None)
    _open_verb(tverbs, "tensorboard")
    _common_verbs(tverbs, "tensorboard")


def _start_flags(p: argparse.ArgumentParser, browser: bool) -> None:
    p.add_argument("-c", "--context", default=None, metavar="DIR",
                   help="upload this directory as the task's working directory")
    p.add_argument("--config-file", default=None, help="a task config (YAML)")
    p.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                   help="set a task config field (e.g. resources.slots=2); repeatable")
    p.add_argument("--template", default=None, help="start from this config template")
    p.add_argument("-d", "--detach", action="store_true",
                   help="print the task id and return at once")
    if browser:
        p.add_argument("--no-browser", action="store_true", help="only print the URL")
    _volume_flag(p)


def _volume_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("-v", "--volume", action="append", default=[], metavar="HOST:CONTAINER",
                   help="make the absolute HOST path (on the agent's machine) reachable as "
                        "CONTAINER inside the task's working directory (a symbolic link: "
                        "no containers); repeatable")


def _ssh_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("ssh_opts", nargs="*", metavar="SSH_OPT",
                   help="accepted for 0.13 compatibility and ignored: the terminal goes "
                        "over the master's websocket, not ssh")


def _warn_ssh(args: argparse.Namespace) -> None:
    if getattr(args, "ssh_opts", None):
        print(f"det: note: ssh options {' '.join(args.ssh_opts)} are ignored: shells here "
              "are reached over the master's websocket, not ssh", file=sys.stderr)


def volumes(values: List[str]) -> List[Dict[str, str]]:
    """``-v HOST:CONTAINER`` values as ``bind_mounts`` entries (clear errors otherwise)."""
    mounts = []
    for value in values:
        parts = value.split(":")
        if len(parts) != 2 or not all(parts):
            usage_error(f"-v/--volume: expected HOST:CONTAINER (two paths, one ':'). "
                        f"Received: {value!r}")
        host, container = parts
        if not os.path.isabs(host):
            usage_error(f"-v/--volume {value}: HOST must be an absolute path on the agent's "
                        "machine")
        mounts.append({"host_path": host, "container_path": container})
    return mounts


def _open_verb(verbs: Any, kind: str) -> None:
    p = verbs.add_parser("open", help=f"print the {kind}'s URL (and open a browser)")
    p.add_argument("id")
    p.add_argument("--no-browser", action="store_true", help="only print the URL")
    p.set_defaults(func=_open, kind=kind)


def _common_verbs(verbs: Any, kind: str) -> None:
    lst = verbs.add_parser("list", aliases=["ls"], help=f"list {kind} tasks")
    lst.add_argument("-q", "--quiet", action="store_true", help="only the ids")
    lst.add_argument("-a", "--all", action="store_true", help="every user's, not only yours")
    add_format_flags(lst)
    lst.set_defaults(func=_list, kind=kind)
    cfg = verbs.add_parser("config", help="print a task's config (YAML)")
    cfg.add_argument("id")
    cfg.set_defaults(func=_config, kind=kind)
    logs = verbs.add_parser("logs", help="print a task's output")
    logs.add_argument("id")
    logs.add_argument("-f", "--follow", action="store_true", help="wait for new lines")
    logs.add_argument("--tail", type=count, default=None, metavar="N", help="only the last N lines")
    logs.set_defaults(func=_logs, kind=kind)
    kill = verbs.add_parser("kill", help="kill tasks (frees their slots)")
    kill.add_argument("ids", nargs="+", metavar="ID")
    kill.add_argument("-f", "--force", action="store_true", help="go on after an error")
    kill.set_defaults(func=_kill, kind=kind)


# -- helpers ---------------------------------------------------------------------------------


def _config_from_args(args: argparse.Namespace, api: Any) -> Dict[str, Any]:
    import yaml

    config: Dict[str, Any] = {}
    if getattr(args, "template", None):
        from determined.cli._template import fetch_template

        config = fetch_template(api, args.template)
    if args.config_file:
        loaded = yaml.safe_load(read_config_text(args.config_file)) or {}
        if not isinstance(loaded, dict):
            usage_error(f"{args.config_file}: expected a YAML mapping of task config fields")
        config = _merge(config, loaded)
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep or not key:
            usage_error(f"Expected --config KEY=VALUE. Received: {item!r}")
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                usage_error(f"--config {item}: {part} is not a mapping")
        node[parts[-1]] = yaml.safe_load(value)
    return config


def _merge(base: Dict[str, Any], over: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _context(args: argparse.Namespace) -> Optional[str]:
    if not getattr(args, "context", None):
        return None
    from determined.common.api import pack_context

    if not os.path.isdir(args.context):
        usage_error(f"-c/--context: {args.context} is not a directory")
    return base64.b64encode(pack_context(args.context)).decode("ascii")


def _token(args: argparse.Namespace) -> str:
    from determined.common.api import Authenticator

    return Authenticator(args.master, user=getattr(args, "user", None)).token()


def _url(api: Any, task: Dict[str, Any], token: Optional[str] = None) -> str:
    url = f"{api.url}/proxy/{task['id']}/{_PATHS.get(task['kind'], '')}"
    return f"{url}?det_token={token}" if token else url


def _create(args: argparse.Namespace, api: Any, body: Dict[str, Any],
            entrypoint: Optional[List[str]] = None) -> Dict[str, Any]:
    config = _config_from_args(args, api)
    mounts = volumes(getattr(args, "volume", None) or [])
    if mounts:
        config["bind_mounts"] = list(config.get("bind_mounts") or []) + mounts
    if entrypoint is not None:
        config["entrypoint"] = entrypoint
    body = dict(body, kind=args.kind, config=config)
    context = _context(args)
    if context:
        body["context"] = context
    return api.request("POST", "/tasks", json=body)


def _wait_ready(api: Any, task: Dict[str, Any], token: str, timeout: float = 300) -> None:
    """Wait until the task's service answers through the proxy (``timeout`` seconds from
    its start; a task queued for slots waits as long as it takes, saying why in one line,
    and again only when the master's reason changes). A task
    that ends first is reported (exit code, end reason, the tail of its log) with a
    non-zero exit."""
    deadline = time.monotonic() + timeout
    url = f"{api.url}/proxy/{task['id']}/{_PATHS.get(task['kind'], '')}"
    said_why: Optional[str] = None  # the master's last reason printed
    while time.monotonic() < deadline:
        state = api.request("GET", f"/tasks/{task['id']}")
        if state["state"] == "TERMINATED":
            _report_ended(api, state)
        if state["state"] == "PENDING":
            # Only a task the master says waits is queued; one without a reason is being
            # placed or started (every new task is PENDING for a moment).
            why = (state.get("waiting") or {}).get("detail")
            if why and why != said_why:
                _say_why_it_waits(state)
                said_why = why
            deadline = time.monotonic() + timeout
            time.sleep(0.5)
            continue
        if state["state"] == "RUNNING" and _answers(url, task["kind"], token):
            # The answer came from the service, but it may have ended since.
            state = api.request("GET", f"/tasks/{task['id']}")
            if state["state"] == "TERMINATED":
                _report_ended(api, state)
            return
        time.sleep(0.5)
    raise SystemExit(f"det: error: {task['kind']} {task['id']} did not answer within "
                     f"{timeout:.0f} s; see `det {task['kind']} logs {task['id']}`")


def _say_why_it_waits(task: Dict[str, Any]) -> None:
    """``<kind> <id> waits: <the master's detail>`` on stderr, if the task waits: one
    line (wrapped to the terminal's width on one)."""
    for line in wait_details(task["kind"], [task]):
        print(line, file=sys.stderr, flush=True)


def _answers(url: str, kind: str, token: str) -> bool:
    """Whether the service behind ``url`` answers itself: 2xx/3xx (the shell's server
    answers a plain GET with 200; an older one refused it with 400/426). The proxy's own
    404 (task ended) and 502 (not listening yet) do not count."""
    import httpx

    try:
        r = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=5)
    except httpx.HTTPError:
        return False
    return r.status_code < 400 or (kind == "shell" and r.status_code in (400, 426))


def _report_ended(api: Any, task: Dict[str, Any], tail: int = 20) -> None:
    """Exit with a message for a service task that ended before it was ready."""
    logs = api.request("GET", f"/tasks/{task['id']}/logs", params={"tail": tail})["logs"]
    code = task.get("exit_code")
    how = f"exited with code {code}" if code is not None else "ended"
    lines = [f"det: error: {task['kind']} {task['id']} {how} "
             f"({task.get('end_reason') or 'no reason given'}) before it was ready."]
    if logs:
        lines.append(f"The last {len(logs)} lines of its log "
                     f"(all: `det {task['kind']} logs {task['id']}`):")
        lines += ["  " + line["line"] for line in logs]
    raise SystemExit("\n".join(lines))


def _show_url(url: str, args: argparse.Namespace) -> None:
    print(url)
    if not getattr(args, "no_browser", False) and sys.stdout.isatty():
        import webbrowser

        webbrowser.open(url)


# -- handlers --------------------------------------------------------------------------------


def _task_list(args: argparse.Namespace) -> int:
    with client(args) as api:
        tasks = api.request("GET", "/tasks", params={"all": "true"})["tasks"]
    _print_tasks(tasks, args)
    return 0


def _print_tasks(tasks: List[Dict[str, Any]], args: argparse.Namespace) -> None:
    rows, columns = (tasks, TASK_COLUMNS) if args.json else with_waiting(tasks, TASK_COLUMNS)
    print_rows(rows, columns, args, drop_first=_TASK_DROP_FIRST)


def _list(args: argparse.Namespace) -> int:
    with client(args) as api:
        params = {"kind": args.kind, "all": "true" if args.all else "false"}
        tasks = api.request("GET", "/tasks", params=params)["tasks"]
    if args.quiet:
        for t in tasks:
            print(t["id"])
        return 0
    _print_tasks(tasks, args)
    return 0


def _config(args: argparse.Namespace) -> int:
    import yaml

    with client(args) as api:
        task = api.request("GET", f"/tasks/{args.id}")
    sys.stdout.write(yaml.safe_dump(task["config"], sort_keys=False))
    return 0


def _print_logs(api: Any, task_id: str, follow: bool, tail: Optional[int]) -> None:
    """Print (and follow, to its last stored line) a task's output, page by page."""
    path = f"/tasks/{task_id}/logs"
    log = LogTail(lambda after: api.request("GET", path, params={
                      "after_id": after, "limit": PAGE}),
                  lambda line: print(line["line"], flush=True))
    if tail is not None:  # the newest lines: they end a complete log
        page = api.request("GET", path, params={"tail": max(tail, 1)})
        log.take_newest(page["logs"], tail, page.get("complete"))
    if not follow:
        if tail is None:
            log.read_new()
        return
    follow_log(log, lambda: api.request("GET", f"/tasks/{task_id}")["state"] == "TERMINATED")


def _logs(args: argparse.Namespace) -> int:
    with client(args) as api:
        api.request("GET", f"/tasks/{args.id}")
        _print_logs(api, args.id, args.follow, args.tail)
    return 0


#: How long ``det <kind> kill`` waits for a killed task to end (SIGTERM, then SIGKILL);
#: the environment variable :data:`KILL_WAIT_ENV` overrides it.
KILL_WAIT_SECONDS = 60.0
KILL_WAIT_ENV = "DET_KILL_WAIT_SECONDS"


def _kill_wait_seconds() -> float:
    text = os.environ.get(KILL_WAIT_ENV)
    if text is None:
        return KILL_WAIT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        usage_error(f"{KILL_WAIT_ENV} must be a number of seconds, 0 or more. Received: {text!r}")
    return seconds


def _wait_ended(api: Any, task_id: str, timeout: float) -> Dict[str, Any]:
    """The task once TERMINATED, or its last state when ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while True:
        task = api.request("GET", f"/tasks/{task_id}")
        if task["state"] == "TERMINATED" or time.monotonic() >= deadline:
            return task
        time.sleep(0.2)


def _kill(args: argparse.Namespace) -> int:
    """Kill each task and wait until it has ended, so that a `det task list` right
    after no longer shows it running. One still running after the wait was killed all
    the same (the master SIGKILLs it after a grace): it is said, and no error (0.13's
    kill did not wait at all)."""
    wait = _kill_wait_seconds()
    failed = 0
    with client(args) as api:
        for task_id in args.ids:
            try:
                answer = api.request("POST", f"/tasks/{task_id}/kill")
                task = answer if answer.get("state") == "TERMINATED" else \
                    _wait_ended(api, task_id, wait)
            except Exception as e:
                if not args.force:
                    raise
                print(f"det: error: {task_id}: {e}", file=sys.stderr)
                failed += 1
                continue
            kind = task.get("kind") or args.kind  # the task's own (det shell kill CMD_ID)
            if answer.get("state") == "TERMINATED" and answer.get("end_reason") != "killed":
                code = answer.get("exit_code")
                print(f"{kind} {task_id} had already ended ({answer.get('end_reason')}"
                      + ("" if code is None else f", exit code {code}") + "); nothing to kill")
            elif task["state"] == "TERMINATED":
                print(f"killed {kind} {task_id}")
            else:
                print(f"det: {kind} {task_id} is being killed but is still "
                      f"{task['state']} after {wait:g} s (the master kills it by force "
                      "if it ignores the stop); `det task list` shows when it has ended",
                      file=sys.stderr)
    return 1 if failed else 0


def _command_run(args: argparse.Namespace) -> int:
    entry: List[str] = list(args.entrypoint)
    if entry[:1] == ["--"]:  # `det cmd run -- CMD ...`: the separator is no part of it
        entry = entry[1:]
    if not entry:
        usage_error("det cmd run needs an ENTRYPOINT (the command to run)")
    volumes(args.volume)  # malformed values fail before anything is sent
    with client(args) as api:
        task = _create(args, api, {}, entrypoint=entry)
        return _follow_command(args, api, task)


def _placed_or_waiting(api: Any, task_id: str, grace: float = 5.0) -> Dict[str, Any]:
    """The task's state once the master has placed it or said why it waits (``waiting``),
    or after ``grace`` seconds: a new task is PENDING until a scheduling pass sees it."""
    deadline = time.monotonic() + grace
    while True:
        state = api.request("GET", f"/tasks/{task_id}")
        if state["state"] != "PENDING" or state.get("waiting") or time.monotonic() > deadline:
            return state
        time.sleep(0.2)


def _follow_command(args: argparse.Namespace, api: Any, task: Dict[str, Any]) -> int:
    print(f"Launched command {task['id']}", file=sys.stderr)
    if args.detach:
        print(task["id"])
        return 0
    state = _placed_or_waiting(api, task["id"])
    if state["state"] == "PENDING":
        _say_why_it_waits(state)
    _print_logs(api, task["id"], follow=True, tail=None)
    final = api.request("GET", f"/tasks/{task['id']}")
    code = final.get("exit_code")
    if code is None:
        print(f"det: command {task['id']} ended: {final.get('end_reason')}", file=sys.stderr)
        return 1
    return int(code) if 0 <= int(code) < 256 else 1


def _service_start(args: argparse.Namespace) -> int:
    _warn_ssh(args)
    volumes(args.volume)  # malformed values fail before anything is sent
    body: Dict[str, Any] = {}
    if args.kind == "tensorboard":
        if not args.experiment_ids and not args.trial_ids:
            usage_error("det tensorboard start needs EXP_IDs or -t TRIAL_IDs")
        body = {"experiment_ids": args.experiment_ids, "trial_ids": args.trial_ids}
    with client(args) as api:
        task = _create(args, api, body)
        print(f"Launched {args.kind} {task['id']}", file=sys.stderr)
        if args.detach:
            print(task["id"])
            return 0
        token = _token(args)
        _wait_ready(api, task, token)
        if args.kind == "shell":
            from determined.cli._shell_client import open_shell

            return open_shell(api.url, task["id"], token)
        _show_url(_url(api, task, token), args)
    return 0


def _open(args: argparse.Namespace) -> int:
    with client(args) as api:
        task = api.request("GET", f"/tasks/{args.id}")
        if task["kind"] != args.kind:
            usage_error(f"task {args.id} is a {task['kind']}, not a {args.kind}")
        if task["state"] == "TERMINATED":
            raise SystemExit(f"det: error: {args.kind} {args.id} has ended "
                             f"({task.get('end_reason')})")
        _show_url(_url(api, task, _token(args)), args)
    return 0


def _shell_open(args: argparse.Namespace) -> int:
    from determined.cli._shell_client import open_shell

    _warn_ssh(args)
    with client(args) as api:
        task = api.request("GET", f"/tasks/{args.id}")
        if task["kind"] != "shell":
            usage_error(f"task {args.id} is a {task['kind']}, not a shell")
        if task["state"] != "RUNNING":
            raise SystemExit(f"det: error: shell {args.id} is {task['state']}")
        return open_shell(api.url, args.id, _token(args))

