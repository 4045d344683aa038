"""Bounds on an experiment config's size, checked before it is built in memory.

A config comes from a client: :func:`check_config_text` streams YAML text through
the parser's events (no document is built) and :func:`check_config_tree` walks an
already decoded JSON object without recursion, so a config of millions of keys or
thousands of levels is refused at the cost of reading it once.
"""

from __future__ import annotations

import re
from typing import Any, List

import yaml

__all__ = ["ConfigLimitError", "check_config_json", "check_config_text", "check_config_tree"]


class ConfigLimitError(ValueError):
    """A config over a limit; ``status``: 413 (too many bytes) or 400 (keys, depth);
    ``limit``: the master config key of the limit."""

    def __init__(self, message: str, status: int, limit: str):
        super().__init__(message)
        self.status, self.limit = status, limit


def _too_many_keys(max_keys: int) -> ConfigLimitError:
    return ConfigLimitError(
        f"The config has more than {max_keys} keys (the master's limits.max_config_keys)",
        400, "limits.max_config_keys")


def _too_deep(max_depth: int) -> ConfigLimitError:
    return ConfigLimitError(
        f"The config nests deeper than {max_depth} levels (the master's "
        "limits.max_config_depth)", 400, "limits.max_config_depth")


def check_config_text(text: str, max_bytes: int, max_keys: int, max_depth: int) -> None:
    """Raise ConfigLimitError if YAML ``text`` is over ``max_bytes`` (UTF-8), has more
    than ``max_keys`` mapping keys or nests deeper than ``max_depth``. Syntax errors are
    left to the parser that builds the config."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > max_bytes:
        raise ConfigLimitError(
            f"The config is {size} bytes; the limit is {max_bytes} bytes (the master's "
            "limits.max_config_bytes)", 413, "limits.max_config_bytes")
    # Per open collection: [is a mapping, the next node is a key].
    stack: List[List[bool]] = []
    keys = 0
    try:
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent,
                                  yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if stack and stack[-1][0]:
                    if stack[-1][1]:
                        keys += 1
                        if keys > max_keys:
                            raise _too_many_keys(max_keys)
                    stack[-1][1] = not stack[-1][1]
                if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                    stack.append([isinstance(event, yaml.MappingStartEvent), True])
                    if len(stack) > max_depth:
                        raise _too_deep(max_depth)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                stack.pop()
    except yaml.YAMLError as e:
        if "nesting depth" in str(e):  # libyaml's own bound, met while reading ahead
            raise _too_deep(max_depth) from None
        return  # reported by the parser that builds the config, with its position


def check_config_tree(value: Any, max_keys: int, max_depth: int) -> None:
    """The same key and depth limits for a decoded config (dicts and lists)."""
    keys = 0
    pending = [(value, 0)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, dict):
            children = list(node.values())
            keys += len(node)
            if keys > max_keys:
                raise _too_many_keys(max_keys)
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth + 1 > max_depth:
            raise _too_deep(max_depth)
        pending.extend((child, depth + 1) for child in children)


_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:]')


def check_config_json(body: bytes, max_keys: int, max_depth: int) -> None:
    """The same limits for a raw JSON request body holding a config, before it is
    decoded (strings, such as a base64 context or YAML text, are skipped whole; the
    body's own envelope gets one level and a few keys of slack)."""
    keys = depth = 0
    for match in _JSON_TOKENS.finditer(body):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
            if depth > max_depth + 1:
                raise _too_deep(max_depth)
        elif token in (b"}", b"]"):
            depth -= 1
        elif token == b":":
            keys += 1
            if keys > max_keys + 8:
                raise _too_many_keys(max_keys)
