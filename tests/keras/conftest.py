import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tensorflow"))
sys.path.insert(0, os.path.join(HERE, "trials"))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _tensorboard_dir(tmp_path_factory, monkeypatch):
    """Keep tfevent files out of /tmp/tensorboard."""
    monkeypatch.setenv("DET_TENSORBOARD_DIR", str(tmp_path_factory.mktemp("tensorboard")))
