"""What the named mistakes of the lessons' debugging lists would return.

A test computes these for the same inputs it sends to the submission, and
``expect.close(..., mistakes=...)`` names the one the submission's answer matches (only
if it matches better than the right answer does). They are reproductions of *wrong* code,
so they hold nothing a student could use as an answer. Every hint id here declares its
function in ``tests/suites/qkv/hints.toml``.
"""

from __future__ import annotations

import math

import torch

from autograder.testing import outputs, weights  # (re-exported for the suites)


def _softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.softmax(scores, dim=dim)


def attention_chain(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, causal: bool = True
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """hint id → (out, weights) that single_head_attention (or AttentionHead.forward, whose
    ``nn.Linear`` weights are the transposes W.T) would return with that mistake."""
    q, k, v = (x @ w for w in (w_q, w_k, w_v))
    d_k, d_v, T, C = q.size(-1), v.size(-1), x.size(-2), x.size(-1)
    raw = q @ k.transpose(-2, -1)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
    neg_inf = float("-inf")

    def chain(
        scores: torch.Tensor,
        *,
        fill: float = neg_inf,
        mask: torch.Tensor | None = allowed if causal else None,
        dim: int = -1,
        retrieve: torch.Tensor = v,
    ):
        if mask is not None:
            scores = scores.masked_fill(~mask, fill)
        attn = _softmax(scores, dim)
        return attn @ retrieve, attn

    scaled = raw / math.sqrt(d_k)
    out: dict[str, tuple[torch.Tensor, torch.Tensor]] = {
        "qkv/divide-by-dk": chain(raw / d_k),
        "qkv/no-scaling": chain(raw),
        "qkv/softmax-wrong-axis": chain(scaled, dim=-2),
        "qkv/softmax-over-batch": chain(scaled, dim=0),  # normalised across the batch examples
        "qkv/keys-times-queries": chain(raw.transpose(-2, -1) / math.sqrt(d_k)),
        "qkv/scale-multiplied": chain(raw * math.sqrt(d_k)),
        "qkv/sqrt-precedence": chain(raw / (d_k / 2)),  # d_k ** 1/2 = d_k / 2
    }
    if C != d_k:
        out["qkv/scale-by-model-width"] = chain(raw / math.sqrt(C))
    if T != d_k:  # x.size(-2), the sequence length, for the width (blind tester I)
        out["qkv/scale-by-sequence-length"] = chain(raw / math.sqrt(T))
    if d_v != d_k:
        out["qkv/scale-by-value-width"] = chain(raw / math.sqrt(d_v))
    if d_k != 2:  # √2 written in: Week 7's d_k (blind tester R-BV: named as a scale by d_v where d_v = 2)
        out["qkv/scale-fixed-week7-width"] = chain(raw / math.sqrt(2))
    if math.isqrt(d_k) ** 2 != d_k and math.isqrt(d_k) > 1:  # ⌊√d_k⌋ (math.isqrt, int(math.sqrt(d_k))): listed,
        # it ties with the scale it equals on these inputs (√d_v, √C, √T) instead of being named as that (blind
        # tester R-CW); where it is 1 it is no scaling at all, whose hint says so
        out["qkv/scale-integer-sqrt"] = chain(raw / math.isqrt(d_k))
    if causal:
        out["qkv/zero-fill"] = chain(scaled, fill=0.0)
        out["qkv/no-causal-mask"] = chain(scaled, mask=None)
        out["qkv/diagonal-masked"] = chain(scaled, mask=torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1))
        # the blocked part added as triu(ones, 1) · (−∞): 0 · (−∞) = NaN on every allowed key, so every
        # row is NaN (blind tester R-BS: named as an inverted polarity, whose last rows are NaN too)
        added = torch.triu(torch.ones(T, T, dtype=scaled.dtype), diagonal=1) * neg_inf
        out["qkv/mask-times-inf"] = chain(scaled + added, mask=None)
        # tril(diagonal=1): each query reads one key ahead too (blind tester R-BS: no hint for −5.75)
        out["qkv/causal-one-ahead"] = chain(scaled, mask=torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=1))
        out["qkv/mask-triu"] = chain(scaled, mask=torch.triu(torch.ones(T, T, dtype=torch.bool)))  # itself and the future
        out["qkv/mask-polarity-inverted"] = chain(
            scaled, mask=~allowed
        )  # masked_fill(allowed, −∞): the past hidden, rows 0 and T−1 NaN
        after = _softmax(scaled).masked_fill(~allowed, 0.0)
        out["qkv/mask-after-softmax"] = (after @ v, after)
    else:
        out["qkv/causal-flag-ignored"] = chain(scaled, mask=allowed)  # masked although causal=False
    # the weights divided by √d_k after the softmax (blind tester R-AZ: no hint): rows sum to 1/√d_k
    late = _softmax(raw.masked_fill(~allowed, neg_inf) if causal else raw) / math.sqrt(d_k)
    if d_k > 1:
        out["qkv/scale-after-softmax"] = (late @ v, late)
    right_out, right_weights = chain(scaled)
    out["qkv/returns-swapped"] = (right_weights, right_out)  # return weights, out: the two results in each other's place
    masked_scores = scaled.masked_fill(~allowed, neg_inf) if causal else scaled
    out["qkv/returns-scores"] = (right_out, masked_scores)  # the scores returned in place of the softmax weights
    out["qkv/weights-times-keys"] = chain(scaled, retrieve=k)  # [B,T,d_k]: a shape error where d_k ≠ d_v
    if q.size(-2) == k.size(-1):
        out["qkv/missing-transpose"] = chain((q @ k) / math.sqrt(d_k))
    return out


