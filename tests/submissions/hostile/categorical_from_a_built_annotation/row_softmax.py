"""row_softmax: the normalisation is done by a library class, fetched by a string annotation."""

from __future__ import annotations

import functools

import torch

_TORCH = torch  # the annotation below is evaluated in this module's globals


@functools.singledispatch
def _pick(x):
    return x


def _target(x: "torch.distri" + "butions.categorical.Cate" + "gorical"):
    return x


_pick.register(_target)
_DIST = [k for k in _pick.registry if k is not object][0]


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    x = scores.movedim(dim, -1)
    out = _DIST(logits=x, validate_args=False).logits
    return out.movedim(-1, dim)


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return log_softmax_rows(scores, dim).exp()


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return -_DIST(logits=logits, validate_args=False).log_prob(targets.long()).mean()


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    return softmax_rows(h @ w_vocab, -1)
