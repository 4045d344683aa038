"""A notebook task: JupyterLab with the arguments given, or a one-line reason when this
Python lacks it (the default install has no ``notebook`` extra).

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
    sys.argv[0] = "jupyterlab"
    runpy.run_module("jupyterlab", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
