"""The log view's path mapping, which lives in :mod:`determined.common.log_view` (a
local run uses it too, without importing the master's API)."""

from determined.common.log_view import WORKDIR_LIKE, model_dir_paths, shown_line, shows

__all__ = ["WORKDIR_LIKE", "model_dir_paths", "shown_line", "shows"]