def retrieval_from(own_weights, x, w_q, w_k, w_v, variants: dict[str, tuple]) -> dict[str, torch.Tensor]:
    """hint id → the output single_head_attention returns with that mistake, where the last step
    (retrieval: weights @ V) is taken from the submission's own weights (``own_weights``): a mistake there is
    named even when an earlier step made the weights wrong as well (two mistakes in one
    function, issue 30 §3). The other mistakes' outputs are those of ``attention_chain``."""
    out = outputs(variants)
    if type(own_weights) is torch.Tensor and own_weights.is_floating_point():
        k = x @ w_k
        own = own_weights.double()
        if own.dim() >= 1 and own.shape[-1] == k.shape[-2]:  # a squeezed 0-dim answer has no last axis
            try:
                out["qkv/weights-times-keys"] = (own @ k).to(own_weights.dtype)
            except RuntimeError:  # batch axes that do not broadcast: no such mistake here
                pass
    return out


def head_chain(x: torch.Tensor, state: dict[str, torch.Tensor], context_length: int | None = None) -> dict[str, torch.Tensor]:
    """hint id → what AttentionHead.forward returns with that mistake, for nn.Linear
    weights ``state`` ({query,key,value}.weight, each [head_size, C]) and, where given, the
    head's ``context_length``."""
    w = {n: state[f"{n}.weight"].to(torch.float64) for n in ("query", "key", "value")}
    x = x.to(torch.float64)
    chain = attention_chain(x, w["query"].T, w["key"].T, w["value"].T)
    chain.pop("qkv/returns-swapped")  # forward returns one tensor: there is no order to get wrong
    out = outputs(chain)
    T = x.size(-2)
    if context_length is not None and context_length > T:
        # causal_mask[-T:, :T], the buffer's last T rows: query i reads context_length − T keys ahead
        # (blind tester R-CW: named "one ahead" where context_length − T = 1; there the two tie now)
        rows = torch.tril(torch.ones(context_length, context_length, dtype=torch.bool))[-T:, :T]
        out["qkv/mask-rows-from-the-end"] = _plain(x, w["query"].T, w["key"].T, w["value"].T, allowed=rows)
    if x.size(-1) == w["query"].size(0):  # x @ linear.weight only runs when C == head_size
        out["qkv/linear-weight-not-transposed"] = _plain(x, w["query"], w["key"], w["value"])
    # a layer used for another's projection (k = self.query(x): blind tester R-L), or two swapped
    names = ("query", "key", "value")
    for i, target in enumerate(names):
        for source in names:
            # v from the key layer *is* weights @ K, whose hint names both causes: two entries
            # predicting the same numbers would name neither (blind tester R-BS, q31)
            if source != target and (target, source) != ("value", "key"):
                used = [w[n] for n in names]
                used[i] = w[source]
                out[f"qkv/head-layers-mixed#{target}-from-{source}"] = _plain(x, *(m.T for m in used))
    return out


def _plain(
    x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, allowed: torch.Tensor | None = None
) -> torch.Tensor:
    q, k, v = (x @ w for w in (w_q, w_k, w_v))
    T = x.size(-2)
    if allowed is None:
        allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(~allowed, float("-inf"))
    return _softmax(scores) @ v


