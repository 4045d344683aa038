"""``python -m determined.harness._rank_main``: one rank > 0 of a distributed trial that
a launcher (a remote agent) started with ``DET_RANK`` and the rest of the environment
described in :mod:`determined.harness._distributed`; runs its ``worker_main``.

A module of its own so that ``runpy`` (the agent's zygote) does not run a second copy
of ``_distributed`` as ``__main__`` next to the imported one.
"""

import sys

from determined.harness._distributed import worker_main

if __name__ == "__main__":
    sys.exit(worker_main())
