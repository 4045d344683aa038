"""What ``PUT /templates/{name}`` accepts: a partial experiment config (``det e create
--template``), which may also carry the task-config fields that experiments lack
(``resources.slots``, ``idle_timeout``: ``det cmd|notebook run|start --template``).

Unknown or wrongly typed fields are refused when the template is set, naming the
field, not when it is first used.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Tuple

from determined.config._fragment import fragment_errors
from determined.errors import InvalidConfigError
from determined.master.tasks._spec import validate_task_config

__all__ = ["check_template"]


def check_template(name: str, config: Dict[str, Any]) -> None:
    """Raise InvalidConfigError (a 400 naming each field) if ``config`` is no template."""
    experiment_part = copy.deepcopy(config)
    task_part: Dict[str, Any] = {}
    if "idle_timeout" in experiment_part:
        task_part["idle_timeout"] = experiment_part.pop("idle_timeout")
    resources = experiment_part.get("resources")
    if isinstance(resources, dict) and "slots" in resources:
        task_part["resources"] = {"slots": resources.pop("slots")}
    errors: List[Tuple[str, str]] = []
    try:
        validate_task_config("notebook", task_part)
    except InvalidConfigError as e:
        errors += e.errors
    errors += fragment_errors(experiment_part)
    if errors:
        raise InvalidConfigError(errors, source=f"template {name!r}")
