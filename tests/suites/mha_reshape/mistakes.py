"""What the named mistakes of skill mha_reshape would return.

Tests compute these for the same inputs they send to the submission; ``expect.close(...,
mistakes=...)`` (tensors) or ``numbers(...)`` (counts and costs) names the mistake the
submission's answer matches. They reproduce *wrong* code: each variant below carries one
of the bugs of the lessons' debugging lists (Week 7 §18, Day 1 §3–§5, §A.2, §A.5).
"""

from __future__ import annotations

import math

import torch

from autograder.testing import outputs, weights  # re-exported for the suites


# --------------------------------------------------------------------------- reshapes
def _split(x: torch.Tensor, h: int, how: str) -> torch.Tensor:
    B, T, C = x.shape
    d = C // h
    if how == "view-without-transpose":  # x.view(B, h, T, d): positions and features scrambled
        return x.reshape(B, h, T, d)
    if how == "interleaved-heads":  # view(B, T, d, h): head i takes features i, i+h, i+2h, …
        return x.reshape(B, T, d, h).permute(0, 3, 1, 2)
    if how == "missing-transpose":  # view(B, T, h, d) returned as it is: [B,T,h,d]
        return x.reshape(B, T, h, d)
    if how == "transposed-first":  # x.transpose(1, 2).reshape(B, h, T, d): [B,C,T] cut into heads (R-CW)
        return x.transpose(1, 2).reshape(B, h, T, d)
    return x.reshape(B, T, h, d).transpose(1, 2)


def _merge(y: torch.Tensor, how: str) -> torch.Tensor:
    B, h, T, d = y.shape
    if how == "view-without-transpose":  # y.view(B, T, h·d) straight from [B,h,T,d]
        return y.reshape(B, T, h * d)
    if how == "interleaved-heads":  # feature j·h + i instead of i·d + j
        return y.permute(0, 2, 3, 1).reshape(B, T, d * h)
    if how == "concat-wrong-axis":  # torch.cat(heads, dim=-2): heads stacked along the token axis
        return y.reshape(B, h * T, d)
    if how == "transpose-wrong-axes":  # transpose(2, 3) instead of (1, 2): tokens and features swapped
        return y.transpose(2, 3).reshape(B, T, h * d)
    if how == "transpose-1-3":  # transpose(1, 3): heads and features swapped, [B,d,T,h] (blind tester R-BJ)
        return y.transpose(1, 3).reshape(B, T, h * d)
    if how == "heads-reversed":  # heads concatenated last to first
        return y.flip(1).transpose(1, 2).reshape(B, T, h * d)
    return y.transpose(1, 2).reshape(B, T, h * d)


def split_heads(x: torch.Tensor, num_heads: int) -> dict[str, torch.Tensor]:
    return {
        "mha_reshape/view-without-transpose": _split(x, num_heads, "view-without-transpose"),
        "mha_reshape/interleaved-heads": _split(x, num_heads, "interleaved-heads"),
        "mha_reshape/split-missing-transpose": _split(x, num_heads, "missing-transpose"),
        "mha_reshape/split-transposed-first": _split(x, num_heads, "transposed-first"),
    }


def merge_heads(y: torch.Tensor) -> dict[str, torch.Tensor]:
    return {
        "mha_reshape/view-without-transpose": _merge(y, "view-without-transpose"),
        "mha_reshape/interleaved-heads": _merge(y, "interleaved-heads"),
        "mha_reshape/concat-wrong-axis": _merge(y, "concat-wrong-axis"),
        "mha_reshape/transpose-wrong-axes": _merge(y, "transpose-wrong-axes"),
        "mha_reshape/transpose-wrong-axes#1-3": _merge(y, "transpose-1-3"),
        "mha_reshape/heads-reversed": _merge(y, "heads-reversed"),
    }


# --------------------------------------------------------------------------- the module
def _linear(x: torch.Tensor, state: dict, name: str, transpose: bool = True) -> torch.Tensor:
    w = state[f"{name}.weight"]
    out = x @ (w.T if transpose else w)  # nn.Linear computes x Wᵀ; `x @ linear.weight` forgets the ᵀ
    bias = state.get(f"{name}.bias")
    return out if bias is None else out + bias


