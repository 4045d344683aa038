"""The Native API for tf.estimator: ``init()`` returns a context whose
``train_and_evaluate`` trains under the platform.

Example::

    import determined.experimental.estimator as det_estimator

    context = det_estimator.init(config, local=True, test=True, context_dir=".")
    optimizer = context.wrap_optimizer(tf.compat.v1.train.AdamOptimizer(1e-2))
    estimator = tf.estimator.Estimator(model_fn)
    context.train_and_evaluate(estimator, train_spec, eval_spec)
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from determined.experimental._native import Mode, make_launcher, native_config, submit_to_cluster

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
            checkpoint.
        context_dir: the model directory (copied into checkpoints; default: cwd).
        command: the entrypoint in the cluster (default: this script and its arguments).
        master_url: the master (default ``$DET_MASTER`` or ``localhost:8080``).
        mode: 0.12 spelling: ``Mode.LOCAL`` trains locally for the searcher's
            ``max_length``; ``Mode.CLUSTER`` is ``local=False``.

    Returns:
        A :class:`determined.estimator.EstimatorNativeContext`.

    Raises:
        MasterError: when not local (no master is reachable, or cluster submission is
            not available in this installation).
    """
    full_local = mode is not None and Mode(mode) is Mode.LOCAL
    if local and not test and not full_local:
        raise NotImplementedError(
            "determined.experimental.estimator.init(local=True, test=False) is not supported; "
            "use test=True for a quick local loop or mode=Mode.LOCAL to train locally"
        )
    cfg = native_config(config, "loss", command)
    if not (local or full_local):
        submit_to_cluster(master_url)
    from determined.estimator import EstimatorNativeContext

    launcher = make_launcher(cfg, context_dir, test=bool(local and test and not full_local))
    return EstimatorNativeContext(launcher.env, launcher)
