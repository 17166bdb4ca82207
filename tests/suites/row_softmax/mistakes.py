"""What the named mistakes of skill row_softmax would return (Week 7 §5, §8, §16, §18).

A test computes these for the same inputs it sends to the submission, and
``expect.close(..., mistakes=...)`` names the one the submission's answer matches. They are
reproductions of *wrong* code. Mistakes that are about floating-point range (no max
subtraction, log of an underflowed softmax) are computed in the input's own dtype, where
they overflow exactly as the student's code does; the others in float64, then rounded.
A variant that happens to equal the right answer for these inputs is left out.
"""

from __future__ import annotations

import math

import torch

from autograder.testing import keep_if_wrong

P = "row_softmax/"
#: the εs a student adds to a softmax's denominator "for safety"
EPSILONS = (1e-12, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5)
#: the finite floors a student puts under the scores "to avoid −∞" (``clamp(min=…)``)
FLOORS = (-1e4, -1e9)


def _axis(t: torch.Tensor, dim: int) -> int:
    return dim % t.dim()


def _other_axis(t: torch.Tensor, dim: int) -> int | None:
    """The axis a wrong-axis softmax would use instead of ``dim``."""
    if t.dim() < 2:
        return None
    d = _axis(t, dim)
    return t.dim() - 2 if d == t.dim() - 1 else t.dim() - 1


def _first_axis(t: torch.Tensor, dim: int) -> bool:
    """Whether ``dim=0`` written in (the batch axis) is a third axis, apart from ``dim`` and
    the other of the last two (blind tester R-BJ: a softmax over dim 0 had no hint on [B,L,S])."""
    return t.dim() >= 3 and _axis(t, dim) != 0 and _other_axis(t, dim) != 0


def _floored(s: torch.Tensor, floor: float, dim: int) -> torch.Tensor:
    """softmax(s.clamp(min=floor)) in s's own dtype's values: every score below the floor,
    −∞ included, moved up to it (blind tester R-BJ)."""
    return torch.softmax(s.clamp(min=floor).double(), dim=dim)


def _naive_softmax(s: torch.Tensor, dim: int) -> torch.Tensor:
    e = torch.exp(s)  # no max subtraction: exp(1e4) = inf, inf / inf = NaN
    return e / e.sum(dim=dim, keepdim=True)


def _global_max_softmax(s: torch.Tensor, dim: int) -> torch.Tensor:
    e = torch.exp(s - s.max())  # one shift for the whole tensor: a row far below the top underflows to 0 / 0
    return e / e.sum(dim=dim, keepdim=True)


def _broadcast_like(t: torch.Tensor, compute) -> torch.Tensor | None:
    """What a reduction without keepdim gives, where it broadcasts back to ``t``'s shape
    (None where it raises or gives another shape): the one rule of every ``_unkept_*``."""
    try:
        out = compute()
    except RuntimeError:
        return None
    return out if out.shape == t.shape else None


def _unkept_sum(e: torch.Tensor, dim: int) -> torch.Tensor | None:
    """``e / e.sum(dim)`` without keepdim: the sums line up with the wrong axis (or do not broadcast)."""
    return _broadcast_like(e, lambda: e / e.sum(dim=dim))


