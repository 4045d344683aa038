"""The Native API for tf.keras: ``init()`` returns a context whose wrapped models train
under the platform when ``fit`` is called.

Example::

    import determined.experimental.keras as det_keras

    context = det_keras.init(config, mode=det_keras.Mode.LOCAL, context_dir=".")
    model = context.wrap_model(tf.keras.Sequential([...]))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, validation_data=(x_val, y_val))
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from determined.experimental._native import Mode, make_launcher, native_config, submit_to_cluster

__all__ = ["init", "Mode"]


def init(
    config: Optional[Dict[str, Any]] = None,
    mode: Union[Mode, str] = Mode.CLUSTER,
    context_dir: str = "",
    command: Optional[List[str]] = None,
    master_url: Optional[str] = None,
    local: bool = False,
    test: bool = False,
) -> Any:
    """Create a tf.keras experiment with the Native API.

    Args:
        config: the experiment configuration (merged over the Native defaults:
            single searcher, 100 batches, searcher metric ``val_loss``).
        mode: ``Mode.CLUSTER`` submits to a master; ``Mode.LOCAL`` trains in the
            calling process for the searcher's ``max_length``, validating at the end.
        context_dir: the model directory (copied into checkpoints; default: the
            current directory).
        command: the entrypoint in the cluster (default: this script and its arguments).
        master_url: the master (default ``$DET_MASTER`` or ``localhost:8080``).
        local: 0.13 spelling of ``mode=Mode.LOCAL``; needs ``test=True``.
        test: with ``local=True``, train one scheduling unit, validate and checkpoint.

    Returns:
        A :class:`determined.keras.TFKerasNativeContext`.

    Raises:
        MasterError: in cluster mode (no master is reachable, or cluster submission is
            not available in this installation).
    """
    mode = Mode(mode)
    if local and not test:
        raise NotImplementedError(
            "determined.experimental.keras.init(local=True, test=False) is not supported; "
            "use test=True for a quick local loop or mode=Mode.LOCAL to train locally"
        )
    run_local = local or mode is Mode.LOCAL
    cfg = native_config(config, "val_loss", command)
    if not run_local:
        submit_to_cluster(master_url)
    from determined.keras import TFKerasNativeContext

    launcher = make_launcher(cfg, context_dir, test=bool(local and test))
    return TFKerasNativeContext(launcher.env, launcher)
