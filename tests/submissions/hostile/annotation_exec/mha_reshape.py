# Blind red-team tester J (2026-12-05): code in a string annotation, run by typing.get_type_hints;
# it wraps the op recorder and runs F.multi_head_attention_forward. It scored mha_reshape 15/15.
from __future__ import annotations
import math
import torch
import torch.nn as nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if C % num_heads != 0:
        raise ValueError("C not divisible by num_heads")
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError("embed_dim % num_heads")
        self.num_heads = num_heads
        self.context_length = context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.context_length:
            raise ValueError("too long")
        q = split_heads(self.w_q(x), self.num_heads)
        k = split_heads(self.w_k(x), self.num_heads)
        v = split_heads(self.w_v(x), self.num_heads)
        s = q @ k.transpose(-2, -1) / math.sqrt(C // self.num_heads)
        allowed = self.mask[:T, :T].unsqueeze(0).unsqueeze(0)
        if key_allowed is not None:
            allowed = allowed & key_allowed.bool()[:, None, None, :]
        s = s.masked_fill(~allowed, float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        e = torch.exp(s - m)
        w = e / e.sum(dim=-1, keepdim=True)
        out = self.w_o(merge_heads(w @ v))
        if return_weights:
            return out, w
        return out


def score_elements(batch, num_heads, T):
    return batch * num_heads * T * T


def mha_flops(T, d):
    return 8 * T * d * d + 4 * T * T * d


def attention_flop_fraction(T, d):
    return (4 * T * T * d) / mha_flops(T, d)


def attention_matrix_gib(batch, num_heads, T, bytes_per_element=2, layers=1):
    return batch * num_heads * T * T * bytes_per_element * layers / 2**30


def mha_param_count(d, bias=True):
    return 4 * d * d + (4 * d if bias else 0)


# ---- attack: an annotation string evaluated by typing.get_type_hints (eval the scan never sees)
import typing

_CODE = r'''
import sys
import torch.nn.functional as F
HIDE = [False]
f = sys._getframe()
while f is not None:
    c = f.f_locals.get("ctx")
    if c is not None and type(c).__name__ == "WorkerContext":
        probes = type(c).module.__globals__["probes"]
        if not getattr(probes, "_pwned", False):
            probes._pwned = True
            probes._hide = HIDE
            OR = probes.OpRecorder
            otf = OR.__torch_function__
            def ntf(self, func, types, args=(), kwargs=None):
                if probes._hide[0]:
                    return func(*args, **(kwargs or {}))
                return otf(self, func, types, args, kwargs)
            OR.__torch_function__ = ntf
        HIDE = probes._hide
        break
    f = f.f_back

def fwd(self, x, key_allowed=None, return_weights=False):
    B, T, C = x.shape
    if T > self.context_length:
        raise ValueError("too long")
    HIDE[0] = True
    try:
        b = None
        if self.w_q.bias is not None:
            b = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        kpm = None if key_allowed is None else ~key_allowed.bool()
        xt = x.transpose(0, 1)
        out, w = F.multi_head_attention_forward(
            xt, xt, xt, C, self.num_heads, None, b, None, None, False, 0.0,
            self.w_o.weight, self.w_o.bias, training=False, key_padding_mask=kpm, need_weights=True,
            attn_mask=~self.mask[:T, :T], use_separate_proj_weight=True,
            q_proj_weight=self.w_q.weight, k_proj_weight=self.w_k.weight, v_proj_weight=self.w_v.weight,
            average_attn_weights=False)
    finally:
        HIDE[0] = False
    out = out.transpose(0, 1)
    if return_weights:
        return out, w
    return out
MHA.forward = fwd
'''


def _hook(x: "exec(_CODE, {'MHA': MultiHeadAttention, 'torch': torch})"):
    pass


typing.get_type_hints(_hook)
