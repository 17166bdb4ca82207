"""row_softmax: cheat A — torch.distributions.Categorical reached by a computed dotted name."""

from __future__ import annotations

import torch
from torch.ao.quantization.utils import getattr_from_fqn

_PATH = "distri" + "butions.Categ" + "orical"
_Cat = getattr_from_fqn(torch, _PATH)


def _lsm(scores, dim):
    x = scores.movedim(dim, -1)
    out = _Cat(logits=x, validate_args=False).logits  # torch's own log_softmax (logits - logsumexp)
    return out.movedim(-1, dim)


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return _lsm(scores, dim).exp()


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return _lsm(scores, dim)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    lp = _lsm(logits, -1)
    return -lp.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1).mean()


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    return softmax_rows(h @ w_vocab, -1)
