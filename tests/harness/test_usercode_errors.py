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


def test_an_import_error_shows_the_users_frames_only(tmp_path):
    """The traceback of a failing import led through six ``<frozen importlib._bootstrap>``
    frames and importlib/__init__.py before the user's own."""
    (tmp_path / "nested_def.py").write_text("import nested_helper\n\nclass T:\n    pass\n")
    (tmp_path / "nested_helper.py").write_text("x = 1\nimport no_such_module_either\n")
    with pytest.raises(UserCodeError) as raised:
        load_trial_class("nested_def:T", str(tmp_path))
    tb = raised.value.user_traceback
    assert "frozen" not in tb and "importlib" not in tb, tb
    assert tb.splitlines() == [
        "Traceback (most recent call last):",
        f'  File "{tmp_path / "nested_def.py"}", line 1, in <module>',
        "    import nested_helper",
        f'  File "{tmp_path / "nested_helper.py"}", line 2, in <module>',
        "    import no_such_module_either",
        "ModuleNotFoundError: No module named 'no_such_module_either'"], tb


def test_a_syntax_error_keeps_its_file_and_line_without_import_frames(tmp_path):
    (tmp_path / "broken_def.py").write_text("class T:\n    def f(self)\n        pass\n")
    with pytest.raises(UserCodeError) as raised:
        load_trial_class("broken_def:T", str(tmp_path))
    tb = raised.value.user_traceback
    assert "frozen" not in tb and "importlib" not in tb and "Traceback" not in tb, tb
    assert f'File "{tmp_path / "broken_def.py"}", line 2' in tb and "SyntaxError" in tb, tb
