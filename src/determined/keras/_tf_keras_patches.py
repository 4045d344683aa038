"""Upstream 0.13 patched Keras internals here for Horovod; this platform needs no patches
(one slot per TensorFlow trial). Kept so that ``determined.keras._tf_keras_patches`` imports."""
