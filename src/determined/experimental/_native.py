"""Shared plumbing of the Native API (SPEC 4.8): modes, config, master check, local runs.

``determined.experimental.keras.init`` and ``determined.experimental.estimator.init``
build a framework Native context around a *launcher* from this module. In local
modes the launcher runs the trial in the calling process with
:class:`~determined.harness.TrialRunner` and an
:class:`~determined.harness.InProcessHost`; cluster mode lives in
:mod:`determined.experimental._native_cluster`.
"""

from __future__ import annotations

import enum
import logging
import os
import random
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional

from determined.config import Length, assume_metric, merge_over_defaults, validate_config
from determined.errors import InvalidConfigError
from determined.harness import InProcessHost, OpKind, TrialEnv, TrialOp, TrialRunner
from determined.storage import SharedFSStorageManager, StorageManager, build_storage

__all__ = [
    "Mode",
    "native_config",
    "native_hparams",
    "native_raw_config",
    "LocalLauncher",
    "default_checkpoint_dir",
]

logger = logging.getLogger("determined")


class Mode(str, enum.Enum):
    """Where a Native API experiment runs (0.12-era ``mode=`` argument)."""

    CLUSTER = "cluster"
    LOCAL = "local"


_NATIVE_DEFAULTS: Dict[str, Any] = {
    "searcher": {"name": "single", "max_length": {"batches": 100}},
    "scheduling_unit": 100,
    "resources": {"slots_per_trial": 1},
}


def native_raw_config(config: Optional[Dict[str, Any]], default_metric: str) -> Dict[str, Any]:
    """``config`` merged section by section over the Native defaults (single searcher,
    100 batches); a searcher without ``metric`` gets ``default_metric`` and a config
    without ``hyperparameters.global_batch_size`` gets 32. Not validated."""
    if config is not None and not isinstance(config, dict):
        raise InvalidConfigError(
            [("", f"Expected config to be a dict. Received: {type(config).__name__}")]
        )
    merged = merge_over_defaults(_NATIVE_DEFAULTS, config or {})
    # Said in the user's terms if the trial lacks it (config.missing_metric_text).
    assume_metric(merged, (config or {}).get("searcher"), default_metric)
    hparams = merged.setdefault("hyperparameters", {})
    if isinstance(hparams, dict) and "global_batch_size" not in hparams:
        logger.warning("the config sets no hyperparameters.global_batch_size; using 32")
        hparams["global_batch_size"] = 32
    return merged


