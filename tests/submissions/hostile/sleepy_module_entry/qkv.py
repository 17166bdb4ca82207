"""Attack (blind red-team tester R-C, 2026-12-05): the TODO stubs (project_qkv answers
wrongly, so the skill is graded test by test), and an entry in
sys.modules whose __file__ property sleeps. The worker's reset between tests read each new
entry's __file__ and hung until the grader gave up (30 s a reset: 252 s for qkv's 9
tests). The reset now reads a plain module's __dict__ only and drops anything else, and
waits at most sandbox.client.RESET_TIMEOUT_S for an answer."""

from __future__ import annotations

import math

import torch
import torch.nn as nn


def project_qkv(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Project the inputs into queries, keys and values (Week 7 §2–§4).

    Formula convention: Q = X W_Q, K = X W_K, V = X W_V.

    Args:
        x: [B,T,C] token vectors.
        w_q, w_k: [C,d_k] projection matrices.
        w_v: [C,d_v] projection matrix.

    Returns:
        (q [B,T,d_k], k [B,T,d_k], v [B,T,d_v]).
    """
    # TODO(qkv): project x into queries, keys and values (Week 7 §4).
    return x, x, x  # wrong, but no stub: the skill is graded test by test, with resets between


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Raw scores S = Q Kᵀ, no scaling (Week 7 §4, §9).

    Args:
        q: [...,L,d] queries.
        k: [...,S,d] keys.

    Returns:
        [...,L,S]: entry (i, j) is the dot product of query i with key j.
    """
    # TODO(qkv): score every query against every key (Week 7 §4, §9).
    raise NotImplementedError("TODO(qkv): attention_scores")


def scale_scores(scores: torch.Tensor, d_k: int) -> torch.Tensor:
    """Divide the scores by √d_k (Week 7 §8: √d_k, not d_k).

    Args:
        scores: [...,L,S] raw scores.
        d_k: the key/query width.

    Returns:
        [...,L,S] scaled scores.
    """
    # TODO(qkv): scale the scores (Week 7 §8).
    raise NotImplementedError("TODO(qkv): scale_scores")


def weighted_values(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Mix the values with the attention weights: O = P V (Week 7 §6).

    Args:
        weights: [...,L,S] attention weights (each row sums to 1).
        v: [...,S,d_v] values.

    Returns:
        [...,L,d_v] outputs.
    """
    # TODO(qkv): mix the values with the weights (Week 7 §6).
    raise NotImplementedError("TODO(qkv): weighted_values")


def causal_uniform_mean(x: torch.Tensor) -> torch.Tensor:
    """The Week 7 §1 baseline: position t holds the mean of x[..., :t+1, :].

    Args:
        x: [...,T,C] token vectors.

    Returns:
        [...,T,C]: row t is the average of rows 0..t (a fixed, query-independent read).
    """
    # TODO(qkv): average each prefix x[..., :t+1, :] (Week 7 §1).
    raise NotImplementedError("TODO(qkv): causal_uniform_mean")


def single_head_attention(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, causal: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole chain of Week 7 §7 and §12 for one head.

    X → Q, K, V → scores Q Kᵀ → / √d_k → (−∞ on future keys when `causal`) → softmax over
    the key axis → weights @ V.

    Args:
        x: [B,T,C] token vectors.
        w_q, w_k: [C,d_k]; w_v: [C,d_v].
        causal: mask future keys (key j > query i) before the softmax.

    Returns:
        (out [B,T,d_v], weights [B,T,T]); every row of `weights` sums to 1. With `causal`,
        the weights on future keys are exactly 0 (exp(−∞) = 0 exactly, so a non-zero
        weight there means the future leaked), and so is every ∂out_t/∂x_s for s > t.
    """
    # TODO(qkv): chain projection, scores, scaling, causal mask, row softmax and values (Week 7 §7, §12).
    raise NotImplementedError("TODO(qkv): single_head_attention")


class AttentionHead(nn.Module):
    """A reusable causal attention head (Week 7 §13).

    Submodules `query`, `key`, `value` are `nn.Linear(embed_dim, head_size, bias=False)`;
    `causal_mask` is a registered bool buffer [context_length, context_length],
    allowed-style (`True` = may attend, i.e. `tril`), sliced to [:T, :T] in `forward`.
    Persistent or not, both are accepted: Week 7 §13 registers it as a plain (persistent)
    buffer; Day 1 §A.4 recommends `persistent=False`, which keeps it out of `state_dict()`
    (the tests load only the three projection weights, with `strict=False`).
    """

    def __init__(self, embed_dim: int, head_size: int, context_length: int) -> None:
        super().__init__()
        # TODO(qkv): create query/key/value projections and the causal_mask buffer (Week 7 §13).
        raise NotImplementedError("TODO(qkv): AttentionHead.__init__")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B,T,C] → [B,T,head_size]; ValueError when T > context_length."""
        # TODO(qkv): run the causal attention chain on x (Week 7 §13).
        raise NotImplementedError("TODO(qkv): AttentionHead.forward")


import sys as _sys
import time as _time
import types as _types


class _Sleepy(_types.ModuleType):
    @property
    def __file__(self):
        _time.sleep(100000)
        return ""

    def __getattr__(self, name):
        _time.sleep(100000)


_sys.modules["zz_sleepy_module"] = _Sleepy("zz_sleepy_module")
