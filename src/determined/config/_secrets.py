"""Experiment configs as the API shows them: credentials replaced by ``***``.

The stored config keeps the real values (trials need them to reach their storage);
everything that returns a config to a client passes it through :func:`masked_config`.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Mapping

__all__ = ["MASK", "masked_config", "masked_fields", "masked_section", "unmasked_config"]

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


def masked_fields(config: Any) -> List[str]:
    """The credential fields of ``config`` that hold the mask (``***``) rather than a
    credential, as dotted names: a config a client got back from the API (a fork's).

    Example:
        >>> masked_fields({"checkpoint_storage": {"type": "s3", "secret_key": "***"}})
        ['checkpoint_storage.secret_key']
    """
    if not isinstance(config, Mapping):
        return []
    return [f"{section}.{key}" for section, keys in _SECRETS.items()
            if isinstance(config.get(section), Mapping)
            for key in keys if config[section].get(key) == MASK]


def unmasked_config(config: Mapping[str, Any], source: Mapping[str, Any]) -> Dict[str, Any]:
    """A copy of ``config`` whose masked credentials (:func:`masked_fields`) are those
    of ``source`` (the stored config of the experiment it was forked from); a field
    ``source`` has no credential for keeps the mask.

    Example:
        >>> unmasked_config({"checkpoint_storage": {"secret_key": "***"}},
        ...                 {"checkpoint_storage": {"secret_key": "s3cr3t"}})
        {'checkpoint_storage': {'secret_key': 's3cr3t'}}
    """
    out = copy.deepcopy(dict(config))
    for name in masked_fields(config):
        section, key = name.split(".")
        real = (source.get(section) or {}).get(key) if isinstance(source, Mapping) else None
        if real and real != MASK:
            out[section] = {**out[section], key: real}
    return out
