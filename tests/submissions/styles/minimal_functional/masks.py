"""masks, terse functional style: `torch.where` (broadcasting the mask), a flipped right-padding
mask for left padding, and a masked softmax written out with the finite-max shift."""

import torch


def causal_mask(T, device=None):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def apply_mask(scores, allowed, fill=float("-inf")):
    return torch.where(allowed, scores, fill)


def padding_allowed(lengths, T, left_padded=False):
    m = torch.arange(T) < torch.as_tensor(lengths).cpu()[:, None]
    return m.flip(-1) if left_padded else m


def combine_masks(causal, key_allowed):
    return (causal & key_allowed[:, None, :]).unsqueeze(1)


def masked_softmax(scores, allowed):
    s = torch.where(allowed, scores, -torch.inf)
    m = s.amax(-1, keepdim=True)
    e = (s - torch.where(m.isfinite(), m, 0)).exp()
    z = e.sum(-1, keepdim=True)
    return e / torch.where(z > 0, z, 1)


def prefix_lm_mask(T, prefix_len):
    i, j = torch.arange(T)[:, None], torch.arange(T)
    return (j <= i) | (j < prefix_len)


def document_mask(doc_ids):
    d = doc_ids.cpu()
    return (d[..., :, None] == d[..., None, :]).tril()
