"""Models, data and the step clock of the GPU throughput benchmark (no determined
import: the bare and Lightning variants use it as is)."""

import time
from typing import Any, Dict, List, Tuple

import torch
from torch import nn

#: name -> settings; "cpu" sizes are for a smoke run without a GPU.
WORKLOADS: Dict[str, Dict[str, Any]] = {
    "mlp": {"what": "MLP 784-2048-2048-10, batch 512 (overhead-bound)",
            "gpu": {"sizes": [784, 2048, 2048, 10], "batch": 512, "warmup": 20, "timed": 200},
            "cpu": {"sizes": [32, 64, 10], "batch": 16, "warmup": 2, "timed": 8}},
    "resnet": {"what": "ResNet-18 (plain torch) on 3x32x32, batch 256 (compute-bound)",
               "gpu": {"width": 64, "image": 32, "batch": 256, "warmup": 10, "timed": 60},
               "cpu": {"width": 4, "image": 8, "batch": 4, "warmup": 1, "timed": 3}},
}


class Block(nn.Module):
    """ResNet's basic block: two 3x3 convolutions and a shortcut."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


def resnet18(width: int, classes: int = 10) -> nn.Module:
    """ResNet-18 for small images (CIFAR layout: 3x3 stem, no max-pool)."""
    layers: List[nn.Module] = [nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                               nn.ReLU()]
    cin = width
    for i, mult in enumerate((1, 2, 4, 8)):
        for j in range(2):
            layers.append(Block(cin, width * mult, 2 if i > 0 and j == 0 else 1))
            cin = width * mult
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def make_model(name: str, s: Dict[str, Any]) -> nn.Module:
    if name == "resnet":
        return resnet18(s["width"])
    sizes, layers = s["sizes"], []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


_DATASETS: Dict[str, torch.utils.data.TensorDataset] = {}


def make_dataset(name: str, s: Dict[str, Any]) -> torch.utils.data.TensorDataset:
    """Random inputs and labels for every batch of a run (made once per process)."""
    key = f"{name}:{sorted(s.items())}"
    if key not in _DATASETS:
        _DATASETS[key] = _random_dataset(name, s)
    return _DATASETS[key]


def _random_dataset(name: str, s: Dict[str, Any]) -> torch.utils.data.TensorDataset:
    n = s["batch"] * (s["warmup"] + s["timed"])
    g = torch.Generator().manual_seed(0)
    shape: Tuple[int, ...] = (3, s["image"], s["image"]) if name == "resnet" else (s["sizes"][0],)
    x = torch.randn(n, *shape, generator=g)
    return torch.utils.data.TensorDataset(x, torch.randint(0, 10, (n,), generator=g))


class StepClock:
    """Time from the start of the first timed step to the end of the last, the device
    synchronized at both ends (warm-up steps are not timed)."""

    def __init__(self, warmup: int, timed: int, device: torch.device):
        self.warmup, self.timed, self.device = warmup, timed, device
        self.start = self.end = 0.0

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def step_started(self, index: int) -> None:
        if index == self.warmup:
            self._sync()
            self.start = time.perf_counter()

    def step_ended(self, index: int) -> None:
        if index == self.warmup + self.timed - 1:
            self._sync()
            self.end = time.perf_counter()

    @property
    def ms_per_batch(self) -> float:
        return (self.end - self.start) * 1000.0 / self.timed
