"""sdpa_masks with loops: one SDPA call per (batch, head) slice (a student's version).
All in float64 too: a deliberately slow correct style."""

import functools

import torch
import torch.nn.functional as F


# A deliberately slow style: the explicit loops below, every floating-point input cast to
# float64 first and the result cast back to the input's dtype. The grader's CPU-time limits
# must still let it through (autograder/runner/cpu_limits.py, docs/time-limits.md).
def _float64_everywhere(fn):
    @functools.wraps(fn)
    def run(*args, **kwargs):
        floats = [a.dtype for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.is_floating_point()]

        def up(a):
            return a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a

        def down(out):
            if isinstance(out, tuple):
                return tuple(down(o) for o in out)
            if floats and isinstance(out, torch.Tensor) and out.is_floating_point():
                return out.to(floats[0])
            return out

        return down(fn(*[up(a) for a in args], **{k: up(v) for k, v in kwargs.items()}))

    return run


@_float64_everywhere
def blocked_to_sdpa(blocked):
    return blocked == 0


@_float64_everywhere
def to_additive_mask(allowed, dtype=torch.float32):
    out = torch.zeros(allowed.shape, dtype=dtype)
    flat = out.view(-1)
    for idx, ok in enumerate(allowed.reshape(-1).tolist()):
        if not ok:
            flat[idx] = float("-inf")
    return out


@_float64_everywhere
def to_mha_attn_mask(allowed):
    return allowed.logical_not()


@_float64_everywhere
def hf_to_sdpa_mask(attention_mask, causal=True):
    B, S = attention_mask.shape
    out = torch.zeros(B, 1, S, S, dtype=torch.bool)
    for b in range(B):
        for i in range(S):
            for j in range(S):
                if attention_mask[b, j] != 0 and (not causal or j <= i):
                    out[b, 0, i, j] = True
    return out


@_float64_everywhere
def kv_cache_mask(L, S):
    m = torch.zeros(L, S, dtype=torch.bool)
    for i in range(L):
        last = S - L + i  # where query i sits in the full sequence
        m[i, : last + 1] = True
    return m


@_float64_everywhere
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
        outs.append(
            F.scaled_dot_product_attention(qf[n : n + 1], kf[n : n + 1], vf[n : n + 1], attn_mask=mf[n : n + 1], dropout_p=p)[0]
        )
    return torch.stack(outs).reshape(*lead, L, v.shape[-1])


def mha_self_attention(mha, x, allowed=None, key_allowed=None):
    outs = []
    for b in range(x.shape[0]):  # one example at a time
        xb = x[b : b + 1]
        if not mha.batch_first:
            xb = xb.permute(1, 0, 2)  # (T, 1, C)
        kpm = None if key_allowed is None else ~key_allowed[b : b + 1]
        am = None if allowed is None else ~allowed
        y, _ = mha(xb, xb, xb, key_padding_mask=kpm, attn_mask=am, need_weights=False)
        if not mha.batch_first:
            y = y.permute(1, 0, 2)
        outs.append(y[0])
    return torch.stack(outs)
