"""Whose leftovers are whose: the one rule of owners in shared checkpoint storage.

Two masters (or two local records directories) sharing one checkpoint storage each
number experiments and trials from 1. What a trial writes therefore carries its
records' *owner* (``TrialEnv.owner``: a master's cluster id, a local directory's id):
a complete checkpoint in its ``metadata.json`` (``"owner"``), an unfinished write
(a scratch directory) in its name (:func:`scratch_tag`). Whoever removes leftovers (a
trial's next process, a master at start-up) removes only its own owner's
(:func:`owns`): another owner's, and those written before owners were recorded, are
kept, whatever their age.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, NamedTuple, Optional

__all__ = ["SCRATCH_PREFIX", "ScratchName", "owns", "owns_checkpoint", "owns_scratch",
           "parse_scratch", "scratch_tag"]

#: How the name of an unfinished write (a scratch directory) begins.
SCRATCH_PREFIX = ".partial-"
#: The characters of the owner a scratch directory's name keeps.
_TAG_LEN = 8
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_TAGGED = re.compile(r"\.partial-e(\d+)t(\d+)-(?:([0-9a-f]{%d})-)?%s-[0-9a-f]{8}"
                     % (_TAG_LEN, _UUID))
_TRIAL_ONLY = re.compile(r"\.partial-e(\d+)t(\d+)-")


def scratch_tag(experiment_id: int, trial_id: int, owner: str = "") -> str:
    """The tag of a trial's unfinished writes: ``e<experiment>t<trial>-``, then the
    first part of ``owner`` (``TrialEnv.owner``) where there is one, so that trials
    of two masters (or local records directories) with the same IDs stay apart.

    >>> scratch_tag(3, 7, "5b0e8c2e-1111-2222-3333-444455556666")
    'e3t7-5b0e8c2e-'
    """
    return f"e{experiment_id}t{trial_id}-" + (f"{owner[:_TAG_LEN]}-" if owner else "")


class ScratchName(NamedTuple):
    """What a scratch directory's name says: its trial, and its owner's tag (None for
    one written before owners were recorded)."""

    experiment_id: int
    trial_id: int
    owner_tag: Optional[str]


def parse_scratch(name: str) -> Optional[ScratchName]:
    """The trial and owner tag in a scratch directory's name (``SCRATCH_PREFIX`` +
    :func:`scratch_tag` + ``<uuid>-<random>``); None for a name without a trial (written
    before trials were tagged) or that is no scratch directory.

    >>> parse_scratch(".partial-e3t7-5b0e8c2e-" + "0" * 8 + "-0000-0000-0000-" + "0" * 12
    ...               + "-0badf00d")
    ScratchName(experiment_id=3, trial_id=7, owner_tag='5b0e8c2e')
    """
    match = _TAGGED.fullmatch(name)
    if match:
        return ScratchName(int(match.group(1)), int(match.group(2)), match.group(3))
    match = _TRIAL_ONLY.match(name)  # a checkpoint id that is no UUID: no owner is told
    return ScratchName(int(match.group(1)), int(match.group(2)), None) if match else None


def owns(owner: str, mark: Optional[str]) -> bool:
    """Whether leftovers marked ``mark`` are ``owner``'s to remove.

    Args:
        owner: the remover's owner (``TrialEnv.owner``, a master's cluster id). Empty for
            a remover that has none (an old trial spec, a test's runner): it claims
            everything, as before owners were recorded.
        mark: the owner the leftover names: a checkpoint's metadata ``owner``, or the
            owner tag of a scratch directory's name (its first characters). None or
            empty: written before owners were recorded; kept by every owner.

    >>> owns("5b0e8c2e-1111-2222-3333-444455556666", "5b0e8c2e")
    True
    >>> owns("5b0e8c2e-1111-2222-3333-444455556666", None)
    False
    """
    if not owner:
        return True
    return bool(mark) and (mark == owner or mark == owner[:_TAG_LEN])


def owns_checkpoint(owner: str, metadata: Optional[Mapping[str, Any]]) -> bool:
    """:func:`owns` for a complete checkpoint, by its ``metadata.json`` (None: none
    readable, so it names no owner)."""
    mark = (metadata or {}).get("owner")
    return owns(owner, mark if isinstance(mark, str) else None)


def owns_scratch(owner: str, name: str, experiment_id: Optional[int] = None,
                 trial_id: Optional[int] = None) -> bool:
    """:func:`owns` for a scratch directory by its name; with ``experiment_id`` and
    ``trial_id``, only one of that trial. Names without a trial are nobody's."""
    parsed = parse_scratch(name)
    if parsed is None:
        return False
    if experiment_id is not None and (parsed.experiment_id, parsed.trial_id) != (
            experiment_id, trial_id):
        return False
    return owns(owner, parsed.owner_tag)
