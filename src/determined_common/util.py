"""Small helpers of upstream 0.13's ``determined_common.util``."""

import contextlib
import os
import random
from typing import Any, Iterator

import numpy as np


def get_default_master_address() -> str:
    return os.environ.get("DET_MASTER") or os.environ.get("DET_MASTER_ADDR") or "localhost:8080"


def debug_mode() -> bool:
    return os.environ.get("DET_DEBUG", "").lower() in ("true", "1", "yes")


def sizeof_fmt(val: float) -> str:
    """``1536`` -> ``'1.5KB'``."""
    for unit in ("", "K", "M", "G", "T", "P"):
        if abs(val) < 1024.0:
            return f"{val:3.1f}{unit}B"
        val /= 1024.0
    return f"{val:.1f}EB"


@contextlib.contextmanager
def preserve_random_state() -> Iterator[None]:
    """Restore Python's and NumPy's global RNG states when the block ends."""
    py, npy = random.getstate(), np.random.get_state()
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)


def safe_load_yaml_with_exceptions(yaml_file: Any) -> Any:
    """YAML 1.2 (as the experiment config), from a file object or a string."""
    from determined.config import parse_yaml

    text = yaml_file.read() if hasattr(yaml_file, "read") else yaml_file
    return parse_yaml(text, source=getattr(yaml_file, "name", "YAML file"))
