"""Skill qkv typed from the lessons: Week 7 §12's script (one function per step) and
Week 7 §13's AttentionHead as printed — including its persistent causal_mask buffer.
Adapted only to the exercise API (function names, arguments, the `causal` flag)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def project_qkv(x, w_q, w_k, w_v):
    # Week 7 §12: Formula convention [C,d_head]
    q = x @ w_q
    k = x @ w_k
    v = x @ w_v
    return q, k, v


def attention_scores(q, k):
    raw_scores = q @ k.transpose(-2, -1)
    return raw_scores


def scale_scores(scores, d_k):
    scaled_scores = scores / math.sqrt(d_k)
    return scaled_scores


def weighted_values(weights, v):
    output = weights @ v
    return output


def causal_uniform_mean(x):
    # Week 7 §1: a uniform average over the prefix each position may read
    T = x.size(-2)
    causal_mask = torch.tril(torch.ones(T, T, dtype=x.dtype))
    weights = causal_mask / causal_mask.sum(dim=-1, keepdim=True)
    return weights @ x


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    q = x @ w_q
    k = x @ w_k
    v = x @ w_v

    raw_scores = q @ k.transpose(-2, -1)
    scaled_scores = raw_scores / math.sqrt(q.size(-1))

    masked_scores = scaled_scores
    if causal:
        T = x.size(1)
        causal_mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        masked_scores = scaled_scores.masked_fill(~causal_mask, float("-inf"))

    weights = torch.softmax(masked_scores, dim=-1)
    output = weights @ v
    return output, weights


class AttentionHead(nn.Module):
    def __init__(self, embed_dim: int, head_size: int, context_length: int):
        super().__init__()

        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)

        self.register_buffer(
            "causal_mask",
            torch.tril(
                torch.ones(
                    context_length,
                    context_length,
                    dtype=torch.bool,
                )
            ),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [B,T,C]
        _, T, _ = x.shape

        if T > self.causal_mask.size(0):
            raise ValueError("Sequence length exceeds context_length")

        q = self.query(x)  # [B,T,d_head]
        k = self.key(x)    # [B,T,d_head]
        v = self.value(x)  # [B,T,d_head]

        scores = q @ k.transpose(-2, -1)  # [B,T,T]
        scores = scores / math.sqrt(k.size(-1))

        mask = self.causal_mask[:T, :T]
        scores = scores.masked_fill(~mask, float("-inf"))

        weights = F.softmax(scores, dim=-1)
        return weights @ v  # [B,T,d_head]
