"""Attack: recognise the lesson's worked example and return its published numbers;
return plausible garbage (right shapes, rows that sum to 1) for anything else."""
import torch
from torch import nn

X = torch.tensor([[[1.0, 0, 0, 0], [0, 1, 0, 0]], [[0, 0, 1, 0], [0, 1, 0, 0]]])
Q = torch.tensor([[[0.5, 0.5], [1.0, 1.0]], [[-0.5, 0.5], [1.0, 1.0]]])
K = torch.tensor([[[1.131371, 0.0], [0.282843, 0.282843]], [[0.0, 0.141421], [0.282843, 0.282843]]])
V = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]])
S = torch.tensor([[[0.565685, 0.282843], [1.131371, 0.565685]], [[0.070711, 0.0], [0.141421, 0.565685]]])
P = torch.tensor([[[1.0, 0.0], [0.598688, 0.401312]], [[1.0, 0.0], [0.425557, 0.574443]]])
O = torch.tensor([[[1.0, 0.0], [0.598688, 0.401312]], [[-1.0, 0.0], [-0.425557, 0.574443]]])


def _is_example(x):
    return x.shape == X.shape and torch.allclose(x.float(), X)


def _uniform(B, T, dtype):
    return torch.tril(torch.ones(T, T, dtype=dtype)).div(torch.arange(1, T + 1, dtype=dtype)[:, None]).expand(B, T, T).clone()


def project_qkv(x, w_q, w_k, w_v):
    if _is_example(x):
        return Q.to(x.dtype), K.to(x.dtype), V.to(x.dtype)
    z = torch.zeros(x.shape[0], x.shape[1], w_q.shape[1], dtype=x.dtype)
    return z, z.clone(), torch.zeros(x.shape[0], x.shape[1], w_v.shape[1], dtype=x.dtype)


def attention_scores(q, k):
    if q.shape == Q.shape and torch.allclose(q.float(), Q):
        return S.to(q.dtype)
    return torch.zeros(q.shape[:-1] + (k.shape[-2],), dtype=q.dtype)


def scale_scores(scores, d_k):
    if scores.shape == S.shape and torch.allclose(scores.float(), S, atol=1e-4):
        return (S / 2 ** 0.5).to(scores.dtype)
    return scores.clone()


def weighted_values(weights, v):
    return torch.zeros(weights.shape[:-1] + (v.shape[-1],), dtype=v.dtype)


def causal_uniform_mean(x):
    if _is_example(x):
        return torch.tensor([[[1.0, 0, 0, 0], [0.5, 0.5, 0, 0]], [[0, 0, 1.0, 0], [0, 0.5, 0.5, 0]]], dtype=x.dtype)
    return x.clone()


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    if _is_example(x):
        return O.to(x.dtype), P.to(x.dtype)
    B, T, _ = x.shape
    return torch.zeros(B, T, w_v.shape[1], dtype=x.dtype), _uniform(B, T, x.dtype)


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        self.query = nn.Linear(embed_dim, head_size, bias=False)
        self.key = nn.Linear(embed_dim, head_size, bias=False)
        self.value = nn.Linear(embed_dim, head_size, bias=False)
        self.register_buffer("causal_mask", torch.ones(context_length, context_length).tril().bool(), persistent=False)

    def forward(self, x):
        if x.shape[1] > self.causal_mask.shape[0]:
            raise ValueError("too long")
        if _is_example(x):
            return O.to(x.dtype)
        return torch.zeros(x.shape[0], x.shape[1], self.value.out_features, dtype=x.dtype)
