"""Low-level TensorFlow trials (seed 004) and the TensorFlow helpers det.keras and
det.estimator share (dataset cache, RNG seeding, metric conversion).

The shared helpers live in this package's private modules (``_cache``, ``_rng``,
``_metrics``, ``_common``) so the Keras and Estimator packages never import each
other.
"""

from determined.tensorflow._context import TensorFlowTrialContext
from determined.tensorflow._trial import TensorFlowTrial

__all__ = ["TensorFlowTrial", "TensorFlowTrialContext"]
