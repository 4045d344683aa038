"""The Native API for tf.keras: ``init()`` returns a context whose wrapped models train
under the platform when ``fit`` is called.

Example::

    import determined.experimental.keras as det_keras

    context = det_keras.init(config, mode=det_keras.Mode.LOCAL, context_dir=".")
    model = context.wrap_model(tf.keras.Sequential([...]))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, validation_data=(x_val, y_val))

In cluster mode (the default) ``init()`` submits an experiment that re-runs this
script on the master's trial processes and exits; there ``init()`` returns a
context with the trial's hyperparameters and ``model.fit`` trains as the trial.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from determined.experimental._native import Mode, start_native
from determined.harness._native_trial import current_trial_env, hand_over

__all__ = ["init", "Mode"]


def init(
    config: Optional[Dict[str, Any]] = None,
    local: Union[bool, Mode, str] = False,
    test: bool = False,
    context_dir: str = "",
    command: Optional[List[str]] = None,
    master_url: Optional[str] = None,
    mode: Union[Mode, str] = Mode.CLUSTER,
) -> Any:
    """Create a tf.keras experiment with the Native API.

    Args:
        config: the experiment configuration (merged over the Native defaults:
            single searcher, 100 batches, searcher metric ``val_loss``).
        mode: ``Mode.CLUSTER`` submits to a master; ``Mode.LOCAL`` trains in the
            calling process for the searcher's ``max_length``, validating at the end.
        context_dir: the model directory: uploaded in cluster mode (required there,
            at most 96 MB, ``.detignore`` honoured); locally it defaults to the
            current directory.
        command: the entrypoint in the cluster (default: this script, relative to
            ``context_dir``, and its arguments; required in notebooks).
        master_url: the master (default ``$DET_MASTER`` or ``localhost:8080``).
        local: 0.13 spelling of ``mode=Mode.LOCAL``; needs ``test=True``. A ``Mode``
            here (0.12's second positional argument) is taken as ``mode``.
        test: with ``local=True``, train one scheduling unit, validate and checkpoint
            here; in cluster mode, submit a test-mode experiment and wait for it.

    Returns:
        A :class:`determined.keras.TFKerasNativeContext`. In cluster mode outside a
        trial, the calling process exits (code 0) after printing the experiment id.

    Raises:
        MasterError: in cluster mode, no master is reachable or it refused the experiment.
        InvalidModelDefError: in cluster mode, ``context_dir`` or ``command`` is unusable.
    """
    env = current_trial_env()
    if env is not None:  # re-run by a trial of the cluster: the master's config rules
        return _context_class()(env, launcher=hand_over)
    if isinstance(local, (Mode, str)):  # 0.12: init(config, Mode.LOCAL, ...)
        mode, local = local, False
    mode = Mode(mode)
    if local and not test:
        raise NotImplementedError(
            "determined.experimental.keras.init(local=True, test=False) is not supported; "
            "use test=True for a quick local loop or mode=Mode.LOCAL to train locally"
        )
    return start_native(_context_class, "val_loss", config, context_dir, command, master_url,
                        local=bool(local or mode is Mode.LOCAL), test=test,
                        quick=bool(local and test))


def _context_class() -> Any:
    from determined.keras import TFKerasNativeContext

    return TFKerasNativeContext
