"""Helpers of the Lightning / Hugging Face / Core API example tests: the examples run as
their own processes, by hand (core's directory mode) or killed after some steps."""

import os
import pathlib
import signal
import subprocess
import sys
from typing import Dict, List, Optional

from tests.core.core_testing import script_env

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
KILLER = pathlib.Path(__file__).with_name("kill_after_steps.py")


def example_env(directory: pathlib.Path, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Directory mode under ``directory``; nothing downloaded (Hugging Face offline)."""
    env = script_env(directory, extra)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                "HF_HOME": str(directory.parent / "hf-home"), "WANDB_DISABLED": "true",
                "TOKENIZERS_PARALLELISM": "false", "USE_TF": "0"})
    return env


def run_example(script: pathlib.Path, directory: pathlib.Path, args: List[str],
                kill_after: Optional[int] = None, timeout: float = 600,
                env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """Run ``script`` by hand with its core directory ``directory`` (cwd: a sibling
    directory, so relative output paths stay inside the test's tmp dir), ``env`` added
    to its environment. With ``kill_after`` it is SIGKILLed right after that many
    optimizer steps."""
    cwd = directory.parent / f"{directory.name}-cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(script), *args]
    if kill_after is not None:
        command = [sys.executable, str(KILLER), str(kill_after), str(script), *args]
    done = subprocess.run(command, env=example_env(directory, env), cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    if kill_after is not None:
        assert done.returncode == -signal.SIGKILL, (
            f"expected the run to be killed after {kill_after} steps; it exited "
            f"{done.returncode}:\n{done.stderr[-3000:]}")
    else:
        assert done.returncode == 0, done.stderr[-5000:]
    return done
