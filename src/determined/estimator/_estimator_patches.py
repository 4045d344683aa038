"""Upstream 0.13 patched ``tf.estimator`` internals here for Horovod; this platform needs no
patches (one slot per TensorFlow trial). Kept so that the module imports."""
