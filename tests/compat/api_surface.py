"""Parse ``python-api-0.13.0.md`` (the upstream 0.13.0 public surface) into checkable entries."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import List, Optional

SPEC = os.environ.get("DET_UPSTREAM_API_MD") or os.path.join(
    os.path.dirname(__file__), "python-api-0.13.0.md")


@dataclasses.dataclass
class Entry:
    module: str
    name: str                     # top-level name in the module
    kind: str                     # "class", "def", "value", "module"
    params: Optional[List[str]] = None    # for def / class __init__ (None: not listed)
    member: Optional[str] = None  # method or attribute of a class
    decorators: str = ""
    line: str = ""


_DEF = re.compile(r"^(?P<decos>(?:@[\w.]+ )*)def (?P<name>\w+)\((?P<params>.*)\)$")
_CLASS = re.compile(r"^class (?P<name>\w+)\(.*\)$")
_MEMBER_DEF = re.compile(r"^(?P<decos>(?:@[\w.]+ )*)(?P<name>\w+)\((?P<params>.*)\)$")
_ATTR = re.compile(r"^(?P<name>\w+) = (?P<value>.*)$")
_MODULE_VALUE = re.compile(r"^(?P<name>\w+)\s+\(module or value from (?P<src>[\w.]+)\)$")


def _params(text: str) -> List[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def parse(path: str = SPEC) -> List[Entry]:
    entries: List[Entry] = []
    module = None
    in_block = False
    cls = None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            heading = re.match(r"^## `([\w.]+)`", line)
            if heading:
                module = heading.group(1)
                continue
            if line.startswith("```"):
                in_block = not in_block
                cls = None
                continue
            if not in_block or not module or not line.strip():
                continue
            if line.startswith("    "):
                assert cls is not None, line
                body = line.strip()
                m = _MEMBER_DEF.match(body)
                if m:
                    entries.append(Entry(module, cls, "method", _params(m.group("params")),
                                         m.group("name"), m.group("decos").strip(), body))
                    continue
                m = _ATTR.match(body)
                assert m, line
                entries.append(Entry(module, cls, "attribute", None, m.group("name"), "", body))
                continue
            cls = None
            m = _CLASS.match(line)
            if m:
                cls = m.group("name")
                entries.append(Entry(module, cls, "class", None, None, "", line))
                continue
            m = _DEF.match(line)
            if m:
                entries.append(Entry(module, m.group("name"), "def", _params(m.group("params")),
                                     None, m.group("decos").strip(), line))
                continue
            m = _MODULE_VALUE.match(line)
            if m:
                entries.append(Entry(module, m.group("name"), "module", None, None, "", line))
                continue
            m = _ATTR.match(line)
            assert m, line
            entries.append(Entry(module, m.group("name"), "value", None, None, "", line))
    return entries
