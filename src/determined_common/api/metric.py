"""Metric helpers of upstream 0.13's ``determined_common.api.metric``."""

from typing import Any, Dict, List, Optional


def get_validation_metric(metric_name: str, validation: Optional[Dict[str, Any]]) -> Any:
    """The value of ``metric_name`` in a checkpoint's or step's validation, or None."""
    if not validation:
        return None
    metrics = validation.get("metrics") or {}
    values = metrics.get("validationMetrics") or metrics.get("validation_metrics") or metrics
    return values.get(metric_name)


def get_metric_names(steps: List[Dict[str, Any]]) -> List[str]:
    """Every validation metric name appearing in ``steps``."""
    names = set()
    for step in steps:
        v = step.get("validation") or {}
        names.update(((v.get("metrics") or {}).get("validation_metrics") or {}).keys())
    return sorted(names)
