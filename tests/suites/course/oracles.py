"""The lessons' own formulas, as plain torch: expected values that re-implement exercise
functions (attention, Week 7's head outputs and loss chain, the scaled scores, nn.MultiheadAttention
called the Day 1 §A.2 way). Hidden suites and ``snapshot_cases.py`` only: the release ships no
module a visible suite does not import, and the leak audit flags a replay in anything shipped.
Nothing here goes beyond the code printed in the lessons (Week 7 §12–§13, §16, Day 1 §2.3,
§4.3, §A.2–§A.4).
"""

from __future__ import annotations

import math

import torch

from . import sdpa_masks_data as sd
from . import week07 as w7


def attention(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, causal: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Week 7 §12, in float64: (out, weights)."""
    x, w_q, w_k, w_v = (t.to(torch.float64) for t in (x, w_q, w_k, w_v))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        T = x.size(-2)
        scores = scores.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def multi_head_attention(
    x: torch.Tensor, state: dict, num_heads: int, key_allowed: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Day 1 §4.3's code (view → transpose → causal attention per head → back → W_O), in
    float64, for nn.Linear weights given as a state_dict {w_q.weight, …[, w_q.bias, …]}."""
    x = x.to(torch.float64)
    B, T, C = x.shape
    d = C // num_heads

    def linear(name: str) -> torch.Tensor:
        out = x @ state[f"{name}.weight"].to(torch.float64).T
        return out + state[f"{name}.bias"].to(torch.float64) if f"{name}.bias" in state else out

    q, k, v = (linear(n).view(B, T, num_heads, d).transpose(1, 2) for n in ("w_q", "w_k", "w_v"))
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
    if key_allowed is not None:
        allowed = allowed & key_allowed.to(torch.bool)[:, None, None, :]
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    y = (weights @ v).transpose(1, 2).contiguous().view(B, T, C)
    out = y @ state["w_o.weight"].to(torch.float64).T
    if "w_o.bias" in state:
        out = out + state["w_o.bias"].to(torch.float64)
    return out, weights


def scaled_scores(dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """S̃ = Q Kᵀ / √d_k of Week 7 §8 for both prompts: [[0.4, 0.2], [0.8, 0.4]] | [[0.05, 0], [0.1, 0.4]]."""
    ex = w7.example(torch.float64)
    s = (ex.x @ ex.w_q) @ (ex.x @ ex.w_k).transpose(-2, -1) / 2**0.5
    return s.to(dtype)


def week7_h(dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """h_A, h_B: the final-position head outputs of Week 7 §6/§16, computed exactly ([2, 2])."""
    ex = w7.example(torch.float64)
    q, k, v = ex.x @ ex.w_q, ex.x @ ex.w_k, ex.x @ ex.w_v
    T = ex.x.size(1)
    scores = (q @ k.transpose(-2, -1)) / 2**0.5
    scores = scores.masked_fill(~torch.tril(torch.ones(T, T, dtype=torch.bool)), float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return out[:, -1].to(dtype)


def week7_chain_reference(
    x,
    w_q,
    w_k,
    w_v,
    w_vocab,
    targets,
    lr: float = 0.01,
    scale: float | None = None,
    softmax_dim: int = -1,
    invert_mask: bool = False,
    scale_after_softmax: bool = False,
) -> dict:
    """The same chain with torch's own softmax and autograd, in float64 (trusted side);
    ``scale`` replaces 1/√d_k, ``softmax_dim`` the key axis, ``invert_mask`` blocks the
    allowed keys instead of the future ones and ``scale_after_softmax`` scales the weights
    instead of the scores (to replay a wrong forward pass)."""
    import torch.nn.functional as F

    def loss_of(wq):
        q, k, v = x @ wq, x @ w_k, x @ w_v
        T = x.size(1)
        s = q.size(-1) ** -0.5 if scale is None else scale
        scores = (q @ k.transpose(-2, -1)) * (1.0 if scale_after_softmax else s)
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
        scores = scores.masked_fill(allowed if invert_mask else ~allowed, float("-inf"))
        out = (torch.softmax(scores, softmax_dim) * (s if scale_after_softmax else 1.0)) @ v
        return F.cross_entropy(out[:, -1] @ w_vocab, targets)

    wq = w_q.double().clone().requires_grad_(True)
    x, w_k, w_v, w_vocab = x.double(), w_k.double(), w_v.double(), w_vocab.double()
    loss = loss_of(wq)
    (grad,) = torch.autograd.grad(loss, [wq])
    with torch.no_grad():
        new = wq.detach().clone()
        new[1, 0] -= lr * grad[1, 0]
        after = loss_of(new)
    return {"loss": loss.detach(), "grad": grad, "loss_after": after}


def merged_blocked(num_heads: int, T: int, blocked: torch.Tensor | None, key_blocked: torch.Tensor | None) -> torch.Tensor | None:
    """attn_mask [T,T] and key_padding_mask [B,T] (True = not allowed) merged into the one
    [B·h, T, T] attn_mask nn.MultiheadAttention builds from them itself (logical or).
    Passing key_padding_mask on the trusted side would import sympy (~0.6 s) through
    torch._check_with; the merged mask gives the same attention."""
    if key_blocked is None:
        return blocked
    B = key_blocked.shape[0]
    merged = key_blocked[:, None, None, :].expand(B, num_heads, T, T)
    if blocked is not None:
        merged = merged | blocked
    return merged.reshape(B * num_heads, T, T)


def mha_expected(config: dict, state: dict[str, torch.Tensor], x: torch.Tensor, allowed=None, key_allowed=None) -> torch.Tensor:
    """Self-attention through the module, called the way Day 1 §A.2/§A.3 say: (T, B, C)
    when batch_first is False, masks flipped to True = not allowed, need_weights=False."""
    mha = sd.mha_module(config, state)
    seq = x.to(torch.float64)
    if not config["batch_first"]:
        seq = seq.transpose(0, 1)
    mask = merged_blocked(
        config["num_heads"], x.shape[1], None if allowed is None else ~allowed, None if key_allowed is None else ~key_allowed
    )
    with torch.no_grad():
        out, _ = mha(seq, seq, seq, attn_mask=mask, need_weights=False)
    if not config["batch_first"]:
        out = out.transpose(0, 1)
    return out.to(x.dtype)