def softmax(scores: torch.Tensor, dim: int = -1) -> dict[str, torch.Tensor]:
    """hint id → what softmax_rows(scores, dim) returns with that mistake."""
    s64 = scores.double()
    right = torch.softmax(s64, dim=dim)
    v = {P + "no-max-subtraction": _naive_softmax(scores, dim), P + "global-max": _global_max_softmax(scores, dim)}
    other = _other_axis(scores, dim)
    if other is not None:
        v[P + "softmax-wrong-axis"] = torch.softmax(s64, dim=other).to(scores.dtype)
    if _first_axis(scores, dim):
        v[P + "softmax-wrong-axis#first"] = torch.softmax(s64, dim=0).to(scores.dtype)
    for floor in FLOORS:
        v[P + f"clamped-scores#{floor:g}"] = _floored(scores, floor, dim).to(scores.dtype)
    exps = torch.exp(s64 - s64.amax(dim=dim, keepdim=True))
    unkept = _unkept_sum(exps, dim)
    if unkept is not None:
        v[P + "sum-without-keepdim"] = unkept.to(scores.dtype)
    if scores.dim() >= 2 and _axis(scores, dim) != 0:  # the max along dim, the sum over axis 0 (sum(0), sum(dim=0))
        v[P + "sum-wrong-axis"] = (exps / exps.sum(dim=0, keepdim=True)).to(scores.dtype)
    unkept = _unkept_lse(s64, dim)
    if unkept is not None:  # exp(s − logsumexp(s, dim)) without keepdim
        v[P + "lse-without-keepdim"] = torch.exp(unkept).to(scores.dtype)
    shifted = _unkept_shift(s64, dim)
    if shifted is not None:  # exp(s − amax(s, dim)) without keepdim, then the right sum (blind tester R-L)
        e = torch.exp(shifted)
        v[P + "max-without-keepdim"] = (e / e.sum(dim=dim, keepdim=True)).to(scores.dtype)
    v[P + "sum-over-everything"] = (exps / exps.sum()).to(scores.dtype)  # exps.sum() with no dim (blind tester R-L)
    for hint, z in _wrong_axis_shifts(s64, dim).items():
        e = torch.exp(z)
        v[hint] = (e / e.sum(dim=dim, keepdim=True)).to(scores.dtype)

    if scores.dim() >= 2 and _axis(scores, dim) != scores.dim() - 1:  # one reduction with dim=-1 written in (blind tester R-S)
        last = torch.exp(s64 - s64.amax(dim=-1, keepdim=True))
        v[P + "dim-ignored"] = (last / last.sum(dim=dim, keepdim=True)).to(scores.dtype)  # the max
        v[P + "dim-ignored#sum"] = (exps / exps.sum(dim=-1, keepdim=True)).to(scores.dtype)  # the sum
    out = keep_if_wrong(v, right)
    # a small ε added to the sums (e / (Σe + ε)): each row sums to just under 1 — in float64 read as
    # float32 rounding before (blind tester R-BJ). Closer to the right answer than keep_if_wrong's
    # threshold, so kept wherever it differs at all: a check only names it when it failed and
    # the answer is closer to it than to the right one
    sums, shown = exps.sum(dim=dim, keepdim=True), right.to(scores.dtype)
    for eps in EPSILONS:
        t = (exps / (sums + eps)).to(scores.dtype)
        if not torch.equal(t, shown):
            out[P + f"denominator-epsilon#{eps:g}"] = t
    return out


def _wrong_axis_shifts(s: torch.Tensor, dim: int) -> dict[str, torch.Tensor]:
    """``s − s.amax(other, keepdim=True)``: each column shifted by its own maximum, not each row
    by its own — the axis kept, but the wrong one (blind tester R-CP: ``amax(dim=-2,
    keepdim=True)`` was told it had lost its axis). ``#first``: ``amax(dim=0)`` on a batch."""
    out = {}
    other = _other_axis(s, dim)
    if other is not None and _axis(s, dim) == s.dim() - 1:  # else the other axis is the last: dim-ignored's
        out[P + "max-wrong-axis"] = s - s.amax(dim=other, keepdim=True)
    if s.dim() >= 2 and _axis(s, dim) != 0 and other != 0:
        out[P + "max-wrong-axis#first"] = s - s.amax(dim=0, keepdim=True)
    return out


def _unkept_shift(s: torch.Tensor, dim: int) -> torch.Tensor | None:
    """``s − s.amax(dim)`` without keepdim (None where that does not broadcast to s's shape)."""
    return _broadcast_like(s, lambda: s - s.amax(dim=dim))


def _floored_log(probs: torch.Tensor) -> dict[str, torch.Tensor]:
    """log(softmax) kept finite "for safety": log(p.clamp(min=ε)) or log(p + ε) — a wrong finite
    number where the probability underflowed (blind tester R-CW: no hint, with ε = 1e-12)."""
    out = {}
    for eps in EPSILONS:
        out[P + f"log-of-softmax#clamped-{eps:g}"] = torch.log(probs.clamp(min=eps))
        out[P + f"log-of-softmax#plus-{eps:g}"] = torch.log(probs + eps)
    return out


