"""Launchers a script entrypoint uses to start its ranks (Determined 0.38's
``determined.launch``): ``python3 -m determined.launch.torch_distributed CMD...`` and
``python3 -m determined.launch.wrap_rank RANK CMD...``."""
