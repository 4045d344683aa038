"""The ``metadata.json`` file inside every checkpoint, and the ``code/`` copy."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Dict, Iterable

from determined.errors import CheckpointError

__all__ = ["METADATA_FILE", "write_metadata", "read_metadata", "copy_code", "IGNORED_NAMES"]

METADATA_FILE = "metadata.json"
IGNORED_NAMES = ("__pycache__", "*.pyc", "*.pyo", "*$py.class", ".detignore")


def write_metadata(path: str, metadata: Dict[str, Any]) -> None:
    with open(os.path.join(path, METADATA_FILE), "w", encoding="utf-8") as f:
        json.dump(metadata, f, indent=2, sort_keys=True, default=str)


def read_metadata(path: str) -> Dict[str, Any]:
    file = os.path.join(path, METADATA_FILE)
    try:
        with open(file, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise CheckpointError(
            f"{path} is not a checkpoint directory: it has no {METADATA_FILE}"
        ) from None
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{file} is not valid JSON: {e}") from None


def copy_code(
    model_dir: str, dest: str, ignore: Iterable[str] = IGNORED_NAMES, exclude: Iterable[str] = ()
) -> None:
    """Copy the model definition directory into ``dest`` (a checkpoint's ``code/``).

    ``exclude``: absolute paths inside ``model_dir`` not to copy (e.g. checkpoint
    storage that lives inside the model directory, which would copy itself).
    """
    patterns = shutil.ignore_patterns(*ignore)
    excluded = {os.path.abspath(p) for p in exclude}
    excluded.add(os.path.abspath(dest))

    def _ignore(directory: str, names: list) -> set:
        skip = set(patterns(directory, names))
        skip.update(n for n in names if os.path.abspath(os.path.join(directory, n)) in excluded)
        return skip

    shutil.copytree(model_dir, dest, ignore=_ignore, symlinks=True)
