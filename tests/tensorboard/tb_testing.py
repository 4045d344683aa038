"""Reading TensorBoard event files back in tests (TensorBoard's own loader)."""

import glob
import os
from typing import Dict, List, Tuple


def scalars(directory: str) -> Dict[str, List[Tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of every event file under ``directory``."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    out: Dict[str, List[Tuple[int, float]]] = {}
    files = glob.glob(os.path.join(directory, "**", "*tfevents*"), recursive=True)
    for path in sorted(files):
        for event in EventFileLoader(path).Load():
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    number = value.simple_value
                elif value.HasField("tensor"):
                    from tensorboard.util import tensor_util

                    array = tensor_util.make_ndarray(value.tensor)
                    if array.size != 1:
                        continue
                    number = float(array.reshape(()))
                else:
                    continue
                out.setdefault(value.tag, []).append((event.step, number))
    return out
