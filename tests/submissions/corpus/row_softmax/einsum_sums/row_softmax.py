"""Sums and products with einsum; the normalised axis moved last and back."""

import torch


def softmax_rows(scores, dim=-1):
    s = scores.movedim(dim, -1)
    e = torch.exp(s - s.amax(-1, keepdim=True))
    total = torch.einsum("...s->...", e).unsqueeze(-1)
    return (e / total).movedim(-1, dim)


def log_softmax_rows(scores, dim=-1):
    s = scores.movedim(dim, -1)
    shifted = s - s.amax(-1, keepdim=True)
    total = torch.einsum("...s->...", shifted.exp()).unsqueeze(-1)
    return (shifted - total.log()).movedim(-1, dim)


def cross_entropy(logits, targets):
    onehot = torch.nn.functional.one_hot(targets.long(), logits.shape[-1]).to(logits.dtype)
    return -torch.einsum("nv,nv->", onehot, log_softmax_rows(logits)) / logits.shape[0]


def vocab_probs(h, w_vocab):
    return softmax_rows(torch.einsum("...c,cv->...v", h, w_vocab))
