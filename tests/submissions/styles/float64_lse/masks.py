"""masks, computing in float64 with log-sum-exp and casting back (a student's version)."""

import torch


def causal_mask(T, device=None):
    return torch.ones(T, T, device=device).tril().bool()


def apply_mask(scores, allowed, fill=float("-inf")):
    wide = scores.double()
    out = wide.masked_fill(allowed.logical_not(), fill)
    return out.to(scores.dtype)


def padding_allowed(lengths, T, left_padded=False):
    n = torch.tensor([int(v) for v in lengths]).unsqueeze(1)
    pos = torch.arange(T).unsqueeze(0)
    if left_padded:
        pos = pos.flip(-1)  # count from the right end
    return pos < n


def combine_masks(causal, key_allowed):
    return causal.unsqueeze(0).unsqueeze(0).logical_and(key_allowed.unsqueeze(1).unsqueeze(2))


def masked_softmax(scores, allowed):
    x = scores.double()
    x = x.masked_fill(allowed.logical_not(), float("-inf")) if x.shape == torch.broadcast_shapes(x.shape, allowed.shape) \
        else torch.where(allowed, x, float("-inf"))
    alive = torch.isfinite(x).any(dim=-1, keepdim=True)  # rows with something to read
    safe = torch.where(alive, x, torch.zeros_like(x))
    lse = torch.logsumexp(safe, dim=-1, keepdim=True)
    log_w = x - lse
    w = torch.where(alive, log_w.exp(), torch.zeros_like(x))
    return w.to(scores.dtype)


def prefix_lm_mask(T, prefix_len):
    causal = causal_mask(T)
    prefix = torch.zeros(T, T, dtype=torch.bool)
    prefix[:, :prefix_len] = True
    return causal | prefix


def document_mask(doc_ids):
    ids = doc_ids.cpu().long()
    T = ids.size(-1)
    diff = ids.unsqueeze(-1) - ids.unsqueeze(-2)
    return (diff == 0) & causal_mask(T)
