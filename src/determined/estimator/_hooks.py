"""``RunHook``: an Estimator ``SessionRunHook`` that also hears about checkpoints and closing."""

from __future__ import annotations

import tensorflow as tf

__all__ = ["RunHook"]


class RunHook(tf.estimator.SessionRunHook):
    """A ``tf.estimator.SessionRunHook`` with platform events; pass it in ``TrainSpec(hooks=...)``.

    Example::

        class WriteMetadata(det.estimator.RunHook):
            def on_checkpoint_end(self, checkpoint_dir):
                with open(os.path.join(checkpoint_dir, "metadata.txt"), "w") as f:
                    f.write("my metadata")

        def build_train_spec(self):
            return tf.estimator.TrainSpec(make_input_fn(), hooks=[WriteMetadata()])
    """

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """Run after every checkpoint, with its directory (chief only)."""

    def on_checkpoint_load(self, checkpoint_dir: str) -> None:
        """Run at startup when the trial resumes from a checkpoint."""

    def on_trial_close(self) -> None:
        """Run when the trial closes; clean up here."""
