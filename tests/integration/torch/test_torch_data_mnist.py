"""pytorch/examples' mnist/main.py, shortened: the same training under torch's and stoker's loader.

The script has the example's shape: a small CNN with dropout, a train and a test loader (the
train loader shuffles), ``train()`` and ``test()`` per epoch, a StepLR schedule, with SGD and a
generated ``(tensor, int)`` dataset instead of MNIST's files (random shifts and noise drawn in
``__getitem__`` from torch's generator, which workers seed). After ``torch.manual_seed(1)`` the
weights it trains to are bit-identical whether its DataLoader comes from
``torch.utils.data`` or from ``stoker.torch.data``, with 0 and 2 worker processes (and with 2
worker threads for a dataset that draws nothing itself: threads share the process's generator).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
import torch.utils.data as torch_data
from torch import nn

import stoker.torch.data as door

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


class Net(nn.Module):
    """The example's network, scaled down to 14x14 images."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


class Digits(torch_data.Dataset[tuple[torch.Tensor, int]]):
    """``length`` generated 1x14x14 images of 10 classes, as ``(tensor, int)`` samples.

    Each class is a fixed pattern; with ``augment`` every fetch shifts it at random and adds
    noise, drawing from torch's global generator (seeded per worker by the loader).
    """

    def __init__(self, length: int, seed: int, augment: bool) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.patterns = torch.rand(10, 1, 14, 14, generator=generator)
        self.labels = torch.randint(0, 10, (length,), generator=generator).tolist()
        self.augment = augment

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        label = self.labels[index]
        image = self.patterns[label]
        if self.augment:
            shift = int(torch.randint(-1, 2, ()))
            image = torch.roll(image, shift, dims=2) + 0.1 * torch.randn_like(image)
        return image, label


def train(model: Net, train_loader: Any, optimizer: torch.optim.Optimizer) -> None:
    """One epoch of the example's ``train``."""
    model.train()
    for data, target in train_loader:
        data, target = data.to("cpu"), target.to("cpu")  # noqa: PLW2901 - the example's lines
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()


def test(model: Net, test_loader: Any) -> tuple[float, int]:
    """The example's ``test``: summed loss and correct predictions."""
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss, correct


test.__test__ = False  # type: ignore[attr-defined]  # the example's name, not a pytest test


def main(data: Any, loader_kwargs: dict[str, Any], augment: bool) -> dict[str, Any]:
    """The example's ``main``: seed, loaders, model, optimizer, epochs; the trained weights."""
    torch.manual_seed(1)
    train_loader = data.DataLoader(
        Digits(320, seed=0, augment=augment), batch_size=32, shuffle=True, **loader_kwargs
    )
    test_loader = data.DataLoader(
        Digits(128, seed=1, augment=False), batch_size=64, **loader_kwargs
    )
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    results = []
    for _ in range(2):
        train(model, train_loader, optimizer)
        results.append(test(model, test_loader))
        scheduler.step()
    return {"weights": model.state_dict(), "tests": results, "rng": torch.get_rng_state()}


@pytest.mark.parametrize(
    ("loader_kwargs", "augment"),
    [
        pytest.param({}, True, id="0-workers"),
        pytest.param({"num_workers": 2}, True, id="2-processes"),
        pytest.param({"num_workers": 2, "worker_type": "thread"}, False, id="2-threads"),
    ],
)
def test_mnist_example_trains_to_bit_identical_weights(
    loader_kwargs: dict[str, Any], augment: bool
) -> None:
    """Torch's DataLoader and stoker.torch.data's train the example to the same bits.

    Torch's DataLoader and stoker.torch.data's train the example to the same bits: every
    weight, every test loss and accuracy, and torch's generator state at the end.
    """
    torch_kwargs = {key: value for key, value in loader_kwargs.items() if key != "worker_type"}
    theirs = main(torch_data, torch_kwargs, augment)
    ours = main(door, loader_kwargs, augment)
    assert ours["tests"] == theirs["tests"]
    assert list(ours["weights"]) == list(theirs["weights"])
    for name, weight in theirs["weights"].items():
        assert torch.equal(ours["weights"][name], weight), name
    assert torch.equal(ours["rng"], theirs["rng"])
    untrained = Net().state_dict()
    assert not torch.equal(untrained["fc2.weight"], theirs["weights"]["fc2.weight"])
