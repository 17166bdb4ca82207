"""Skill custom_backward typed from the lessons: Day 1 §2.3's five-line backward and Day 1 §B's
autograd.Function. Adapted only to the exercise API: `A.T` (which on a batch [...,L,S] would
reverse every axis) becomes `A.transpose(-2, -1)`, D is computed from (dA, A) as the lesson's
comment says (`= (dA * A).sum(-1)`), the softmax step lives in softmax_backward, and the mask
is an allowed-style argument."""

import math

import torch


def softmax_backward(dA, A):
    D = (dA * A).sum(-1, keepdims=True)            # 每行一个标量，= (dA * A).sum(-1)
    dS = A * (dA - D)                              # softmax 反向
    return dS


def attention_backward(dY, Q, K, V, A, s):
    dV = A.transpose(-2, -1) @ dY                  # (T,T)ᵀ(T,dv)
    dA = dY @ V.transpose(-2, -1)                  # (T,dv)(dv,T)
    dS = softmax_backward(dA, A)
    dQ, dK = s * dS @ K, s * dS.transpose(-2, -1) @ Q
    return dQ, dK, dV


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, allowed=None):
        s = 1 / math.sqrt(Q.size(-1))
        S = s * Q @ K.transpose(-2, -1)
        if allowed is not None:
            S = S.masked_fill(~allowed, float("-inf"))
        A = torch.softmax(S, dim=-1)
        ctx.save_for_backward(Q, K, V, A)
        ctx.s = s
        return A @ V

    @staticmethod
    def backward(ctx, dY):
        Q, K, V, A = ctx.saved_tensors
        dQ, dK, dV = attention_backward(dY, Q, K, V, A, ctx.s)
        return dQ, dK, dV, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
