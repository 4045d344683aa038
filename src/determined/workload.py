"""Workloads as upstream 0.13's low-level controller API saw them.

A :class:`determined.LoopTrialController`'s ``run()`` iterates ``self.workloads``:
``(workload, args, respond)`` triples. ``workload.kind`` is a ``Workload.Kind``;
``args`` is ``[path]`` for ``CHECKPOINT_MODEL`` (a ``pathlib.Path`` to write into);
``respond(result)`` answers: training ``det.util.wrap_metrics(make_metrics(...), stop)``,
validation ``wrap_metrics({"validation_metrics": {...}}, stop)``, checkpoints anything.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, List, Tuple

from determined.harness._workload import Kind
from determined.harness._workload import Workload as _Workload

__all__ = ["Workload", "Stream", "Response", "Skipped"]


class Workload(_Workload):
    """One unit of work (``RUN_STEP``, ``COMPUTE_VALIDATION_METRICS``, ``CHECKPOINT_MODEL``,
    ``TERMINATE``)."""

    Kind = Kind


class Skipped:
    """The response of a process that does not report (not the chief)."""


Response = Any
Stream = Iterator[Tuple[Workload, List[Any], Callable[[Response], None]]]
