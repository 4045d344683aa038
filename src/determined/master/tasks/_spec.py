"""Task configs: validation and defaults (pure; no I/O).

A task config (``det cmd run --config-file``, ``--config k=v``) may set::

    description: "my notebook"
    resources: {slots: 1, agent_label: "", priority: 42, weight: 1.0}
    environment: {environment_variables: ["A=1", ...]}   # or a mapping
    entrypoint: ["python", "prep.py"]                     # commands only
    idle_timeout: 600                                     # seconds; overrides the master's
    bind_mounts: [{host_path: /data, container_path: data}]   # `-v /data:data`

``bind_mounts`` are symbolic links in the task's working directory (no containers):
``container_path`` (absolute or relative) names a path inside it, pointing at the
absolute ``host_path`` on the agent's machine.

``resources.slots`` defaults to 1 for commands, notebooks and shells and to 0 for
TensorBoards (they read files; no slot).
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

from determined.errors import InvalidConfigError

__all__ = ["KINDS", "SERVICE_KINDS", "bind_mounts", "default_description",
           "environment_variables", "validate_task_config"]

#: Task kinds, as the API and CLI name them.
KINDS = ("command", "notebook", "shell", "tensorboard")
#: Kinds that serve HTTP or websockets behind ``/proxy/<task-id>/``.
SERVICE_KINDS = ("notebook", "shell", "tensorboard")
_FIELDS = {"description", "resources", "environment", "entrypoint", "idle_timeout",
           "bind_mounts", "data"}


def _err(field: str, message: str) -> InvalidConfigError:
    return InvalidConfigError([(field, message)], source="task config")


def validate_task_config(kind: str, raw: Any) -> Dict[str, Any]:
    """The normalized config of a ``kind`` task; raises InvalidConfigError naming the
    field. Example: ``validate_task_config("command", {"entrypoint": "echo hi"})``."""
    if kind not in KINDS:
        raise _err("kind", f"expected one of {', '.join(KINDS)}, received {kind!r}")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _err("(root)", f"expected a mapping, received {type(raw).__name__}")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise _err(unknown[0], f"unknown field; expected one of {', '.join(sorted(_FIELDS))}")
    config = copy.deepcopy(raw)
    resources = config.setdefault("resources", {}) or {}
    if not isinstance(resources, dict):
        raise _err("resources", "expected a mapping")
    config["resources"] = resources
    slots = resources.setdefault("slots", 0 if kind == "tensorboard" else 1)
    if not isinstance(slots, int) or isinstance(slots, bool) or slots < 0:
        raise _err("resources.slots", f"expected an int >= 0, received {slots!r}")
    label = resources.setdefault("agent_label", "")
    if not isinstance(label, str):
        raise _err("resources.agent_label", f"expected a str, received {label!r}")
    priority = resources.get("priority")
    if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
        raise _err("resources.priority", f"expected an int, received {priority!r}")
    weight = resources.setdefault("weight", 1.0)
    if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight <= 0:
        raise _err("resources.weight", f"expected a number > 0, received {weight!r}")
    description = config.setdefault("description", "")
    if not isinstance(description, str):
        raise _err("description", f"expected a str, received {description!r}")
    environment_variables(config)  # checks
    bind_mounts(config)  # checks
    timeout = config.get("idle_timeout")
    if timeout is not None and (not isinstance(timeout, (int, float)) or isinstance(
            timeout, bool) or timeout <= 0):
        raise _err("idle_timeout", f"expected seconds > 0, received {timeout!r}")
    entrypoint = config.get("entrypoint")
    if kind == "command":
        if isinstance(entrypoint, str):
            entrypoint = [entrypoint]
        if not entrypoint or not isinstance(entrypoint, list) or not all(
                isinstance(a, str) for a in entrypoint):
            raise _err("entrypoint", "expected a command (a str or a list of str), received "
                                     f"{entrypoint!r}")
        config["entrypoint"] = entrypoint
    elif entrypoint is not None:
        raise _err("entrypoint", f"only commands take an entrypoint; this is a {kind}")
    return config


def default_description(kind: str, config: Dict[str, Any], experiment_ids: List[int],
                        trial_ids: List[int]) -> str:
    """What a task without a ``description`` is listed as: a command's command line, a
    TensorBoard's experiments and trials, else the service's name."""
    import shlex

    if kind == "command":
        entrypoint = config.get("entrypoint") or []
        # One argument runs in sh -c as written; quote only a list's arguments.
        line = entrypoint[0] if len(entrypoint) == 1 else shlex.join(entrypoint)
        return line if len(line) <= 80 else line[:79] + "…"
    if kind == "tensorboard":
        parts = []
        if experiment_ids:
            parts.append(("experiment " if len(experiment_ids) == 1 else "experiments ")
                         + ", ".join(map(str, experiment_ids)))
        if trial_ids:
            parts.append(("trial " if len(trial_ids) == 1 else "trials ")
                         + ", ".join(map(str, trial_ids)))
        return "TensorBoard of " + "; ".join(parts)
    return {"notebook": "JupyterLab", "shell": "Shell"}.get(kind, kind)


def bind_mounts(config: Dict[str, Any]) -> List[Tuple[str, str]]:
    """``(host_path, path relative to the working directory)`` of each ``bind_mounts``
    entry; ``container_path`` may be absolute but must not leave the directory."""
    import posixpath

    raw = config.get("bind_mounts") or []
    if not isinstance(raw, list):
        raise _err("bind_mounts", f"expected a list of mappings, received {raw!r}")
    out = []
    for i, mount in enumerate(raw):
        field = f"bind_mounts[{i}]"
        if not isinstance(mount, dict):
            raise _err(field, f"expected a mapping with host_path and container_path, "
                              f"received {mount!r}")
        host, target = mount.get("host_path"), mount.get("container_path")
        if not isinstance(host, str) or not host.startswith("/"):
            raise _err(f"{field}.host_path", f"expected an absolute path, received {host!r}")
        relative = posixpath.normpath(target.lstrip("/")) if isinstance(target, str) else ""
        if not relative or relative == "." or relative == ".." or relative.startswith("../"):
            raise _err(f"{field}.container_path",
                       "expected a path inside the task's working directory (absolute or "
                       f"relative, no '..'), received {target!r}")
        out.append((host, relative))
    return out


def environment_variables(config: Dict[str, Any]) -> Dict[str, str]:
    """``environment.environment_variables`` (a list of ``NAME=value`` or a mapping)."""
    env = (config.get("environment") or {})
    if not isinstance(env, dict):
        raise _err("environment", "expected a mapping")
    raw = env.get("environment_variables") or {}
    pairs: List[Tuple[str, str]] = []
    if isinstance(raw, dict):
        pairs = [(str(k), str(v)) for k, v in raw.items()]
    elif isinstance(raw, list):
        for item in raw:
            if not isinstance(item, str) or "=" not in item:
                raise _err("environment.environment_variables",
                           f"expected NAME=value strings, received {item!r}")
            name, _, value = item.partition("=")
            pairs.append((name, value))
    else:
        raise _err("environment.environment_variables", "expected a list or a mapping")
    return dict(pairs)
