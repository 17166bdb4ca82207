"""custom_backward, terse functional style: every function a lambda assignment (backward a
`staticmethod(lambda …)`), the softmax backward in one expression, the scale folded into S̄ once,
and what backward needs kept as plain ctx attributes (no save_for_backward)."""

import torch

softmax_backward = lambda d_weights, weights: weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))

attention_backward = lambda d_out, q, k, v, weights, scale: (lambda ds: (ds @ k, ds.mT @ q, weights.mT @ d_out))(softmax_backward(d_out @ v.mT, weights) * scale)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        ctx.scale = q.shape[-1] ** -0.5
        s = q @ k.mT * ctx.scale
        ctx.weights = torch.softmax(s if allowed is None else s.masked_fill(~allowed, -torch.inf), -1)
        ctx.q, ctx.k, ctx.v = q, k, v
        return ctx.weights @ v

    backward = staticmethod(lambda ctx, d_out: (*attention_backward(d_out, ctx.q, ctx.k, ctx.v, ctx.weights, ctx.scale), None))


attention = lambda q, k, v, allowed=None: AttentionFunction.apply(q, k, v, allowed)
