"""qkv, terse functional style (a correct submission in another style): one fused projection
split three ways, `torch.einsum`, `d_k ** -0.5`, `cumsum` for the prefix mean, `torch.baddbmm`
with `alpha` for the scaled scores, `torch.where` for the causal mask, and functions bound as
values (`scale_scores = lambda …`, `weighted_values = torch.matmul`)."""

import torch
import torch.nn.functional as F
from torch import nn


def project_qkv(x, w_q, w_k, w_v):
    return torch.cat((w_q, w_k, w_v), -1).T.matmul(x.mT).mT.split((w_q.size(1), w_k.size(1), w_v.size(1)), -1)


def attention_scores(q, k):
    return torch.einsum("...ld,...sd->...ls", q, k)


scale_scores = lambda scores, d_k: scores * d_k ** -0.5


weighted_values = torch.matmul


def causal_uniform_mean(x):
    return x.cumsum(-2) / torch.arange(1, x.size(-2) + 1, device=x.device, dtype=x.dtype).unsqueeze(-1)


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    q, k, v = project_qkv(x, w_q, w_k, w_v)
    s = torch.baddbmm(q.new_zeros(()), q, k.mT, beta=0, alpha=q.size(-1) ** -0.5)
    s = torch.where(torch.ones_like(s[0], dtype=torch.bool).tril() | (not causal), s, -torch.inf)
    a = F.softmax(s, -1)
    return a @ v, a


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(embed_dim, head_size, bias=False) for _ in range(3))
        self.register_buffer("causal_mask", torch.ones(context_length, context_length).tril().bool(), persistent=False)

    def forward(self, x):
        T = x.shape[1]
        if T > len(self.causal_mask):
            raise ValueError(f"T={T} > context_length={len(self.causal_mask)}")
        return F.softmax(attention_scores(self.query(x), self.key(x)).div(self.query.out_features ** 0.5).masked_fill(~self.causal_mask[:T, :T], -torch.inf), -1) @ self.value(x)