def projections(x: torch.Tensor, w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor, name: str) -> dict[str, torch.Tensor]:
    """project_qkv's `name` output ("Q", "K" or "V") when the projections are mixed up, or
    its matrix used transposed."""
    out = swapped_projections({"Q": x @ w_q, "K": x @ w_k, "V": x @ w_v}, name)
    return out | transposed_projection(x, {"Q": w_q, "K": w_k, "V": w_v}[name])


def transposed_projection(x: torch.Tensor, w: torch.Tensor) -> dict[str, torch.Tensor]:
    """X·Wᵀ (nn.Linear's formula on a plain [C, d] matrix): it runs only where W is square,
    C = d; elsewhere it raises (course.qkv_data.explain names it on a square input)."""
    if w.size(-1) != w.size(-2):
        return {}
    return {"qkv/projection-weights-transposed": x @ w.transpose(-2, -1)}


def swapped_projections(products: dict[str, torch.Tensor], name: str) -> dict[str, torch.Tensor]:
    """The `name` output made from each other matrix ({"Q": X·W_Q, "K": X·W_K, "V": X·W_V}):
    a variant each, so K computed with W_Q is named as surely as K and V swapped."""
    return {f"qkv/swapped-projections#{other}": p for other, p in products.items() if other != name}


def scores(q: torch.Tensor, k: torch.Tensor) -> dict[str, torch.Tensor]:
    """attention_scores with a mistake."""
    out = {
        "qkv/keys-times-queries": k @ q.transpose(-2, -1),
        "qkv/scores-prescaled": q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)),
    }
    if q.size(-1) == k.size(-2) and q.size(-1) == k.size(-1):
        out["qkv/missing-transpose"] = q @ k
    if k.dim() >= 3:  # k.transpose(0, 1): right for one [S, d] matrix only (blind tester R-BL)
        swapped = _value_or_none(lambda: q @ k.transpose(0, 1))
        if swapped is not None and swapped.shape == (q @ k.transpose(-2, -1)).shape:
            out["qkv/transpose-fixed-axes#0-1"] = swapped
    return out


def _value_or_none(compute) -> torch.Tensor | None:
    try:
        return compute()
    except (RuntimeError, IndexError):
        return None


def scores_raised(q: torch.Tensor, k: torch.Tensor) -> dict[str, str]:
    """hint id → the first line of the error attention_scores raises with that mistake, where
    the mistake raises on these inputs: `k.transpose(1, 2)` swaps the last two axes of a 3-D
    [B,S,d] k only; a 2-D k has no axis 2, and with two leading axes it swaps h and S, where
    [B,h] against [B,S] do not broadcast (unless h = S)."""
    # `q @ k.T` reverses every axis of a batched k; where two mistakes raise the same words, the
    # message names neither (blind tester R-L got the transpose(1, 2) hint for `.T`)
    candidates = {
        "qkv/missing-transpose": _first_error_line(lambda: q @ k.permute(*range(k.dim() - 1, -1, -1))) if k.dim() >= 3 else None,
        "qkv/transpose-fixed-axes": _first_error_line(lambda: q @ k.transpose(1, 2)) if k.dim() != 3 else None,
        # k.transpose(0, 1): right for one [S, d] matrix only (blind tester R-BL)
        "qkv/transpose-fixed-axes#0-1": _first_error_line(lambda: q @ k.transpose(0, 1)) if k.dim() >= 3 else None,
    }
    said = [m for m in candidates.values() if m is not None]
    return {h: m for h, m in candidates.items() if m is not None and said.count(m) == 1}


def _first_error_line(compute) -> str | None:
    try:
        compute()
    except (RuntimeError, IndexError) as exc:
        return str(exc).split("\n", 1)[0]
    return None


def scale(s: torch.Tensor, d_k: int) -> dict[str, torch.Tensor]:
    """scale_scores with a mistake (for d_k > 1, where they differ from the right answer)."""
    out = {"qkv/divide-by-dk": s / d_k, "qkv/no-scaling": s.clone(), "qkv/scale-multiplied": s * math.sqrt(d_k)}
    if s.size(-1) != d_k:
        out["qkv/scale-by-score-width"] = s / math.sqrt(s.size(-1))
    if math.isqrt(d_k) ** 2 != d_k and math.isqrt(d_k) > 1:  # ⌊√d_k⌋: int(math.sqrt(d_k)), math.isqrt (R-CW)
        out["qkv/scale-integer-sqrt"] = s / math.isqrt(d_k)
    return out


def sqrt_precedence(s: torch.Tensor, d_k: int) -> dict[str, torch.Tensor]:
    """scale_scores with `scores / (d_k ** 1/2)`: ** binds tighter than /, so that is d_k / 2."""
    return {"qkv/sqrt-precedence": s / (d_k / 2)}


