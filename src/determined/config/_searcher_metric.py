"""Validation metrics without the searcher metric: the one wording every path uses.

A submitter that fills in the default searcher metric (local test mode, the Native
API) records the searcher section as the user wrote it under
``internal.searcher_as_written`` (None: the config had no searcher section). The
wording then says what the user's config set instead of naming the default as though
the user had written it.

Example:
    >>> cfg = {"searcher": {"metric": "validation_loss"}}
    >>> record_assumed_metric(cfg, {"name": "single"})
    >>> missing_metric_text(cfg, ["vloss"]).split(", so ")[0]
    "the config's searcher section sets no metric"
    >>> missing_metric_text({"searcher": {"metric": "nope"}}, [])
    "the validation metrics lack the searcher metric 'nope' (received: none)"
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Iterable, Optional

__all__ = ["WRITTEN_SEARCHER", "assume_metric", "metric_assumed", "missing_metric_text",
           "record_assumed_metric"]

#: The ``internal`` key holding the searcher section as written, when the metric was assumed.
WRITTEN_SEARCHER = "searcher_as_written"


def record_assumed_metric(raw: Dict[str, Any], written_searcher: Any) -> None:
    """Note in ``raw`` (a config before validation) that its searcher metric is a
    default, with the searcher section as the user wrote it (None: none)."""
    internal = raw.get("internal")
    internal = dict(internal) if isinstance(internal, dict) else {}
    internal[WRITTEN_SEARCHER] = copy.deepcopy(written_searcher)
    raw["internal"] = internal


def assume_metric(raw: Dict[str, Any], written_searcher: Any,
                  default: str = "validation_loss") -> None:
    """Give ``raw``'s searcher section (a dict) ``default`` where it names no metric, and
    note that the user did not (:func:`record_assumed_metric`)."""
    searcher = raw.get("searcher")
    if isinstance(searcher, dict) and "metric" not in searcher:
        searcher["metric"] = default
        record_assumed_metric(raw, written_searcher)


def metric_assumed(config: Dict[str, Any]) -> bool:
    """Whether the config's searcher metric is a default the user did not write."""
    internal = config.get("internal")
    return isinstance(internal, dict) and WRITTEN_SEARCHER in internal


def missing_metric_text(config: Dict[str, Any], received: Iterable[str],
                        where: str = "the validation metrics", fix: Optional[str] = None) -> str:
    """What to say when validation metrics (named ``where``) lack the searcher metric
    of ``config`` (raw or validated); ``received``: the names they hold. ``fix``, when
    given, is what the user's code can do instead of changing (or setting) the metric."""
    name = config["searcher"]["metric"]
    got = ", ".join(sorted(received)) or "none"
    if not metric_assumed(config):
        text = f"{where} lack the searcher metric {name!r} (received: {got})"
        return f"{text}; {fix} or change searcher.metric" if fix else text
    written = config["internal"][WRITTEN_SEARCHER]
    if written is None:
        wrote = "the config has no searcher section"
    elif not isinstance(written, dict):
        wrote = f"the config's searcher is {written!r}"
    elif written.get("metric") is None:
        wrote = "the config's searcher section sets no metric"
    else:
        wrote = f"the config's searcher.metric is {written.get('metric')!r}"
    text = (f"{wrote}, so the searcher metric is assumed to be {name} (the default); {where} "
            f"lack it (received: {got})")
    return f"{text}; {fix} or set searcher.metric" if fix else text
