"""The digits data set that ships with scikit-learn (1,797 8x8 images; no download)."""

from typing import Tuple

import numpy as np
import torch
from sklearn.datasets import load_digits

TRAIN_SIZE = 1500  # the rest (297 images) is the validation set


def digits_datasets() -> Tuple[torch.utils.data.TensorDataset, torch.utils.data.TensorDataset]:
    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.int64)
    order = torch.tensor(np.random.RandomState(0).permutation(len(x)))
    x, y = x[order], y[order]
    return (
        torch.utils.data.TensorDataset(x[:TRAIN_SIZE], y[:TRAIN_SIZE]),
        torch.utils.data.TensorDataset(x[TRAIN_SIZE:], y[TRAIN_SIZE:]),
    )
