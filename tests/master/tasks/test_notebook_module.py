"""``python -m determined.tasks.notebook``, the notebook task's process, run for real."""

import subprocess
import sys

# sys.modules[name] = None makes a module unfindable, as in a Python without it.
WITHOUT_JUPYTERLAB = ("import runpy, sys; sys.modules['jupyterlab'] = None; "
                      "sys.argv = ['notebook', '--version']; "
                      "runpy.run_module('determined.tasks.notebook', run_name='__main__')")


def test_without_jupyterlab_it_names_the_extra_to_install():
    """The default install has no JupyterLab: the task's log says which extra to install
    (it said only "No module named jupyterlab")."""
    out = subprocess.run([sys.executable, "-c", WITHOUT_JUPYTERLAB], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.count("\n") == 1, out.stderr  # one line, no traceback
    assert "JupyterLab is not installed" in out.stderr and "determined[notebook]" in out.stderr


def test_with_jupyterlab_it_runs_jupyterlab_with_the_arguments():
    out = subprocess.run([sys.executable, "-m", "determined.tasks.notebook", "--version"],
                         capture_output=True, text=True, timeout=120)
    import jupyterlab

    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == jupyterlab.__version__
