"""mha_reshape with explicit Python loops over heads, batch examples and query rows.
All in float64 too: a deliberately slow correct style."""

import functools
import math

import torch
import torch.nn as nn


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
def split_heads(x, num_heads):
    C = x.shape[-1]
    if C % num_heads != 0:
        raise ValueError("C must be divisible by num_heads")
    d = C // num_heads
    heads = []
    for i in range(num_heads):
        heads.append(x[:, :, i * d : (i + 1) * d])
    return torch.stack(heads, dim=1)


@_float64_everywhere
def merge_heads(x):
    pieces = []
    for i in range(x.shape[1]):
        pieces.append(x[:, i, :, :])
    return torch.cat(pieces, dim=-1)


def _row_softmax(row):
    top = row.max()
    e = torch.exp(row - top)
    return e / e.sum()


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim % num_heads != 0")
        self.h = num_heads
        self.max_len = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        blocked = torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), diagonal=1)
        self.register_buffer("blocked", blocked, persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.max_len:
            raise ValueError("sequence longer than context_length")
        d = C // self.h
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)
        batch_out, batch_w = [], []
        for b in range(B):
            head_out, head_w = [], []
            for i in range(self.h):
                cols = slice(i * d, (i + 1) * d)
                qi, ki, vi = q[b, :, cols], k[b, :, cols], v[b, :, cols]
                rows = []
                for t in range(T):
                    s = (ki @ qi[t]) / math.sqrt(d)
                    blocked = self.blocked[t, :T]
                    if key_allowed is not None:
                        blocked = blocked | ~key_allowed[b].bool()
                    s = s.masked_fill(blocked, float("-inf"))
                    rows.append(_row_softmax(s))
                w = torch.stack(rows)
                head_w.append(w)
                head_out.append(w @ vi)
            batch_w.append(torch.stack(head_w))
            batch_out.append(torch.cat(head_out, dim=-1))
        out = self.w_o(torch.stack(batch_out))
        if return_weights:
            return out, torch.stack(batch_w)
        return out


@_float64_everywhere
def score_elements(batch, num_heads, T):
    total = 0
    for _ in range(num_heads):
        total += batch * T * T
    return total


@_float64_everywhere
def mha_flops(T, d):
    terms = {
        "q, k, v projections": 3 * 2 * T * d * d,
        "q @ k^T": 2 * T * T * d,
        "weights @ v": 2 * T * T * d,
        "output projection": 2 * T * d * d,
    }
    return sum(terms.values())


@_float64_everywhere
def attention_flop_fraction(T, d):
    return (2 * T * T * d + 2 * T * T * d) / mha_flops(T, d)


@_float64_everywhere
def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    total_bytes = 0
    for _ in range(layers):
        total_bytes += batch * num_heads * T * T * bytes_per_element
    return total_bytes / 2**30


@_float64_everywhere
def mha_param_count(d, bias=True):
    count = 0
    for _ in ("q", "k", "v", "o"):
        count += d * d
        if bias:
            count += d
    return count
