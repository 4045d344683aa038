"""Rewrite pre-0.13 ("steps") config names into their 0.13 equivalents.

PEDL-era configs measure training in steps of ``batches_per_step`` batches. Each
alias is accepted with a deprecation warning and converted to a length in batches
(SPEC section 2.2).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Dict, List

__all__ = ["apply_legacy_aliases"]

_SEARCHER_STEP_FIELDS = {
    "max_steps": "max_length",
    "target_trial_steps": "max_length",
    "step_budget": "budget",
    "steps_per_round": "length_per_round",
}


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def apply_legacy_aliases(raw: Dict[str, Any]) -> Dict[str, Any]:
    """Return a copy of ``raw`` with legacy fields rewritten; warn once per alias.

    Example:
        >>> apply_legacy_aliases({"batches_per_step": 10, "searcher": {"max_steps": 3}})
        {'searcher': {'max_length': {'batches': 30}}, 'scheduling_unit': 10}
    """
    if not isinstance(raw, dict):
        return raw
    config = copy.deepcopy(raw)
    used: List[str] = []
    if "batches_per_step" in config:
        if "scheduling_unit" not in config:
            config["scheduling_unit"] = config["batches_per_step"]
        del config["batches_per_step"]
        used.append("batches_per_step (use scheduling_unit)")
    step = config.get("scheduling_unit", 100)
    step = step if _is_count(step) else 100

    for period in ("min_validation_period", "min_checkpoint_period"):
        if _is_count(config.get(period)):
            config[period] = {"batches": config[period] * step}
            used.append(f"integer {period} in steps (use {{batches: N}})")

    searcher = config.get("searcher")
    if isinstance(searcher, dict):
        for old, new in _SEARCHER_STEP_FIELDS.items():
            if old in searcher:
                value = searcher.pop(old)
                if new not in searcher:
                    searcher[new] = {"batches": value * step} if _is_count(value) else value
                used.append(f"searcher.{old} (use searcher.{new})")
    for name in used:
        warnings.warn(f"Deprecated experiment config field: {name}", DeprecationWarning, 2)
    return config
