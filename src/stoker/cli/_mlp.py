"""The demo's model: a two-layer perceptron in NumPy trained with SGD and momentum."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["MLP", "softmax_cross_entropy"]

Array = npt.NDArray[np.float32]


def softmax_cross_entropy(logits: Array, labels: npt.NDArray[np.int64]) -> tuple[float, Array]:
    """Return the mean cross-entropy of ``logits`` for ``labels`` and the class probabilities."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    probs = (exp / exp.sum(axis=1, keepdims=True)).astype(np.float32)
    picked = probs[np.arange(len(labels)), labels]
    loss = float(-np.log(np.maximum(picked, 1e-12)).mean())
    return loss, probs


@dataclass
class MLP:
    """``inputs -> hidden (ReLU) -> classes`` with He-initialised weights drawn from ``seed``.

    Attributes:
        inputs: Input features per sample.
        hidden: Hidden units.
        classes: Output classes.
        seed: Seed for the initial weights.
        momentum: SGD momentum.
    """

    inputs: int
    hidden: int
    classes: int
    seed: int = 0
    momentum: float = 0.9
    params: dict[str, Array] = field(init=False)
    _velocity: dict[str, Array] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        rng = np.random.default_rng(self.seed)
        shapes = {
            "w1": (self.inputs, self.hidden),
            "b1": (self.hidden,),
            "w2": (self.hidden, self.classes),
            "b2": (self.classes,),
        }
        self.params = {}
        for name, shape in shapes.items():
            scale = np.sqrt(2.0 / shape[0]) if len(shape) == 2 else 0.0
            self.params[name] = (rng.standard_normal(shape) * scale).astype(np.float32)
        self._velocity = {k: np.zeros_like(v) for k, v in self.params.items()}

    def forward(self, x: Array) -> tuple[Array, Array]:
        """Return ``(hidden activations, logits)`` for a batch ``x`` of shape (N, inputs)."""
        hidden = np.maximum(x @ self.params["w1"] + self.params["b1"], 0.0)
        return hidden, hidden @ self.params["w2"] + self.params["b2"]

    def train_step(self, x: Array, labels: npt.NDArray[np.int64], lr: float) -> tuple[float, Array]:
        """Take one SGD step on the batch; return its loss and the class probabilities."""
        hidden, logits = self.forward(x)
        loss, probs = softmax_cross_entropy(logits, labels)
        grad_logits = probs.copy()
        grad_logits[np.arange(len(labels)), labels] -= 1.0
        grad_logits /= len(labels)
        grad_hidden = (grad_logits @ self.params["w2"].T) * (hidden > 0)
        grads = {
            "w2": hidden.T @ grad_logits,
            "b2": grad_logits.sum(axis=0),
            "w1": x.T @ grad_hidden,
            "b1": grad_hidden.sum(axis=0),
        }
        for name, grad in grads.items():
            velocity = self._velocity[name]
            velocity *= self.momentum
            velocity -= lr * grad.astype(np.float32)
            self.params[name] += velocity
        return loss, probs
