"""Attack: raise the worker's own output cap (sys.stdout is the worker's capped writer) and
print 50 MB per call, to bloat the report and the results file."""
import sys

import torch

sys.stdout.limit = 1 << 40  # the worker's CappedWriter: "keep everything"
sys.stderr.limit = 1 << 40


def _flood():
    sys.stdout.limit = 1 << 40
    sys.stdout.write("A" * (50 << 20))


def project_qkv(x, w_q, w_k, w_v):
    _flood()
    return x, x, x


def attention_scores(q, k):
    _flood()
    return q @ k.transpose(-2, -1)


def scale_scores(scores, d_k):
    _flood()
    return scores


def weighted_values(weights, v):
    _flood()
    return weights @ v


def causal_uniform_mean(v):
    _flood()
    return v


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    _flood()
    return x, x