def native_config(
    config: Optional[Dict[str, Any]],
    default_metric: str,
    command: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """The validated config of a local Native experiment (see :func:`native_raw_config`);
    ``internal.native.command`` records ``command`` (default: this script)."""
    merged = native_raw_config(config, default_metric)
    internal = merged.get("internal") or {}
    merged["internal"] = internal
    internal.setdefault("native", {})["command"] = list(command or _default_command())
    return validate_config(merged, source="Native API config")


def _default_command() -> List[str]:
    return [os.path.basename(sys.argv[0])] + sys.argv[1:] if sys.argv and sys.argv[0] else []


def native_hparams(config: Dict[str, Any]) -> Dict[str, Any]:
    """The hyperparameters of a local Native trial: constants as given; any searched
    hyperparameter gets one value drawn with the experiment seed."""
    from determined.searcher import sample_hparams

    space = config["hyperparameters"]
    searched = sorted(name for name, spec in space.items()
                      if isinstance(spec, dict) and spec.get("type") not in (None, "const"))
    if searched:
        logger.warning(
            "Native local mode trains one trial; sampling one value for the searched "
            "hyperparameters %s", ", ".join(searched),
        )
    rng = random.Random(config["reproducibility"]["experiment_seed"])
    return sample_hparams(space, rng)


def default_checkpoint_dir() -> str:
    return os.path.join(tempfile.gettempdir(), "determined-native-checkpoints")


class LocalLauncher:
    """Runs a Native trial class in the calling process.

    Args:
        config: the validated config.
        hparams: the trial's hyperparameters.
        context_dir: the model directory copied into checkpoints (default: cwd).
        test: train one scheduling unit (at most the searcher length), validate and
            checkpoint; otherwise train the searcher's ``max_length`` and validate.
    """

    def __init__(self, config: Dict[str, Any], hparams: Dict[str, Any], context_dir: str, test: bool):
        self.config = config
        self.hparams = hparams
        self.context_dir = os.path.abspath(context_dir or os.getcwd())
        self.test = test
        self.storage = self._storage()
        root = getattr(self.storage, "root", None)
        if root and (os.path.abspath(root) + os.sep).startswith(self.context_dir + os.sep):
            raise InvalidConfigError(
                [("checkpoint_storage", f"checkpoints would be stored at {root}, inside the "
                  f"context directory {self.context_dir} that every checkpoint copies; choose "
                  "another checkpoint_storage.host_path or context_dir")],
                source="Native API config",
            )
        self.env = TrialEnv(
            experiment_config=config,
            hparams=hparams,
            model_dir=self.context_dir,
            experiment_id=0,
            trial_id=1,
            trial_seed=random.Random(config["reproducibility"]["experiment_seed"]).randrange(2**31),
            test_mode=test,
            managed=False,
        )

    def _storage(self) -> StorageManager:
        section = self.config.get("checkpoint_storage")
        if section:
            return build_storage(section)
        path = default_checkpoint_dir()
        logger.info("Native local mode: checkpoints go to %s", path)
        return SharedFSStorageManager(path)

    def plan(self, global_batch_size: int) -> List[TrialOp]:
        searcher = self.config["searcher"]
        if "max_length" not in searcher:
            raise InvalidConfigError(
                [("searcher.max_length", f"the Native API needs a searcher with max_length "
                                         f"(searcher {searcher.get('name')!r} has none)")]
            )
        length = Length.from_dict(searcher["max_length"])
        if self.test:
            total = length.to_batches(global_batch_size, int(self.config.get("records_per_epoch") or 0))
            length = Length.from_dict({"batches": max(1, min(total, int(self.config["scheduling_unit"])))})
        return [TrialOp(OpKind.TRAIN, length), TrialOp(OpKind.VALIDATE), TrialOp(OpKind.CLOSE)]

    def __call__(self, trial_class: type) -> InProcessHost:
        gbs = int(self.hparams["global_batch_size"])
        host = InProcessHost(
            self.plan(gbs), smaller_is_better=bool(self.config["searcher"]["smaller_is_better"])
        )
        runner = TrialRunner(self.env, host, self.storage, trial_class=trial_class)
        reason = runner.run()
        if host.validations:
            logger.info("Native trial %s; last validation: %s", reason, host.validations[-1][1])
        return host


def start_native(
    context_class: Callable[[], Any],
    default_metric: str,
    config: Optional[Dict[str, Any]],
    context_dir: str,
    command: Optional[List[str]],
    master_url: Optional[str],
    *,
    local: bool,
    test: bool,
    quick: bool,
) -> Any:
    """How every Native ``init`` ends, past its own argument checks.

    Not ``local``: submit the experiment (test mode with ``test``), print its id and
    exit 0. ``local``: the framework's context (``context_class()``, imported only
    then) with a launcher training in this process: the minimal test loop with
    ``quick``, else the searcher's ``max_length``.
    """
    if not local:
        from determined.experimental._native_submit import submit_experiment

        submit_experiment(native_raw_config(config, default_metric), context_dir, command,
                          master_url, test=test)
        sys.exit(0)
    cfg = native_config(config, default_metric, command)
    context = context_class()
    launcher = LocalLauncher(cfg, native_hparams(cfg), context_dir, quick)
    return context(launcher.env, launcher=launcher)
