"""A notebook task: JupyterLab with the arguments given, or a one-line reason when this
Python lacks it (the default install has no ``notebook`` extra). Jupyter's own lines read
as the other task processes' (``12:04:31 INFO message``, common/log_format.py) unless
the arguments set its log format.

    python -m determined.tasks.notebook --no-browser --port 8888 ...
"""

from __future__ import annotations

import importlib.util
import runpy
import sys

__all__ = ["main"]


def main() -> None:
    if importlib.util.find_spec("jupyterlab") is None:
        sys.stderr.write(
            f"JupyterLab is not installed for {sys.executable}, which runs this notebook: "
            "install determined's notebook extra there (pip install 'determined[notebook]', "
            "or -e '.[notebook]' in a checkout)\n")
        sys.exit(1)
    from determined.common.log_format import LOG_FORMAT, LOG_TIME_FORMAT

    given = " ".join(sys.argv[1:])
    if "log_format" not in given and "log_datefmt" not in given:
        sys.argv[1:1] = [f"--ServerApp.log_format={LOG_FORMAT}",
                         f"--ServerApp.log_datefmt={LOG_TIME_FORMAT}"]
    sys.argv[0] = "jupyterlab"
    runpy.run_module("jupyterlab", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
