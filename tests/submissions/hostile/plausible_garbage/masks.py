"""Plausible garbage for masks: right shapes and dtypes, wrong values."""
import torch


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool)


def apply_mask(scores, allowed, fill=float("-inf")):
    return scores.clone()


def padding_allowed(lengths, T, left_padded=False):
    lengths = torch.as_tensor(lengths)
    return torch.ones(lengths.shape[0], T, dtype=torch.bool)


def combine_masks(causal, key_allowed):
    return torch.ones(key_allowed.shape[0], 1, causal.shape[0], causal.shape[1], dtype=torch.bool)


def masked_softmax(scores, allowed):
    shape = torch.broadcast_shapes(scores.shape, allowed.shape)
    return torch.full(shape, 1.0 / shape[-1], dtype=scores.dtype)


def prefix_lm_mask(T, prefix_len):
    return torch.ones(T, T, dtype=torch.bool)


def document_mask(doc_ids):
    T = doc_ids.shape[-1]
    return torch.ones(doc_ids.shape + (T,), dtype=torch.bool)
