"""Local experiments: the whole search on this machine, no master (``--local``).

The names below load on first use: the fork server that trial processes start from
imports this package's trial side (``_pool``, ``_trial_process``) and must not pay for
the driver's database and display modules.
"""

import importlib
from typing import TYPE_CHECKING, Any, List

_LAZY = {
    "ExperimentResult": "determined.local._result",
    "LocalClient": "determined.local._client",
    "LocalDriver": "determined.local._driver",
    "LocalStore": "determined.local._store",
    "default_local_dir": "determined.local._store",
    "open_store": "determined.local._store",
    "prepare_config": "determined.local._run",
    "resume_local_experiment": "determined.local._resume",
    "run_local_experiment": "determined.local._run",
    "run_test_mode": "determined.local._run",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'determined.local' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_LAZY))


if TYPE_CHECKING:
    from determined.local._client import LocalClient  # noqa: F401
    from determined.local._driver import LocalDriver  # noqa: F401
    from determined.local._result import ExperimentResult  # noqa: F401
    from determined.local._resume import resume_local_experiment  # noqa: F401
    from determined.local._run import prepare_config, run_local_experiment, run_test_mode  # noqa: F401
    from determined.local._store import LocalStore, default_local_dir, open_store  # noqa: F401