def _mha(
    x,
    state,
    h,
    key_allowed,
    *,
    split="ok",
    merge="ok",
    scale="head",
    mask="ok",
    project=True,
    transpose=True,
    dim=-1,
    diagonal=0,
    upper=False,
    after_softmax=False,
    layers=None,
):
    B, T, C = x.shape
    d = C // h
    layers = layers or {}  # projection → the layer used for it (k = self.w_q(x): {"w_k": "w_q"})
    q, k, v = (_split(_linear(x, state, layers.get(n, n), transpose), h, split) for n in ("w_q", "w_k", "w_v"))
    roots = {
        "unscaled": 1.0,
        "head-width": float(d),
        "model": math.sqrt(C),
        "heads": math.sqrt(h),
        "tokens": math.sqrt(T),
        "week7": math.sqrt(2),
        "integer": float(math.isqrt(d)),
    }
    root = roots.get(scale, math.sqrt(d))  # "head" (right) and "times" (× √d below): √d
    scores = q @ k.transpose(-2, -1) * root if scale == "times" else q @ k.transpose(-2, -1) / root
    causal = torch.ones(T, T, dtype=torch.bool)
    causal = causal.triu() if upper else causal.tril(diagonal)  # diagonal −1: each query's own key blocked too
    if key_allowed is None:
        allowed = {"no-causal": None, "inverted": ~causal}.get(mask, causal)
    else:
        keys = key_allowed.to(torch.bool)
        allowed = {
            "ok": causal & keys[:, None, None, :],
            "queries": causal & keys[:, None, :, None],  # padding applied to query rows
            # [B,1,T]: lined up with [h,T,T], example i's padding lands on head i (runs where B = h)
            "key-three-axes": causal & keys[:, None, :],
            "inverted": ~(causal & keys[:, None, None, :]),  # masked_fill(allowed, −∞): what may be read is blocked
            "no-causal": keys[:, None, None, :].expand(B, 1, T, T),  # padding replaced the causal mask
            "ignored": causal,  # key_allowed never used
            "key-inverted": causal & ~keys[:, None, None, :],  # the padded keys allowed, the real ones blocked
            "or": causal | keys[:, None, None, :],  # combined with OR: a real future key is allowed too
            # the padding taken blocked-style and ORed into the allowed-style causal mask: every padded key
            # allowed (blind tester R-DD: no hint)
            "or-blocked": causal | ~keys[:, None, None, :],
            "key-times-inf": causal,  # the padding added below as (~key_allowed) · (−∞)
            # a blocked-style buffer (~tril, True = future) used as if allowed, ANDed with the
            # padding: each query reads only the future (blind tester R-BJ)
            "buffer-inverted": ~causal & keys[:, None, None, :],
        }[mask]
    if allowed is not None and not after_softmax:
        scores = scores.masked_fill(allowed.logical_not(), -math.inf)
    if mask == "key-times-inf" and key_allowed is not None:  # 0 · (−∞) = NaN on every real key (blind tester R-AA)
        scores = scores + (~key_allowed.to(torch.bool))[:, None, None, :].to(scores.dtype) * -math.inf
    weights = scores.softmax(dim)  # dim=-2: normalised over the queries (each key column sums to 1)
    if allowed is not None and after_softmax:  # blocked weights zeroed after the softmax (blind tester R-BO)
        weights = weights.masked_fill(allowed.logical_not(), 0.0)
    merged = _merge(weights @ v, merge)
    out = _linear(merged, state, "w_o", transpose) if project and merged.shape[-1] == C else merged
    return out, weights