def log_softmax(scores: torch.Tensor, dim: int = -1) -> dict[str, torch.Tensor]:
    """hint id → what log_softmax_rows(scores, dim) returns with that mistake."""
    s64 = scores.double()
    right = torch.log_softmax(s64, dim=dim)
    v = {
        P + "log-of-softmax": torch.log(torch.softmax(scores, dim=dim)),  # underflow → log(0) = −∞
        P + "no-max-subtraction": scores - torch.log(torch.exp(scores).sum(dim=dim, keepdim=True)),
        # the max pulled out of the log-sum-exp but not added back: log_softmax + max
        P + "lse-missing-max": (right + s64.amax(dim=dim, keepdim=True)).to(scores.dtype),
        **_floored_log(torch.softmax(scores, dim=dim)),
    }
    other = _other_axis(scores, dim)
    if other is not None:
        v[P + "softmax-wrong-axis"] = torch.log_softmax(s64, dim=other).to(scores.dtype)
    if _first_axis(scores, dim):
        v[P + "softmax-wrong-axis#first"] = torch.log_softmax(s64, dim=0).to(scores.dtype)
    unkept = _unkept_lse(s64, dim)
    if unkept is not None:
        v[P + "lse-without-keepdim"] = unkept.to(scores.dtype)
    shifted = _unkept_shifted_lse(s64, dim)
    if shifted is not None:
        v[P + "lse-without-keepdim#shifted"] = shifted.to(scores.dtype)
    v.update({hint: t.to(scores.dtype) for hint, t in _unkept_max_log_softmax(s64, dim).items()})
    top = scores - scores.max()  # one shift for the whole tensor: a row far below the top gives log(0) (blind tester R-CW)
    v[P + "global-max"] = top - torch.log(torch.exp(top).sum(dim=dim, keepdim=True))
    z = s64 - s64.amax(dim=dim, keepdim=True)
    v[P + "sum-over-everything"] = (z - torch.log(torch.exp(z).sum())).to(scores.dtype)  # no dim (blind tester R-BO)
    for hint, shifted in _wrong_axis_shifts(s64, dim).items():
        v[hint] = (shifted - torch.log(torch.exp(shifted).sum(dim=dim, keepdim=True))).to(scores.dtype)
    if scores.dim() >= 2 and _axis(scores, dim) != scores.dim() - 1:  # the max over dim=-1 written in (R-BO)
        last = s64 - s64.amax(dim=-1, keepdim=True)
        v[P + "dim-ignored"] = (last - torch.log(torch.exp(last).sum(dim=dim, keepdim=True))).to(scores.dtype)
    return keep_if_wrong(v, right)


def _unkept_max_log_softmax(s: torch.Tensor, dim: int) -> dict[str, torch.Tensor]:
    """log-softmax with ``z = s − amax(s, dim)`` without keepdim (blind tester R-BJ), the sum
    kept or not: where they broadcast to s's shape (the axes line up only on square inputs)."""
    z = _unkept_shift(s, dim)
    if z is None:
        return {}
    v = {P + "max-without-keepdim": z - torch.log(torch.exp(z).sum(dim=dim, keepdim=True))}
    both = _unkept_sum_log(z, dim)
    if both is not None:
        v[P + "max-without-keepdim#and-sum"] = both
    return v


def _unkept_sum_log(z: torch.Tensor, dim: int) -> torch.Tensor | None:
    """``z − log(exp(z).sum(dim))`` without keepdim (None where that does not broadcast to z's shape)."""
    return _broadcast_like(z, lambda: z - torch.log(torch.exp(z).sum(dim=dim)))


def _unkept_shifted_lse(s: torch.Tensor, dim: int) -> torch.Tensor | None:
    """``z − log(exp(z).sum(dim))`` for ``z = s − max(s, dim, keepdim)``: the max shift kept, the
    sum's axis not (blind tester R-G); None where that does not broadcast to s's shape."""
    return _unkept_sum_log(s - s.amax(dim=dim, keepdim=True), dim)


