"""Blind red-team tester R-CL (2026-12-07): masked_softmax through an autograd.Function whose
backward returns zeros: a finite gradient, so the visible test that checked only finiteness
passed (18.25 against 17.75 for the same forward without the Function). The visible test
now compares the gradient with the reference's."""
from __future__ import annotations
import torch


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def apply_mask(scores, allowed, fill=float("-inf")):
    return scores.masked_fill(~allowed, fill)


def padding_allowed(lengths, T, left_padded=False):
    lengths = torch.as_tensor(lengths).reshape(-1, 1)
    pos = torch.arange(T).reshape(1, -1)
    if left_padded:
        return pos >= (T - lengths)
    return pos < lengths


def combine_masks(causal, key_allowed):
    return causal.unsqueeze(0).unsqueeze(0) & key_allowed[:, None, None, :]


def _masked_softmax_fwd(scores, allowed):
    add = torch.zeros(allowed.shape, dtype=scores.dtype).masked_fill(~allowed, float("-inf"))
    s = scores + add
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m)).detach()
    e = torch.exp(s - m)
    tot = e.sum(dim=-1, keepdim=True)
    return torch.where(tot > 0, e / tot, torch.zeros_like(e))


class _MS(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores, allowed):
        return _masked_softmax_fwd(scores, allowed)

    @staticmethod
    def backward(ctx, g):
        return torch.zeros_like(g), None


def masked_softmax(scores, allowed):
    out = _MS.apply(scores, allowed)
    return out


def prefix_lm_mask(T, prefix_len):
    i = torch.arange(T).unsqueeze(1)
    j = torch.arange(T).unsqueeze(0)
    return (j <= i) | (j < prefix_len)


def document_mask(doc_ids):
    doc_ids = doc_ids.cpu()
    T = doc_ids.shape[-1]
    same = doc_ids.unsqueeze(-1) == doc_ids.unsqueeze(-2)
    return same & torch.ones(T, T, dtype=torch.bool).tril()
