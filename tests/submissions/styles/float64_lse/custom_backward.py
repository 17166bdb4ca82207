"""custom_backward computing in float64 (log-sum-exp softmax), casting back to the input dtype."""
import math

import torch


def softmax_backward(d_weights, weights):
    a, g = weights.double(), d_weights.double()
    mean = (a * g).sum(-1, keepdim=True)
    return (a * (g - mean)).to(weights.dtype)


def attention_backward(d_out, q, k, v, weights, scale):
    g, Q, K, V, A = (t.double() for t in (d_out, q, k, v, weights))
    gV = A.mT @ g
    gS = softmax_backward(g @ V.mT, A)
    gQ = scale * gS @ K
    gK = scale * gS.mT @ Q
    return gQ.to(q.dtype), gK.to(k.dtype), gV.to(v.dtype)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        Q, K, V = q.double(), k.double(), v.double()
        scale = 1.0 / math.sqrt(Q.shape[-1])
        s = Q @ K.mT * scale
        if allowed is not None:
            s = torch.where(allowed, s, torch.tensor(-math.inf, dtype=s.dtype))
        A = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
        ctx.save_for_backward(q, k, v, A)
        ctx.scale = scale
        return (A @ V).to(q.dtype)

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, A = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, A, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
