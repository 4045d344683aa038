"""Loading a trial class whose module imports a framework this install lacks."""

import sys

import pytest

from determined.errors import UserCodeError
from determined.harness._usercode import load_trial_class


def test_a_missing_framework_names_the_extra_that_installs_it(tmp_path, monkeypatch):
    """The default install has no TensorFlow: a tf.keras example said only "No module
    named 'tensorflow'", five restarts in a row."""
    (tmp_path / "keras_def.py").write_text("import tensorflow as tf\n\nclass T:\n    pass\n")
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # as if it were not installed
    with pytest.raises(UserCodeError) as raised:
        load_trial_class("keras_def:T", str(tmp_path))
    message = str(raised.value)
    assert "importing keras_def.py raised ModuleNotFoundError" in message
    assert "determined's tensorflow extra: pip install 'determined[tensorflow]'" in message


def test_other_missing_modules_get_no_hint(tmp_path):
    (tmp_path / "plain_def.py").write_text("import no_such_module_here\n")
    with pytest.raises(UserCodeError) as raised:
        load_trial_class("plain_def:T", str(tmp_path))
    assert "No module named 'no_such_module_here'" in str(raised.value)
    assert "extra" not in str(raised.value)
