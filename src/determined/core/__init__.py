"""The Core API (Determined 0.38's ``determined.core``): bring your own training loop.

A script reports metrics, stores and restores checkpoints, follows the searcher and
yields to preemption through ``with det.core.init() as core_context:``. It runs the
same as a script entrypoint of an experiment and by hand (``python train.py``; then
everything goes to a local directory, see ``determined.core._local``).
"""

from determined.core._checkpoint import (
    CheckpointContext,
    DownloadMode,
    DummyCheckpointContext,
    merge_metadata,
)
from determined.core._context import Context, init
from determined.core._distributed import DistributedContext, DummyDistributedContext
from determined.core._local import latest_local_checkpoint, read_records
from determined.core._preempt import DummyPreemptContext, PreemptContext, PreemptMode
from determined.core._searcher import (
    DummySearcherContext,
    SearcherContext,
    SearcherMode,
    SearcherOperation,
    Unit,
)
from determined.core._train import (
    DummyTrainContext,
    EarlyExitReason,
    TensorboardMode,
    TrainContext,
)

__all__ = [
    "CheckpointContext",
    "Context",
    "DistributedContext",
    "DownloadMode",
    "DummyCheckpointContext",
    "DummyDistributedContext",
    "DummyPreemptContext",
    "DummySearcherContext",
    "DummyTrainContext",
    "EarlyExitReason",
    "PreemptContext",
    "PreemptMode",
    "SearcherContext",
    "SearcherMode",
    "SearcherOperation",
    "TensorboardMode",
    "TrainContext",
    "Unit",
    "init",
    "latest_local_checkpoint",
    "merge_metadata",
    "read_records",
]
