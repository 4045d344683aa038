"""The Native API for tf.estimator: ``init()`` returns a context whose
``train_and_evaluate`` trains under the platform.

Example::

    import determined.experimental.estimator as det_estimator

    context = det_estimator.init(config, local=True, test=True, context_dir=".")
    optimizer = context.wrap_optimizer(tf.compat.v1.train.AdamOptimizer(1e-2))
    estimator = tf.estimator.Estimator(model_fn)
    context.train_and_evaluate(estimator, train_spec, eval_spec)

With ``local=False`` (the default) ``init()`` submits an experiment that re-runs
this script on the master's trial processes and exits; there ``init()`` returns a
context with the trial's hyperparameters and ``train_and_evaluate`` trains as the
trial.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from determined.experimental._native import Mode, start_native
from determined.harness._native_trial import current_trial_env, hand_over

__all__ = ["init", "Mode"]


def init(
    config: Optional[Dict[str, Any]] = None,
    local: bool = False,
    test: bool = False,
    context_dir: str = "",
    command: Optional[List[str]] = None,
    master_url: Optional[str] = None,
    mode: Optional[Union[Mode, str]] = None,
) -> Any:
    """Create a tf.estimator experiment with the Native API.

    Args:
        config: the experiment configuration (merged over the Native defaults:
            single searcher, 100 batches, searcher metric ``loss``).
        local: train in the calling process (requires ``test=True``).
        test: a minimal loop: one scheduling unit of training, a validation and a
            checkpoint (with ``local=False``, a test-mode experiment on the master,
            waited for).
        context_dir: the model directory: uploaded when not local (required there, at
            most 96 MB, ``.detignore`` honoured); locally the default is the cwd.
        command: the entrypoint in the cluster (default: this script, relative to
            ``context_dir``, and its arguments; required in notebooks).
        master_url: the master (default ``$DET_MASTER`` or ``localhost:8080``).
        mode: 0.12 spelling: ``Mode.LOCAL`` trains locally for the searcher's
            ``max_length``; ``Mode.CLUSTER`` is ``local=False``.

    Returns:
        A :class:`determined.estimator.EstimatorNativeContext`. When submitting to a
        master, the calling process exits (code 0) after printing the experiment id.

    Raises:
        MasterError: when not local, no master is reachable or it refused the experiment.
        InvalidModelDefError: when not local, ``context_dir`` or ``command`` is unusable.
    """
    env = current_trial_env()
    if env is not None:  # re-run by a trial of the cluster: the master's config rules
        return _context_class()(env, launcher=hand_over)
    full_local = mode is not None and Mode(mode) is Mode.LOCAL
    if local and not test and not full_local:
        raise NotImplementedError(
            "determined.experimental.estimator.init(local=True, test=False) is not supported; "
            "use test=True for a quick local loop or mode=Mode.LOCAL to train locally"
        )
    return start_native(_context_class, "loss", config, context_dir, command, master_url,
                        local=bool(local or full_local), test=test,
                        quick=bool(local and test and not full_local))


def _context_class() -> Any:
    from determined.estimator import EstimatorNativeContext

    return EstimatorNativeContext
