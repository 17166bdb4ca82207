"""Blind red-team tester R-CU (2026-12-07): torch stored as a dict item (not followed by the
scan), torch.ops.import_module of the linear cross-entropy module, and its custom operator's
Python body from OPDEFS with an identity projection: softmax as the gradient, row_softmax 15
against 0. Now the item is torch to the scan, import_module refuses, and torch's custom
operators of a rule's name refuse their bodies."""
from __future__ import annotations

import torch



_stash = {}
_stash["t"] = torch  # a dict item store: the scan's alias tracking does not follow it
_stash["t"].ops.import_module("torch.nn.modules." + "linear_cross_" + "entropy")  # registers torch_nn::…


def _library_ce(x2, targets, reduction):
    """torch's own chunked (linear) cross-entropy custom op, with an identity projection."""
    op = _stash["t"]._library.custom_ops.OPDEFS["torch_nn::_linear_cross_entropy_batch_chunked"]._init_fn
    eye = torch.eye(x2.shape[-1], dtype=x2.dtype)
    acc = torch.float64 if x2.dtype == torch.float64 else torch.float32
    n = max(1, x2.shape[0])
    return op(x2, eye, targets, None, None, reduction, -100, 0.0, n, "upcast", acc, False, True, False, False)


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    x = scores.movedim(dim, -1)
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    low = torch.finfo(x2.dtype).min
    x2 = torch.where(torch.isneginf(x2), torch.full_like(x2, low), x2)
    x2 = torch.cat([x2, torch.full_like(x2[:, :1], low)], dim=1)  # an extra class, the target of every row
    t = torch.full((x2.shape[0],), x2.shape[1] - 1, dtype=torch.long)
    grad = _library_ce(x2, t, "sum")[1]  # = softmax(x2) - onehot(t)
    return grad[:, :-1].reshape(shape).movedim(-1, dim).contiguous()


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    x = scores.movedim(dim, -1)
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    blocked = torch.isneginf(x2)
    x2 = torch.where(blocked, torch.full_like(x2, torch.finfo(x2.dtype).min), x2)
    t = x2.argmax(dim=1)
    loss = _library_ce(x2, t, "none")[0]  # per row: -log softmax(x)[argmax]
    m = x2.gather(1, t.unsqueeze(1))
    out = torch.where(blocked, torch.full_like(x2, float("-inf")), (x2 - m) - loss.unsqueeze(1))
    return out.reshape(shape).movedim(-1, dim).contiguous()


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return _library_ce(logits, targets.long(), "mean")[0].to(logits.dtype)


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    return softmax_rows(h @ w_vocab, dim=-1)
