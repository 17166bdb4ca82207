"""custom_backward with explicit Python loops over the batch entries and the query rows,
softmax_backward on Python numbers. All in float64 too: a deliberately slow correct style."""

import functools
import math

import torch


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


# softmax_backward on Python numbers (which are float64): ``tolist()``, plain float
# arithmetic, ``torch.tensor`` back. Its time goes to Python, not to torch's operators, so the
# limits must let it through however cheaply the rule checks record operators.
@_float64_everywhere
def softmax_backward(d_weights, weights):
    S = weights.shape[-1]
    if weights.numel() == 0:
        return torch.zeros_like(weights)
    rows = []
    for a_row, g_row in zip(weights.reshape(-1, S).tolist(), d_weights.reshape(-1, S).tolist()):
        weighted_mean = 0.0
        for a, g in zip(a_row, g_row):
            weighted_mean += a * g
        rows.append([a * (g - weighted_mean) for a, g in zip(a_row, g_row)])
    return torch.tensor(rows, dtype=weights.dtype).reshape(weights.shape)


def _flat(t):
    return t.reshape(-1, t.shape[-2], t.shape[-1])


@_float64_everywhere
def attention_backward(d_out, q, k, v, weights, scale):
    lead = q.shape[:-2]
    dY, Q, K, V, A = _flat(d_out), _flat(q), _flat(k), _flat(v), _flat(weights)
    dQ, dK, dV = [], [], []
    for b in range(Q.shape[0]):
        dV.append(A[b].T @ dY[b])
        dA = dY[b] @ V[b].T
        dS = softmax_backward(dA, A[b])
        dQ.append(scale * (dS @ K[b]))
        dK.append(scale * (dS.T @ Q[b]))
    stack = lambda parts, like: torch.stack(parts).reshape(*lead, *like.shape[-2:])
    return stack(dQ, q), stack(dK, k), stack(dV, v)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        lead = q.shape[:-2]
        L, S = q.shape[-2], k.shape[-2]
        scale = 1.0 / math.sqrt(q.shape[-1])
        Q, K, V = _flat(q), _flat(k), _flat(v)
        keep = None
        if allowed is not None:
            keep = allowed.expand(*lead, L, S).reshape(-1, L, S)
        outs, probs = [], []
        for b in range(Q.shape[0]):
            scores = (Q[b] @ K[b].T) * scale
            if keep is not None:
                scores = torch.where(keep[b], scores, torch.full_like(scores, float("-inf")))
            p = torch.softmax(scores, dim=-1)
            probs.append(p)
            outs.append(p @ V[b])
        weights = torch.stack(probs).reshape(*lead, L, S)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale = scale
        return torch.stack(outs).reshape(*lead, L, v.shape[-1])

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, weights = ctx.saved_tensors
        dq, dk, dv = attention_backward(grad_out, q, k, v, weights, ctx.scale)
        return dq, dk, dv, None


@_float64_everywhere
def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
