"""Experiment configs as the API shows them: credentials replaced by ``***``.

The stored config keeps the real values (trials need them to reach their storage);
everything that returns a config to a client passes it through :func:`masked_config`.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Mapping

__all__ = ["MASK", "masked_config", "masked_section"]

MASK = "***"
#: Sections that may carry credentials, and the keys that hold them.
_SECRETS = {"checkpoint_storage": ("secret_key",), "data_layer": ("secret_key",)}


def masked_section(section: Any, keys: tuple = ("secret_key",)) -> Any:
    """A copy of one section (e.g. a ``checkpoint_storage`` dict) with its credentials
    masked; anything that is not a dict is returned as is."""
    if not isinstance(section, Mapping):
        return section
    out = dict(section)
    for key in keys:
        if out.get(key):
            out[key] = MASK
    return out


def masked_config(config: Mapping[str, Any]) -> Dict[str, Any]:
    """A deep copy of an experiment config with every credential masked.

    Example:
        >>> masked_config({"checkpoint_storage": {"type": "s3", "bucket": "b",
        ...                                       "secret_key": "x"}})["checkpoint_storage"]
        {'type': 's3', 'bucket': 'b', 'secret_key': '***'}
    """
    out = copy.deepcopy(dict(config))
    for section, keys in _SECRETS.items():
        if section in out:
            out[section] = masked_section(out[section], keys)
    return out
