"""Low-level TensorFlow trials (seed 004) and the TensorFlow helpers det.keras and
det.estimator share (dataset cache, RNG seeding, metric conversion).

The shared helpers live in this package's private modules (``_cache``, ``_rng``,
``_metrics``, ``_common``) so the Keras and Estimator packages never import each
other.

TensorFlowTrial checkpoints are ``tf.compat.v1.train.Saver`` files
(``model.ckpt.*``, format ``tf_checkpoint``) plus the data position; a resumed
trial continues mid-epoch at the recorded batch. In-graph random streams
(dropout, a dataset ``shuffle`` that reshuffles each epoch) restart after a
restore, so bit-identical resumption needs a deterministic input order.
"""

from determined.tensorflow._context import TensorFlowTrialContext
from determined.tensorflow._trial import TensorFlowTrial

__all__ = ["TensorFlowTrial", "TensorFlowTrialContext"]
