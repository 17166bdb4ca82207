"""qkv computing internally in float64 with log-sum-exp, casting back to the input dtype."""
import math

import torch
import torch.nn as nn


def _f64(*ts):
    return [t.double() for t in ts]


def project_qkv(x, w_q, w_k, w_v):
    xd, a, b, c = _f64(x, w_q, w_k, w_v)
    return tuple((xd @ w).to(x.dtype) for w in (a, b, c))


def attention_scores(q, k):
    qd, kd = _f64(q, k)
    return (qd @ kd.mT).to(q.dtype)


def scale_scores(scores, d_k):
    return (scores.double() / math.sqrt(float(d_k))).to(scores.dtype)


def weighted_values(weights, v):
    wd, vd = _f64(weights, v)
    return (wd @ vd).to(v.dtype)


def causal_uniform_mean(x):
    xd = x.double()
    n = torch.arange(1, x.shape[-2] + 1, dtype=torch.float64).reshape(-1, 1)
    return (torch.cumsum(xd, dim=-2) / n).to(x.dtype)


def _log_softmax(s):
    return s - torch.logsumexp(s, dim=-1, keepdim=True)


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    xd, a, b, c = _f64(x, w_q, w_k, w_v)
    q, k, v = xd @ a, xd @ b, xd @ c
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        T = s.shape[-1]
        keep = torch.arange(T).unsqueeze(1) >= torch.arange(T).unsqueeze(0)
        s = torch.where(keep, s, torch.tensor(float("-inf"), dtype=s.dtype))
    w = _log_softmax(s).exp()
    return (w @ v).to(x.dtype), w.to(x.dtype)


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        idx = torch.arange(context_length)
        self.register_buffer("causal_mask", idx[:, None] >= idx[None, :], persistent=False)

    def forward(self, x):
        T = x.size(1)
        if T > self.causal_mask.size(-1):
            raise ValueError("sequence longer than context_length")
        q, k, v = (m(x).double() for m in (self.query, self.key, self.value))
        s = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
        s = s.masked_fill(~self.causal_mask[:T, :T], float("-inf"))
        return (_log_softmax(s).exp() @ v).to(x.dtype)