def uniform_mean(x: torch.Tensor) -> dict[str, torch.Tensor]:
    T, C = x.size(-2), x.size(-1)
    out = {
        "qkv/uniform-mean-future": x.mean(dim=-2, keepdim=True).expand_as(x).clone(),
        "qkv/uniform-mean-count": x.cumsum(-2) / T,  # divided by T instead of t + 1
        # the rows before t only, over t + 1 (blind tester R-B)
        "qkv/uniform-mean-excludes-current": (x.cumsum(-2) - x) / torch.arange(1, T + 1, dtype=x.dtype).unsqueeze(-1),
        "qkv/uniform-mean-count-from-zero": x.cumsum(-2) / torch.arange(T, dtype=x.dtype).unsqueeze(-1),
        # the same counts with row 0's 0 clamped to 1: rows 0 and 1 both divided by 1 — on T = 2 the
        # same numbers as no division at all, where neither is named (blind tester R-S)
        "qkv/uniform-mean-count-from-zero#clamped": x.cumsum(-2) / torch.arange(T, dtype=x.dtype).clamp(min=1).unsqueeze(-1),
        "qkv/uniform-mean-sum": x.cumsum(-2),
        # tril / tril.sum(dim=-2): the averaging matrix's columns sum to 1, not its rows (blind tester R-DD: no hint)
        "qkv/uniform-mean-column-normalised": _column_normalised(T, x.dtype) @ x,
        "qkv/uniform-mean-wrong-axis": x.cumsum(-1) / torch.arange(1, C + 1, dtype=x.dtype),
        # the same running sum along C, divided by the right counts t + 1 (a [T,1] column)
        "qkv/uniform-mean-wrong-axis#position-counts": x.cumsum(-1) / torch.arange(1, T + 1, dtype=x.dtype).unsqueeze(-1),
    }
    if T == C:  # counts [T] without unsqueeze(-1) lines up with C: it runs only where T = C (else uniform_mean_raised)
        out["qkv/uniform-mean-counts-row"] = x.cumsum(-2) / torch.arange(1, T + 1, dtype=x.dtype)
    fixed = _fixed_axis_mean(x)
    if isinstance(fixed, torch.Tensor) and fixed.shape == x.shape:
        out["qkv/uniform-mean-fixed-axis"] = fixed
    return out


def _column_normalised(T: int, dtype: torch.dtype) -> torch.Tensor:
    tril = torch.tril(torch.ones(T, T, dtype=dtype))
    return tril / tril.sum(dim=-2, keepdim=True)


def _fixed_axis_mean(x: torch.Tensor) -> torch.Tensor | str | None:
    """The running mean written for [B, T, C] alone — ``x.shape[1]`` and ``cumsum(dim=1)`` — on
    ``x``: its value, the first line of its error, or None on [B, T, C] (where it is right).
    On [T, C] it runs along C, on [B, h, T, C] along the heads (blind tester R-BF)."""
    if x.dim() == 3:
        return None
    try:
        return x.cumsum(1) / torch.arange(1, x.size(1) + 1, dtype=x.dtype).unsqueeze(-1)
    except (RuntimeError, IndexError) as exc:
        return str(exc).split("\n", 1)[0]


def uniform_mean_raised(x: torch.Tensor) -> dict[str, str]:
    """hint id → the first line of the error causal_uniform_mean raises with that mistake, where
    it raises on this x: counts = arange(1, T + 1) of shape [T], not [T, 1], broadcasts against
    the last axis C and fails where T ≠ C (blind tester I); axis 1 taken for T fails on most
    shapes other than [B, T, C]."""
    T, C = x.size(-2), x.size(-1)
    out = {}
    fixed = _fixed_axis_mean(x)
    if isinstance(fixed, str):
        out["qkv/uniform-mean-fixed-axis"] = fixed
    if T in (1, C):
        return out
    try:
        x.cumsum(-2) / torch.arange(1, T + 1, dtype=x.dtype)
    except RuntimeError as exc:
        out["qkv/uniform-mean-counts-row"] = str(exc).split("\n", 1)[0]
    return out


def mixed(weights_: torch.Tensor, v: torch.Tensor) -> dict[str, torch.Tensor]:
    """weighted_values with a mistake."""
    return {"qkv/transposed-weights": weights_.transpose(-2, -1) @ v} if weights_.size(-1) == weights_.size(-2) else {}
