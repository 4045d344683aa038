"""Imported by the local fork server (``_pool.process_context``) before it forks
trial processes: the platform's trial side and PyTorch, with PyTorch's lazy imports
done (nothing here starts a thread, so forking stays safe)."""

import determined.local._trial_process  # noqa: F401
import determined.harness  # noqa: F401
import determined.storage  # noqa: F401
import determined.tensorboard._events  # noqa: F401

try:
    from determined._procs._zygote import warm_torch

    warm_torch()
except ImportError:  # no PyTorch here: its trials fail with the import error
    pass
