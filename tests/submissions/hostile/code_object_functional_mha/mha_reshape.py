"""mha_reshape: cheat B — torch's own F.multi_head_attention_forward, rebuilt from torch's
source with compile (reached by a computed dotted name) and types.FunctionType."""

from __future__ import annotations

import types

import torch
from torch import nn
from torch.ao.quantization.utils import getattr_from_fqn

_fns = torch.nn.functional


def _rebuild():
    space = getattr_from_fqn(_fns, "__di" + "ct__")
    path = getattr_from_fqn(_fns, "__fi" + "le__")
    maker = getattr_from_fqn(_fns, "__built" + "ins__")["com" + "pile"]
    with open(path) as fh:
        text = fh.read()
    module_code = maker(text, path, "ex" + "ec")
    wanted = "multi_head_" + "attention_forward"
    code = [c for c in module_code.co_consts if isinstance(c, types.CodeType) and c.co_name == wanted][0]
    glob = dict(space)
    glob["has_torch_" + "function"] = lambda *a: False  # no __torch_function__ round trip
    return types.FunctionType(code, glob, "lib_mha")


_lib_mha = _rebuild()


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    b, t, c = x.shape
    if c % num_heads:
        raise ValueError("C not divisible by heads")
    return x.reshape(b, t, num_heads, c // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int, context_length: int, bias: bool = False) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("embed_dim % num_heads != 0")
        self.embed_dim, self.num_heads, self.context_length = embed_dim, num_heads, context_length
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer(
            "blocked", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1), persistent=False
        )

    def forward(self, x, key_allowed=None, return_weights=False):
        b, t, c = x.shape
        if t > self.context_length:
            raise ValueError("T > context_length")
        w = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
        bias = None if self.w_q.bias is None else torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        mask = self.blocked[:t, :t]
        kpm = None if key_allowed is None else ~key_allowed.to(torch.bool)
        xt = x.transpose(0, 1)
        out, weights = _lib_mha(
            xt, xt, xt, c, self.num_heads, w, bias, None, None, False, 0.0,
            self.w_o.weight, self.w_o.bias, False, kpm, True, mask,
            False, None, None, None, None, None, False, False,
        )
        out = out.transpose(0, 1)
        return (out, weights) if return_weights else out


def score_elements(batch: int, num_heads: int, T: int) -> int:
    return batch * num_heads * T * T


def mha_flops(T: int, d: int) -> int:
    return 8 * T * d * d + 4 * T * T * d


def attention_flop_fraction(T: int, d: int) -> float:
    return 4 * T * T * d / mha_flops(T, d)


def attention_matrix_gib(batch: int, num_heads: int, T: int, bytes_per_element: int = 2, layers: int = 1) -> float:
    return batch * num_heads * T * T * bytes_per_element * layers / 2**30


def mha_param_count(d: int, bias: bool = True) -> int:
    return 4 * d * d + (4 * d if bias else 0)
