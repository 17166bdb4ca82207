from __future__ import annotations
import math
import torch
import torch.nn as nn


def split_heads(x, num_heads):
    B, T, C = x.shape
    if C % num_heads:
        raise ValueError("indivisible")
    return x.reshape(B, T, num_heads, C // num_heads).transpose(1, 2)


def merge_heads(x):
    B, h, T, d = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d)


def _torch_mha(embed_dim, num_heads, w_q, w_k, w_v, w_o):
    """torch's (quantizable) multi-head attention module, built around our four projections."""
    match torch.ao.nn.quantizable:
        case object(MultiheadAttention=cls):
            pass
    match object:
        case object(__new__=new):
            pass
    m = new(cls)
    nn.Module.__init__(m)
    m.embed_dim = embed_dim
    m.kdim = embed_dim
    m.vdim = embed_dim
    m.num_heads = num_heads
    m.head_dim = embed_dim // num_heads
    m.dropout = 0.0
    m.batch_first = False
    m.bias_k = None
    m.bias_v = None
    m.add_zero_attn = False
    m.linear_Q = w_q
    m.linear_K = w_k
    m.linear_V = w_v
    m.out_proj = w_o
    m.q_scaling_product = torch.ao.nn.quantized.FloatFunctional()
    m.quant_attn_output = torch.ao.quantization.QuantStub()
    m.quant_attn_output_weights = torch.ao.quantization.QuantStub()
    m.dequant_q = torch.ao.quantization.DeQuantStub()
    m.dequant_k = torch.ao.quantization.DeQuantStub()
    m.dequant_v = torch.ao.quantization.DeQuantStub()
    return m


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, context_length, bias=False):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError("indivisible")
        self.num_heads = num_heads
        self.w_q = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_k = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_v = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_o = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.register_buffer("mask", torch.ones(context_length, context_length, dtype=torch.bool).tril(), persistent=False)

    def forward(self, x, key_allowed=None, return_weights=False):
        B, T, C = x.shape
        if T > self.mask.shape[0]:
            raise ValueError("too long")
        m = _torch_mha(C, self.num_heads, self.w_q, self.w_k, self.w_v, self.w_o)
        m.train(False)
        kpm = None if key_allowed is None else ~key_allowed
        xt = x.transpose(0, 1)
        out, w = m(xt, xt, xt, key_padding_mask=kpm, need_weights=True, attn_mask=~self.mask[:T, :T], average_attn_weights=False)
        out = out.transpose(0, 1)
        return (out, w) if return_weights else out


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
