"""Load a fixture's trial class the way a trial process does."""

import pathlib

from determined.harness import load_trial_class


def load(model_dir: pathlib.Path, entrypoint: str = "model_def:LinearTrial"):
    return load_trial_class(entrypoint, str(model_dir))
