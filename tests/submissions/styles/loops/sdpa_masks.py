"""sdpa_masks with loops: one SDPA call per (batch, head) slice (a student's version)."""

import torch
import torch.nn.functional as F


def blocked_to_sdpa(blocked):
    return blocked == 0


def to_additive_mask(allowed, dtype=torch.float32):
    out = torch.zeros(allowed.shape, dtype=dtype)
    flat = out.view(-1)
    for idx, ok in enumerate(allowed.reshape(-1).tolist()):
        if not ok:
            flat[idx] = float("-inf")
    return out


def to_mha_attn_mask(allowed):
    return allowed.logical_not()


def hf_to_sdpa_mask(attention_mask, causal=True):
    B, S = attention_mask.shape
    out = torch.zeros(B, 1, S, S, dtype=torch.bool)
    for b in range(B):
        for i in range(S):
            for j in range(S):
                if attention_mask[b, j] != 0 and (not causal or j <= i):
                    out[b, 0, i, j] = True
    return out


def kv_cache_mask(L, S):
    m = torch.zeros(L, S, dtype=torch.bool)
    for i in range(L):
        last = S - L + i  # where query i sits in the full sequence
        m[i, : last + 1] = True
    return m


def sdpa(q, k, v, allowed=None, causal=False, dropout_p=0.0, training=False):
    L, S = q.shape[-2], k.shape[-2]
    lead = q.shape[:-2]
    mask = torch.ones(L, S, dtype=torch.bool)
    if causal:
        mask = kv_cache_mask(L, S)
    full = mask.expand(*lead, L, S)
    if allowed is not None:
        full = full & allowed.bool().expand(*lead, L, S)
    p = dropout_p if training else 0.0
    qf, kf, vf = q.reshape(-1, L, q.shape[-1]), k.reshape(-1, S, k.shape[-1]), v.reshape(-1, S, v.shape[-1])
    mf = full.reshape(-1, L, S)
    outs = []
    for n in range(qf.shape[0]):
        outs.append(F.scaled_dot_product_attention(qf[n:n + 1], kf[n:n + 1], vf[n:n + 1], attn_mask=mf[n:n + 1], dropout_p=p)[0])
    return torch.stack(outs).reshape(*lead, L, v.shape[-1])


def mha_self_attention(mha, x, allowed=None, key_allowed=None):
    outs = []
    for b in range(x.shape[0]):  # one example at a time
        xb = x[b:b + 1]
        if not mha.batch_first:
            xb = xb.permute(1, 0, 2)  # (T, 1, C)
        kpm = None if key_allowed is None else ~key_allowed[b:b + 1]
        am = None if allowed is None else ~allowed
        y, _ = mha(xb, xb, xb, key_padding_mask=kpm, attn_mask=am, need_weights=False)
        if not mha.batch_first:
            y = y.permute(1, 0, 2)
        outs.append(y[0])
    return torch.stack(outs)