def _unkept_lse(s: torch.Tensor, dim: int) -> torch.Tensor | None:
    """``s − logsumexp(s, dim)`` without keepdim (None where that does not broadcast to s's shape)."""
    return _broadcast_like(s, lambda: s - torch.logsumexp(s, dim=dim))


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
    """hint id → what cross_entropy(logits, targets) returns with that mistake."""
    dtype = logits.dtype
    n = torch.arange(logits.size(0))
    t = targets.long()
    l64 = logits.double()
    logp = torch.log_softmax(l64, dim=-1)
    right = -logp[n, t].mean()
    probs = torch.softmax(l64, dim=-1)
    v = {
        P + "ce-sum-not-mean": (-logp[n, t].sum()).to(dtype),
        P + "ce-no-reduction": (-logp[n, t]).to(dtype),
        P + "ce-missing-log": (-probs[n, t].mean()).to(dtype),
        P + "ce-on-probabilities": (-torch.log_softmax(probs, dim=-1)[n, t].mean()).to(dtype),
        P + "log-of-softmax": -torch.log(torch.softmax(logits, dim=-1))[n, t].mean(),
        **{hint: -logs[n, t].mean() for hint, logs in _floored_log(torch.softmax(logits, dim=-1)).items()},
        P + "no-max-subtraction": -(logits - torch.log(torch.exp(logits).sum(-1, keepdim=True)))[n, t].mean(),
        P + "ce-sign": logp[n, t].mean().to(dtype),  # mean log p(target): the minus sign dropped
        P + "ce-mean-over-vocab": (-logp[n, t].mean() / logits.size(-1)).to(dtype),  # one-hot · log p averaged over N·V entries
        # the sum divided by the vocabulary size V instead of the N rows (blind tester R-AA)
        P + "ce-divided-by-classes": (-logp[n, t].sum() / logits.size(-1)).to(dtype),
        P + "lse-missing-max": -(logp + l64.amax(-1, keepdim=True))[n, t].mean().to(dtype),
        P + "ce-not-0-dim": (-logp[n, t].mean()).reshape(1).to(dtype),  # mean(dim=0, keepdim=True): shape [1]
        # -sum // N: floor division rounds the mean down to a whole number (blind tester R-N)
        P + "ce-floor-division": torch.div(-logp[n, t].sum(), logits.size(0), rounding_mode="floor").to(dtype),
    }
    unkept = _unkept_lse(l64, -1)
    if unkept is not None:  # log_softmax_rows' log-sum-exp without keepdim (runs only when N = V)
        v[P + "lse-without-keepdim"] = (-unkept[n, t].mean()).to(dtype)
    shifted = _unkept_shifted_lse(l64, -1)
    if shifted is not None:
        v[P + "lse-without-keepdim#shifted"] = (-shifted[n, t].mean()).to(dtype)
    for hint, logp_kept in _unkept_max_log_softmax(l64, -1).items():  # runs only when N = V
        v[hint] = (-logp_kept[n, t].mean()).to(dtype)
    N, V = logits.shape
    if N > 1 and int(t.max()) < N:  # targets used as row numbers (blind tester R-B): run only where no target reaches N
        if N <= V:
            v[P + "ce-targets-pick-rows#gather-1xN"] = (-logp.gather(0, t.unsqueeze(0)).mean()).to(dtype)  # entry (t_j, j)
        v[P + "ce-targets-pick-rows#gather-Nx1"] = (-logp.gather(0, t.unsqueeze(1)).mean()).to(dtype)  # entry (t_i, 0)
        v[P + "ce-targets-pick-rows#rows"] = (-logp[t].mean()).to(dtype)  # whole rows t_i: a mean over N·V entries
    if logits.size(0) > 1:
        v[P + "ce-target-indexing"] = (-logp[:, t].mean()).to(dtype)  # an N×N block, not one entry per row
        v[P + "softmax-wrong-axis"] = (-torch.log_softmax(l64, dim=0)[n, t].mean()).to(dtype)
    return keep_if_wrong(v, right)


def vocab_via_softmax(h: torch.Tensor, w_vocab: torch.Tensor) -> dict[str, torch.Tensor]:
    """hint id → what vocab_probs(h, w_vocab) returns when it calls a softmax_rows with that
    mistake (named only where the submission's own softmax_rows is wrong on these logits:
    ``course.row_softmax_data.vocab_mistakes``)."""
    logits = h.double() @ w_vocab.double()
    table = softmax(logits.to(h.dtype) if h.dtype != torch.float64 else logits, -1)
    return {hint: t.to(h.dtype) for hint, t in table.items()}


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> dict[str, torch.Tensor]:
    """hint id → what vocab_probs(h, w_vocab) returns with that mistake."""
    logits = h.double() @ w_vocab.double()
    right = torch.softmax(logits, dim=-1)
    v = {
        P + "no-max-subtraction": _naive_softmax(h @ w_vocab, -1),
        P + "vocab-logits-returned": logits.to(h.dtype),  # h @ W_vocab without the softmax (blind tester R-BJ)
        # the logits divided by √C as attention scores are (R-BJ)
        P + "vocab-logits-scaled": torch.softmax(logits / math.sqrt(h.shape[-1]), dim=-1).to(h.dtype),
    }
    if logits.dim() >= 2:
        v[P + "vocab-wrong-axis"] = torch.softmax(logits, dim=-2).to(h.dtype)  # over positions / examples
        v[P + "vocab-wrong-axis#first"] = torch.softmax(logits, dim=0).to(h.dtype)  # dim=0: the same on [N,V]
    if w_vocab.shape[0] == w_vocab.shape[1]:  # a transposed [C,V] head runs only when C = V
        v[P + "vocab-head-transposed"] = torch.softmax(h.double() @ w_vocab.double().T, dim=-1).to(h.dtype)
    return keep_if_wrong(v, right)