def _mha_scores(x, state, h, key_allowed):
    """The masked, scaled scores [B,h,T,T] (what a forward returning `scores` for `weights` gives)."""
    B, T, C = x.shape
    q, k = (_split(_linear(x, state, n), h, "ok") for n in ("w_q", "w_k"))
    scores = q @ k.transpose(-2, -1) / math.sqrt(C // h)
    allowed = torch.ones(T, T, dtype=torch.bool).tril()
    if key_allowed is not None:
        allowed = allowed & key_allowed.to(torch.bool)[:, None, None, :]
    return scores.masked_fill(~allowed, -math.inf)


def mha(
    x: torch.Tensor, state: dict, num_heads: int, key_allowed: torch.Tensor | None = None
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """hint id → (out, weights) that MultiHeadAttention.forward would return with that mistake.

    ``view-without-transpose`` pairs the output of the lesson's bug (merging with
    view(B, T, C) before transposing) with the weights of its twin in split_heads."""
    h = num_heads
    out: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    if 1 < h:
        merged_wrong, _ = _mha(x, state, h, key_allowed, merge="view-without-transpose")
        _, split_wrong = _mha(x, state, h, key_allowed, split="view-without-transpose")
        out["mha_reshape/view-without-transpose"] = (merged_wrong, split_wrong)
        out["mha_reshape/split-transposed-first"] = _mha(x, state, h, key_allowed, split="transposed-first")
        out["mha_reshape/scale-by-model-width"] = _mha(x, state, h, key_allowed, scale="model")
        out["mha_reshape/heads-reversed"] = _mha(x, state, h, key_allowed, merge="heads-reversed")
    if 1 < h < x.shape[-1]:
        out["mha_reshape/interleaved-heads"] = _mha(
            x, state, h, key_allowed, split="interleaved-heads", merge="interleaved-heads"
        )
    # √h (blind tester R-I); with one head it is √1, the unscaled scores: listed then too, so that
    # neither it nor missing-scale is named where they cannot be told apart
    out["mha_reshape/scale-by-head-count"] = _mha(x, state, h, key_allowed, scale="heads")
    out["mha_reshape/transpose-wrong-axes"] = _mha(x, state, h, key_allowed, merge="transpose-wrong-axes")  # also with one head
    out["mha_reshape/transpose-wrong-axes#1-3"] = _mha(x, state, h, key_allowed, merge="transpose-1-3")
    out["mha_reshape/missing-output-projection"] = _mha(x, state, h, key_allowed, project=False)
    out["mha_reshape/linear-weight-not-transposed"] = _mha(x, state, h, key_allowed, transpose=False)
    out["mha_reshape/no-causal-mask"] = _mha(x, state, h, key_allowed, mask="no-causal")
    out["mha_reshape/mask-inverted"] = _mha(x, state, h, key_allowed, mask="inverted")  # blind tester R-S
    out["mha_reshape/scale-multiplied"] = _mha(x, state, h, key_allowed, scale="times")  # × √d (blind tester R-S)
    if x.shape[1] != x.shape[-1] // h:  # √T: the same as √d where T = d (blind tester R-AA)
        out["mha_reshape/scale-by-sequence-length"] = _mha(x, state, h, key_allowed, scale="tokens")
    out["mha_reshape/causal-diagonal-blocked"] = _mha(x, state, h, key_allowed, diagonal=-1)  # ~triu(diagonal=0)
    if x.shape[1] > 1:  # tril(diagonal=1): each query also reads the next key (blind tester R-BJ)
        out["mha_reshape/causal-diagonal-leak"] = _mha(x, state, h, key_allowed, diagonal=1)
    out["mha_reshape/missing-scale"] = _mha(x, state, h, key_allowed, scale="unscaled")  # blind tester R-BJ
    if x.shape[-1] // h != 2:  # √2 written in, Week 7's head width (blind tester R-BV: named as ÷ √h where h = 2)
        out["mha_reshape/scale-fixed-week7-width"] = _mha(x, state, h, key_allowed, scale="week7")
    d_root = math.isqrt(x.shape[-1] // h)
    if d_root**2 != x.shape[-1] // h and d_root > 1:  # ⌊√d⌋: math.isqrt, int(math.sqrt(d)) (blind tester R-CW): listed,
        # it ties with the scale it equals on these inputs (√T, √h) instead of being named as that; 1 is missing-scale
        out["mha_reshape/scale-integer-sqrt"] = _mha(x, state, h, key_allowed, scale="integer")
    if x.shape[-1] // h != 1:  # ÷ d instead of ÷ √d (R-BJ; the same as ÷ √C where d = √C: then neither is named)
        out["mha_reshape/divide-by-head-width"] = _mha(x, state, h, key_allowed, scale="head-width")
    if x.shape[1] > 1:  # the mask applied to the weights after the softmax (blind tester R-BO)
        out["mha_reshape/mask-after-softmax"] = _mha(x, state, h, key_allowed, after_softmax=True)
    # triu: itself and the future (blind tester R-L: read on some seeds as the padding mask on queries)
    out["mha_reshape/causal-mask-triu"] = _mha(x, state, h, key_allowed, upper=True)
    if x.shape[1] > 1:
        out["mha_reshape/softmax-wrong-axis"] = _mha(x, state, h, key_allowed, dim=-2)
    if key_allowed is not None and not bool(key_allowed.to(torch.bool).all()):
        out["mha_reshape/key-mask-on-queries"] = _mha(x, state, h, key_allowed, mask="queries")
        out["mha_reshape/key-allowed-ignored"] = _mha(x, state, h, key_allowed, mask="ignored")
        out["mha_reshape/no-causal-mask#or"] = _mha(x, state, h, key_allowed, mask="or")  # blind tester R-I
        out["mha_reshape/padding-mixed-polarity"] = _mha(x, state, h, key_allowed, mask="or-blocked")
    if key_allowed is not None and 1 < h == key_allowed.shape[0] and not bool(key_allowed.to(torch.bool).all()):
        out["mha_reshape/key-mask-three-axes"] = _mha(x, state, h, key_allowed, mask="key-three-axes")  # blind tester R-S
    if key_allowed is not None:  # no padding: every key blocked, all NaN
        out["mha_reshape/key-allowed-inverted"] = _mha(x, state, h, key_allowed, mask="key-inverted")
        out["mha_reshape/key-mask-times-inf"] = _mha(x, state, h, key_allowed, mask="key-times-inf")
        out["mha_reshape/mask-inverted#buffer"] = _mha(x, state, h, key_allowed, mask="buffer-inverted")
    # a layer used for another's projection (k = self.w_q(x), a copy-paste: blind tester R-CW, no hint)
    names = ("w_q", "w_k", "w_v")
    for target in names:
        for source in names:
            if source != target:
                layers = {target: source}
                out[f"mha_reshape/projections-mixed#{target[2]}-from-{source[2]}"] = _mha(x, state, h, key_allowed, layers=layers)
    right_out, right_weights = _mha(x, state, h, key_allowed)
    out["mha_reshape/weights-averaged-over-heads"] = (right_out, right_weights.mean(dim=1))
    out["mha_reshape/returns-scores"] = (right_out, _mha_scores(x, state, h, key_allowed))
    return out


class Variants:
    """``mha(...)`` for one set of inputs, computed on first use."""

    def __init__(self, x: torch.Tensor, state: dict, num_heads: int, key_allowed: torch.Tensor | None = None) -> None:
        self._args = (x.double(), {k: v.double() for k, v in state.items()}, num_heads, key_allowed)
        self._cache: dict | None = None

    def all(self) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        if self._cache is None:
            self._cache = mha(*self._args)
        return self._cache

    def outputs(self) -> dict[str, torch.Tensor]:
        return outputs(self.all())

    def weights(self) -> dict[str, torch.Tensor]:
        return weights(self.all())


# --------------------------------------------------------------------------- counts and costs
def score_elements(B: int, h: int, T: int) -> list[tuple[str, float]]:
    return [("mha_reshape/score-elements-formula", v) for v in (B * h * T, B * T * T, h * T * T, B * h * T * (T + 1) // 2)]


def mha_flops(T: int, d: int) -> list[tuple[str, float]]:
    return [
        ("mha_reshape/flops-attention-term", 8 * T * d * d + 2 * T * T * d),  # Q·Kᵀ or A·V left out, or 2T²d for both
        ("mha_reshape/flops-output-projection", 6 * T * d * d + 4 * T * T * d),  # W_O forgotten
        ("mha_reshape/flops-multiply-add", 4 * T * d * d + 2 * T * T * d),  # a multiply-add counted as 1 FLOP
    ]


def attention_flop_fraction(T: int, d: int) -> list[tuple[str, float]]:
    right = T / (T + 2 * d)
    return [
        ("mha_reshape/fraction-percent", 100 * right),
        ("mha_reshape/fraction-wrong-share", 1 - right),  # the projections' share
        ("mha_reshape/fraction-wrong-share", T / (2 * d)),  # attention / projections, not / total
        ("mha_reshape/fraction-wrong-share", T / (T + d)),  # 8·T·d² / 4·T²·d simplified to d/T, not 2d/T
        ("mha_reshape/flops-attention-term", T / (T + 4 * d)),
        ("mha_reshape/flops-output-projection", 2 * T / (2 * T + 3 * d)),
        ("mha_reshape/fraction-integer-division", 0.0),  # `//`: a share below 1 floors to 0
    ]


def attention_matrix_gib(B: int, h: int, T: int, bytes_per_element: int, layers: int) -> list[tuple[str, float]]:
    elements = B * h * T * T
    return [
        ("mha_reshape/memory-bytes-per-element", elements * layers / 2**30),
        ("mha_reshape/memory-layers", elements * bytes_per_element / 2**30),
        ("mha_reshape/memory-units", elements * bytes_per_element * layers / 1e9),
        ("mha_reshape/memory-units", elements * bytes_per_element * layers / 2**20),
        ("mha_reshape/score-elements-formula", B * T * T * bytes_per_element * layers / 2**30),
    ]


def mha_param_count(d: int, bias: bool) -> list[tuple[str, float]]:
    return [
        ("mha_reshape/param-count-bias", 4 * d * d + (0 if bias else 4 * d)),
        ("mha_reshape/param-count-bias", 4 * d * d + d),
        ("mha_reshape/param-count-bias", 4 * d * d + (4 if bias else 0)),  # one bias number a projection (blind tester R-AW)
        ("mha_reshape/param-count-missing-wo", 3 * d * d + (3 * d if bias else 0)),
    ]


def unsliced_probe() -> dict:
    """The fixed problem of ``course.mha_reshape_data.unsliced_mask``: x [1,3,4], one head,
    and the right output (a snapshot case: it only names a mistake, it earns nothing)."""
    g = torch.Generator().manual_seed(20261130)
    x = torch.randn(1, 3, 4, generator=g, dtype=torch.float64)
    state = {f"{n}.weight": torch.randn(4, 4, generator=g, dtype=torch.float64) * 0.5 for n in ("w_q", "w_k", "w_v", "w_o")}
    want, _ = _mha(x, state, 1, None)
    return {"x": x, "state": state, "want": want}


def key_mask_probe() -> dict:
    """The fixed problem of ``course.mha_reshape_data.key_mask_three_axes``: x [2,3,4] with two
    heads (B = h: the one shape where a key mask lined up with the heads still broadcasts),
    example 1's last key padded; the right output and that mistake's (a snapshot case: it
    only names a mistake, it earns nothing)."""
    g = torch.Generator().manual_seed(20261206)
    x = torch.randn(2, 3, 4, generator=g, dtype=torch.float64)
    state = {f"{n}.weight": torch.randn(4, 4, generator=g, dtype=torch.float64) * 0.5 for n in ("w_q", "w_k", "w_v", "w_o")}
    key_allowed = torch.tensor([[True, True, True], [True, True, False]])
    want, _ = _mha(x, state, 2, key_allowed)
    wrong, _ = _mha(x, state, 2, key_allowed, mask="key-three-axes")
    return {
        "x": x,
        "state": state,
        "key_allowed": key_allowed,
        "want": want,
        "mistakes": {"mha_reshape/key-mask-three-axes": wrong},
    }
