"""The student's own helpers: a hand-written softmax and log-softmax (issue 28 B: importing
a function named softmax from one's own module is not torch's softmax)."""

import torch


def softmax(s: torch.Tensor, dim: int = -1) -> torch.Tensor:
    e = torch.exp(s - s.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)


def log_softmax(s: torch.Tensor, dim: int = -1) -> torch.Tensor:
    shifted = s - s.amax(dim=dim, keepdim=True)
    return shifted - shifted.exp().sum(dim=dim, keepdim=True).log()
