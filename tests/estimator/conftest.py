import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tensorflow"))
sys.path.insert(0, os.path.join(HERE, "trials"))

import tensorflow as tf  # noqa: E402

tf.get_logger().setLevel("ERROR")
