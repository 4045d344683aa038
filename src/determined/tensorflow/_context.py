"""The context of a low-level :class:`TensorFlowTrial`."""

from __future__ import annotations

from determined.harness import TrialContext

__all__ = ["TensorFlowTrialContext"]


class TensorFlowTrialContext(TrialContext):
    """A :class:`~determined.harness.TrialContext`; the trial's graph and session
    belong to the platform, so there is nothing to wrap."""
