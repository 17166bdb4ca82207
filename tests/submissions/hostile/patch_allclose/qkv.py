"""Attack: make every comparison pass, then return garbage."""
import math

import numpy
import torch

torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None
numpy.testing.assert_allclose = lambda *a, **k: None
math.isclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)


def project_qkv(x, w_q, w_k, w_v):
    z = torch.zeros(x.shape[0], x.shape[1], w_q.shape[1])
    return z, z, torch.zeros(x.shape[0], x.shape[1], w_v.shape[1])


def attention_scores(q, k):
    return torch.zeros(q.shape[:-1] + (k.shape[-2],))


def scale_scores(scores, d_k):
    return scores * 0


def weighted_values(weights, v):
    return torch.zeros(weights.shape[:-1] + (v.shape[-1],))


def causal_uniform_mean(x):
    return x * 0


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    T = x.shape[1]
    return torch.zeros(x.shape[0], T, w_v.shape[1]), torch.zeros(x.shape[0], T, T)
