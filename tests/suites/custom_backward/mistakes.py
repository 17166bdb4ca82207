"""What the named mistakes of skill custom_backward would return (Day 1 §2.3, §B).

Each helper replays one wrong line of the five-line backward of Day 1 §2.3 on the same
inputs the test sends, so ``expect.close(..., mistakes=...)`` can name the mistake the
submission's answer matches. Computed in float64, rounded to the input dtype; variants that
coincide with the right answer for these inputs (or have another shape) are left out.
"""

from __future__ import annotations

import math

import torch
from course import custom_backward_data as data
from course import oracles

P = "custom_backward/"


def _sb(d_a: torch.Tensor, a: torch.Tensor, axis: int = -1) -> torch.Tensor:
    return a * (d_a - (d_a * a).sum(dim=axis, keepdim=True))


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> dict[str, torch.Tensor]:
    """hint id → what softmax_backward(Ā, A) returns with that mistake."""
    da, a = d_weights.double(), weights.double()
    right = _sb(da, a)
    v = {
        P + "missing-d-term": a * da,
        P + "d-wrong-axis": _sb(da, a, axis=-2),
        P + "diagonal-jacobian": a * (1 - a) * da,
        P + "d-unweighted": a * (da - da.sum(dim=-1, keepdim=True)),  # D_i = Σ_j Ā_ij without the weights A_ij
        P + "d-outside-product": a * da - (da * a).sum(dim=-1, keepdim=True),  # A ⊙ Ā − D: the parentheses dropped
        P + "sign-flipped": -right,  # A ⊙ (D − Ā) (blind tester R-B)
        P + "a-factor-dropped": da - (da * a).sum(dim=-1, keepdim=True),  # Ā − D: the outer A ⊙ forgotten (tester R-G)
        # Ā ⊙ (A − D): the body with A and Ā in each other's place, what a swapped call gives (blind
        # tester R-BB: it was named only as the call's mistake, on a test that calls softmax_backward itself)
        P + "softmax-backward-args-swapped#body": da * (a - (da * a).sum(dim=-1, keepdim=True)),
        # D as a mean over the keys, or one sum over the whole tensor (blind tester R-BS: no hint)
        P + "d-mean": a * (da - (da * a).mean(dim=-1, keepdim=True)),
        P + "d-summed-everything": a * (da - (da * a).sum()),
    }
    unkept = _d_without_keepdim(da, a)
    if unkept is not None:
        v[P + "d-keepdim"] = unkept
    return {
        h: t.to(weights.dtype)
        for h, t in v.items()
        if t.shape == right.shape and not torch.allclose(t, right, rtol=1e-6, atol=1e-9)
    }


def _d_without_keepdim(d_a: torch.Tensor, a: torch.Tensor) -> torch.Tensor | None:
    """S̄ with D = rowsum(Ā ⊙ A) of shape [..., L] (keepdim forgotten), broadcast as torch does:
    D's last axis lines up with the key axis (entry (i, l) of one [L,S] matrix subtracts D_l;
    with batch axes, D's rows line up with the query axis too). None where that does not
    broadcast to A's shape (the student's code raises there)."""
    d = (d_a * a).sum(dim=-1)
    try:
        out = a * (d_a - d)
    except RuntimeError:
        return None
    return out if out.shape == a.shape else None


def attention_backward(d_out, q, k, v, weights, scale: float) -> dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """hint id → (dq, dk, dv) that attention_backward would return with that mistake."""
    dy, q, k, v, a = (t.double() for t in (d_out, q, k, v, weights))
    dtype = d_out.dtype
    dv = a.transpose(-2, -1) @ dy
    da = dy @ v.transpose(-2, -1)
    ds = _sb(da, a)

    def grads(ds_, *, s=scale, dk_rhs=None, dv_=None):
        dk_ = s * (ds_.transpose(-2, -1) @ q) if dk_rhs is None else dk_rhs
        return (s * (ds_ @ k), dk_, dv if dv_ is None else dv_)

    out = {
        P + "missing-d-term": grads(a * da),
        P + "d-wrong-axis": grads(_sb(da, a, axis=-2)),
        P + "diagonal-jacobian": grads(a * (1 - a) * da),
        P + "d-unweighted": grads(a * (da - da.sum(dim=-1, keepdim=True))),
        P + "d-outside-product": grads(a * da - (da * a).sum(dim=-1, keepdim=True)),
        # softmax_backward(weights, d_weights): A and Ā in each other's place, S̄ = Ā ⊙ (A − rowsum(A ⊙ Ā))
        P + "softmax-backward-args-swapped": grads(_sb(a, da)),
        P + "sign-flipped": grads(-ds),  # S̄ negated (A ⊙ (D − Ā)): Q̄ and K̄ flip, V̄ does not
        P + "a-factor-dropped": grads(da - (da * a).sum(dim=-1, keepdim=True)),  # S̄ = Ā − D (tester R-G)
        P + "d-mean": grads(a * (da - (da * a).mean(dim=-1, keepdim=True))),
        P + "d-summed-everything": grads(a * (da - (da * a).sum())),
    }
    # Ā in S̄'s place in one of the two products (blind tester R-G)
    out[P + "score-gradient-skipped#dq"] = (scale * (da @ k), scale * (ds.transpose(-2, -1) @ q), dv)
    out[P + "score-gradient-skipped#dk"] = (scale * (ds @ k), scale * (da.transpose(-2, -1) @ q), dv)
    if scale != 1.0:
        out[P + "missing-scale"] = grads(ds, s=1.0)
        # s left out of one of the two products only (blind tester R-BD: Q̄ off by √d_k, no hint)
        out[P + "missing-scale#dq"] = (ds @ k, scale * (ds.transpose(-2, -1) @ q), dv)
        out[P + "missing-scale#dk"] = grads(ds, dk_rhs=ds.transpose(-2, -1) @ q)
        out[P + "scale-inverted"] = grads(ds, s=1.0 / scale)  # multiplied by √d_k instead of 1/√d_k
        out[P + "scale-twice"] = grads(ds, s=scale * scale)  # s applied to Ā (or S̄) and again to Q̄, K̄
        # s twice in one of the two products only (blind tester R-L: K̄ = s·s·S̄ᵀQ read, in gradcheck, as a
        # forward that saved s·Q — the same Jacobians, so gradcheck now names neither)
        out[P + "scale-twice#dk"] = grads(ds, dk_rhs=scale * scale * (ds.transpose(-2, -1) @ q))
        out[P + "scale-twice#dq"] = (scale * scale * (ds @ k), scale * (ds.transpose(-2, -1) @ q), dv)
    if ds.shape[-1] == ds.shape[-2]:  # only then do the transposed products have the right shape
        out[P + "dk-transpose"] = grads(ds, dk_rhs=scale * (ds @ q))
        out[P + "dq-transpose"] = (scale * (ds.transpose(-2, -1) @ k), scale * (ds.transpose(-2, -1) @ q), dv)
        out[P + "dv-transpose"] = grads(ds, dv_=a @ dy)
        # Ā = (Ȳ Vᵀ)ᵀ: Ā transposed before softmax_backward (blind tester R-AJ; on L ≠ S it raises)
        out[P + "d-weights-transposed"] = grads(_sb(da.transpose(-2, -1), a))
        # S̄ multiplied by its own side's matrix: K̄ = s S̄ᵀ K, Q̄ = s S̄ Q (run only when L = S)
        out[P + "own-side-operand#dk"] = grads(ds, dk_rhs=scale * (ds.transpose(-2, -1) @ k))
        out[P + "own-side-operand#dq"] = (scale * (ds @ q), scale * (ds.transpose(-2, -1) @ q), dv)
        unkept = _d_without_keepdim(da, a)
        if unkept is not None:
            out[P + "d-keepdim"] = grads(unkept)
    out[P + "dq-times-v"] = (scale * (ds @ v), scale * (ds.transpose(-2, -1) @ q), dv)  # V in K's place (blind tester I)
    right = grads(ds)  # (dk, dq, dv): the first two returned in the wrong order (L ≠ S: each has the other's shape)
    out[P + "dq-dk-swapped"] = (right[1], right[0], right[2])
    # V̄ in the place of K̄ or of Q̄ (blind tester R-DD: (dq, dv, dk) was named only on AttentionFunction's
    # gradcheck, as backward's mistake). Not the two rotations: each shares a place with dq-dk-swapped
    # (K̄ first, or Q̄ second), and two hints predicting one value name neither
    out[P + "returns-out-of-order#dv-dk"] = (right[0], right[2], right[1])
    out[P + "returns-out-of-order#dv-dq"] = (right[2], right[1], right[0])
    return {h: tuple(t.to(dtype) for t in g) for h, g in out.items()}


def attention_backward_from(own_ds, d_out, q, k, v, weights, scale: float) -> dict[str, tuple]:
    """``attention_backward``'s table where the third step (Q̄, K̄ from S̄) is taken from the
    submission's own S̄ (``own_ds`` = its softmax_backward(Ā, A)): a transposed, unscaled or
    swapped gradient is named even when softmax_backward is wrong too (two mistakes in one
    skill, issue 30 §3). Other entries are ``attention_backward``'s."""
    table = attention_backward(d_out, q, k, v, weights, scale)
    if type(own_ds) is not torch.Tensor or not own_ds.is_floating_point():
        return table
    dy, q, k, v, a, ds = (t.double() for t in (d_out, q, k, v, weights, own_ds))
    if ds.shape != a.shape:
        return table
    dtype = d_out.dtype
    dv = a.transpose(-2, -1) @ dy
    dq, dk = scale * (ds @ k), scale * (ds.transpose(-2, -1) @ q)
    own = {P + "dq-dk-swapped": (dk, dq, dv), P + "dq-times-v": (scale * (ds @ v), dk, dv)}
    if scale != 1.0:
        own[P + "missing-scale"] = (ds @ k, ds.transpose(-2, -1) @ q, dv)
        own[P + "missing-scale#dq"] = (ds @ k, dk, dv)
        own[P + "missing-scale#dk"] = (dq, ds.transpose(-2, -1) @ q, dv)
        own[P + "scale-inverted"] = (dq / scale**2, dk / scale**2, dv)
        own[P + "scale-twice"] = (dq * scale, dk * scale, dv)
        own[P + "scale-twice#dk"] = (dq, dk * scale, dv)
        own[P + "scale-twice#dq"] = (dq * scale, dk, dv)
    if ds.shape[-1] == ds.shape[-2]:
        own[P + "dk-transpose"] = (dq, scale * (ds @ q), dv)
        own[P + "dq-transpose"] = (scale * (ds.transpose(-2, -1) @ k), dk, dv)
        own[P + "dv-transpose"] = (dq, dk, a @ dy)
        own[P + "own-side-operand#dk"] = (dq, scale * (ds.transpose(-2, -1) @ k), dv)
        own[P + "own-side-operand#dq"] = (scale * (ds @ q), dk, dv)
    table.update({h: tuple(t.to(dtype) for t in g) for h, g in own.items()})
    return table


def component(variants: dict[str, tuple], index: int) -> dict[str, torch.Tensor]:
    """The mistakes that change gradient ``index`` (0 = dq, 1 = dk, 2 = dv)."""
    return {h: g[index] for h, g in variants.items()}


def plain_attention(q, k, v, allowed=None, *, scale: float | None = None, fill: float = -math.inf, dim: int = -1):
    """softmax(scale·q kᵀ, blocked −∞) v with plain autograd: the trusted expected values
    (``fill`` other than −∞ and ``dim`` other than the key axis only for a mistake's signature)."""
    s = (1.0 / math.sqrt(q.size(-1))) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * s
    if allowed is not None:
        scores = scores.masked_fill(allowed.logical_not(), fill)
    probs = scores.softmax(dim)
    return probs @ v, probs


def _mask_after_softmax(q, k, v, allowed):
    """softmax of the unmasked scores, blocked weights then set to 0 (rows no longer sum to 1):
    (out, weights)."""
    probs = plain_attention(q, k, v)[1].masked_fill(allowed.logical_not(), 0.0)
    return probs @ v, probs


def attention_forward(q, k, v, allowed=None) -> dict[str, torch.Tensor]:
    """hint id → what attention(q, k, v, allowed) returns with a wrong forward pass."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    right, _ = plain_attention(q64, k64, v64, allowed)
    out = {
        P + "forward-scale": plain_attention(q64, k64, v64, allowed, scale=1.0)[0],
        P + "forward-divide-by-dk": plain_attention(q64, k64, v64, allowed, scale=1.0 / q.size(-1))[0],
        P + "forward-scale-multiplied": plain_attention(q64, k64, v64, allowed, scale=q.size(-1) ** 0.5)[0],
        P + "forward-softmax-wrong-axis": plain_attention(q64, k64, v64, allowed, dim=-2)[0],
        # 1/√d_k on the weights after the softmax, not on the scores (blind tester R-BS, c39)
        P + "forward-scale-after-softmax": (plain_attention(q64, k64, v64, allowed, scale=1.0)[1] * q.size(-1) ** -0.5) @ v64,
    }
    if v.size(-1) != q.size(-1):
        out[P + "forward-scale-width"] = plain_attention(q64, k64, v64, allowed, scale=v.size(-1) ** -0.5)[0]  # 1/√d_v
    if k.size(-2) != q.size(-1):  # 1/√S: the number of keys for d_k (blind tester R-AN)
        out[P + "forward-scale-by-key-length"] = plain_attention(q64, k64, v64, allowed, scale=k.size(-2) ** -0.5)[0]
    if allowed is not None and not bool(allowed.all()):
        out[P + "forward-mask"] = plain_attention(q64, k64, v64, None)[0]
        out[P + "forward-zero-fill"] = plain_attention(q64, k64, v64, allowed, fill=0.0)[0]
        # masked_fill(allowed, −∞): the allowed keys blocked (a row allowing every key is NaN)
        out[P + "forward-mask-inverted"] = plain_attention(q64, k64, v64, allowed.logical_not())[0]
        out[P + "forward-mask-after-softmax"] = _mask_after_softmax(q64, k64, v64, allowed)[0]
    return {h: t.to(q.dtype) for h, t in out.items() if not torch.allclose(t, right, rtol=1e-6, atol=1e-9)}


def attention_grads(q, k, v, allowed, d_out) -> dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """hint id → (dq, dk, dv, out): the gradients autograd through attention() gives with a
    wrong backward (or a forward that saved the wrong tensors), and the forward output that
    goes with them — the whole signature, so ``autograder.testing.whole`` names a mistake only
    where every component it changes is what the submission returned (a forward that ignores
    the mask and a backward that recomputes A without it give the same gradients; only the
    first changes the output)."""
    q64, k64, v64, dy = (t.double() for t in (q, k, v, d_out))
    with torch.no_grad():
        right_out, a = plain_attention(q64, k64, v64, allowed)
    scale = 1.0 / math.sqrt(q.shape[-1])
    # attention_backward's own out-of-order returns are named below as backward's (the gradients cannot
    # tell which return swapped them, and that hint names both)
    helper = attention_backward(dy, q64, k64, v64, a, scale)
    out = {h: (*g, right_out) for h, g in helper.items() if not h.startswith(P + "returns-out-of-order")}
    # forward mistakes a backward then takes as given: the weights it saved, the scale it used
    by_dk = 1.0 / q.shape[-1]
    dk_out, dk_a = plain_attention(q64, k64, v64, allowed, scale=by_dk)
    out[P + "forward-divide-by-dk"] = (*_plain_backward(dy, q64, k64, v64, dk_a, by_dk), dk_out)
    times = q.shape[-1] ** 0.5  # s = √d_k: multiplied where it divides
    times_out, times_a = plain_attention(q64, k64, v64, allowed, scale=times)
    out[P + "forward-scale-multiplied"] = (*_plain_backward(dy, q64, k64, v64, times_a, times), times_out)
    if k.shape[-2] != q.shape[-1]:
        by_s = k.shape[-2] ** -0.5
        s_out, s_a = plain_attention(q64, k64, v64, allowed, scale=by_s)
        out[P + "forward-scale-by-key-length"] = (*_plain_backward(dy, q64, k64, v64, s_a, by_s), s_out)
    axis_out, axis_a = plain_attention(q64, k64, v64, allowed, dim=-2)
    out[P + "forward-softmax-wrong-axis"] = (*_plain_backward(dy, q64, k64, v64, axis_a, scale), axis_out)
    if allowed is not None and not bool(allowed.all()):
        unmasked_out, unmasked = plain_attention(q64, k64, v64, None)  # backward recomputed A without the mask
        out[P + "backward-ignores-mask"] = (*_plain_backward(dy, q64, k64, v64, unmasked, scale), right_out)
        out[P + "forward-mask"] = (*_plain_backward(dy, q64, k64, v64, unmasked, scale), unmasked_out)  # forward: no mask
        zero_out, zero_filled = plain_attention(q64, k64, v64, allowed, fill=0.0)  # forward filled blocked scores with 0
        out[P + "forward-zero-fill"] = (*_plain_backward(dy, q64, k64, v64, zero_filled, scale), zero_out)
        inverted_out, inverted = plain_attention(q64, k64, v64, allowed.logical_not())  # masked_fill(allowed, −∞)
        out[P + "forward-mask-inverted"] = (*_plain_backward(dy, q64, k64, v64, inverted, scale), inverted_out)
        after_out, after = _mask_after_softmax(q64, k64, v64, allowed)  # and backward used those weights
        out[P + "forward-mask-after-softmax"] = (*_plain_backward(dy, q64, k64, v64, after, scale), after_out)
    # forward saved the (masked) scores instead of the softmax output, and backward used them as A
    scores = (q64 @ k64.transpose(-2, -1)) * scale
    if allowed is not None:
        scores = scores.masked_fill(allowed.logical_not(), -math.inf)
    out[P + "saved-scores"] = (*_plain_backward(dy, q64, k64, v64, scores, scale), right_out)
    # forward scaled q itself — q.mul_(s), q = q * s — and saved that: the output is right, the
    # backward's formulas are right, but K̄ = s·S̄ᵀ(s·Q) is off by s. (The same with k would give
    # Q̄ off by s, which a backward applying s twice also gives wherever only Q̄ is seen: not named.)
    dq, dk, dv = _plain_backward(dy, q64, k64, v64, a, scale)
    out[P + "saved-scaled-q"] = (dq, dk * scale, dv, right_out)
    # backward's right gradients returned in another order (blind tester R-AZ: (dq, dv, dk) had no
    # hint); dq and dk swapped has its own hint (dq-dk-swapped, from attention_backward's table)
    right = {"q": dq, "k": dk, "v": dv}
    for order in ("qvk", "vkq", "kvq", "vqk"):
        # V̄ swapped with K̄ or Q̄ (qvk, vkq) shares no place with dq-dk-swapped: named at every shape.
        # The rotations only where a gradient lands in the place of one of another shape: with every
        # shape alike the values alone would tie them with dq-dk-swapped (K̄ first, or Q̄ second)
        if order in ("qvk", "vkq") or any(right[a].shape != right[b].shape for a, b in zip(order, "qkv")):
            out[P + "grads-out-of-order#" + order] = (*(right[name] for name in order), right_out)
    return {h: tuple(t.to(q.dtype) for t in g) for h, g in out.items()}


def _plain_backward(dy, q, k, v, a, scale):
    dv = a.transpose(-2, -1) @ dy
    ds = _sb(dy @ v.transpose(-2, -1), a)
    return scale * (ds @ k), scale * (ds.transpose(-2, -1) @ q), dv


# --------------------------------------------------------------------------- data for the shipped helpers
def week7_loss_mistakes(dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """hint id → the Week 7 mean loss a wrong forward pass gives (0-dim, ``dtype``)."""
    inputs = data.week7_chain_inputs(torch.float64)
    d_k = inputs["w_q"].size(-1)
    wrong = {
        "forward-scale": oracles.week7_chain_reference(**inputs, scale=1.0),
        "forward-divide-by-dk": oracles.week7_chain_reference(**inputs, scale=1.0 / d_k),
        "forward-scale-multiplied": oracles.week7_chain_reference(**inputs, scale=d_k**0.5),
        "forward-softmax-wrong-axis": oracles.week7_chain_reference(**inputs, softmax_dim=-2),
        # the last query's row allows no key: NaN, and no other forward mistake here gives NaN
        "forward-mask-inverted": oracles.week7_chain_reference(**inputs, invert_mask=True),
        "forward-scale-after-softmax": oracles.week7_chain_reference(**inputs, scale_after_softmax=True),
    }
    return {P + hint: chain["loss"].to(dtype) for hint, chain in wrong.items()}


def week7_grad_mistakes(dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """hint id → dL/dW_Q of Week 7 §16 (mean CE of the last positions) when the backward has that
    mistake: the chain's own Ȳ (the forward is right), the mistake's dq, dL/dW_Q = Σ_b x_bᵀ dq_b.
    Mistakes of the forward pass are left out: they change the loss, which is checked first."""
    inputs = data.week7_chain_inputs(torch.float64)
    x, w_q, w_k, w_v = (inputs[n] for n in ("x", "w_q", "w_k", "w_v"))
    T = x.size(1)
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    out = plain_attention(q, k, v, causal)[0].detach().requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(out[:, -1] @ inputs["w_vocab"], inputs["targets"])
    (d_out,) = torch.autograd.grad(loss, [out])
    table = {}
    for hint, grads in attention_grads(q, k, v, causal, d_out).items():
        if hint.startswith(P + "forward-") or grads[0].shape != q.shape:
            continue
        table[hint] = torch.einsum("btc,btd->cd", x, grads[0].double()).to(dtype)
    return table


def numerical_jacobians(q, k, v, allowed, eps: float = data.GRADCHECK["eps"]) -> list[torch.Tensor]:
    """Central finite differences of the reference attention (trusted, float64): for each of
    q, k, v a [out.numel(), input.numel()] Jacobian — gradcheck's numerical side."""
    args = [t.double().clone() for t in (q, k, v)]
    n_out = plain_attention(*args, allowed)[0].numel()
    jacobians = []
    for t in args:
        flat = t.view(-1)
        jac = torch.zeros(n_out, flat.numel(), dtype=torch.float64)
        for j in range(flat.numel()):
            old = flat[j].item()
            flat[j] = old + eps
            up = plain_attention(*args, allowed)[0].reshape(-1)
            flat[j] = old - eps
            down = plain_attention(*args, allowed)[0].reshape(-1)
            flat[j] = old
            jac[:, j] = (up - down) / (2 * eps)
        jacobians.append(jac)
    return jacobians


def gradcheck_problem(q, k, v, allowed) -> dict:
    """What ``course.custom_backward_data.gradcheck`` compares with: the reference output, the
    numerical Jacobians (finite differences) and, per named mistake present on these inputs,
    its Jacobian for each of q, k, v (None where its shape differs), one-hot Ȳ row by row."""
    want_out = plain_attention(q.double(), k.double(), v.double(), allowed)[0]
    basis = [
        torch.zeros(want_out.numel(), dtype=q.dtype).index_fill_(0, torch.tensor([m]), 1.0).view(want_out.shape)
        for m in range(want_out.numel())
    ]
    variants = [attention_grads(q, k, v, allowed, d) for d in basis]
    mistakes = {}
    for h in variants[0]:
        if h.startswith(P + "forward-"):
            continue  # a wrong forward is named by the forward check first (forward_mistakes); its gradients
            # equal a backward's (no mask: the same as recomputing A without it) and would only tie
        if all(h in vr for vr in variants):
            mistakes[h] = [
                torch.stack([vr[h][i].double().reshape(-1) for vr in variants])
                if all(vr[h][i].shape == like.shape for vr in variants)
                else None
                for i, like in enumerate((q, k, v))
            ]
    # attention_backward called once on these inputs (Ȳ all ones), to tell a forward that saved s·Q
    # from a backward that puts s twice on K̄: their Jacobians through AttentionFunction are the same
    q64, k64, v64 = q.double(), k.double(), v.double()
    _, weights = plain_attention(q64, k64, v64, allowed)
    scale = 1.0 / math.sqrt(q.shape[-1])
    d_out = torch.ones_like(want_out)
    probe = {"d_out": d_out, "weights": weights, "scale": scale, "dk": _plain_backward(d_out, q64, k64, v64, weights, scale)[1]}
    return {
        "q": q,
        "k": k,
        "v": v,
        "allowed": allowed,
        "backward_probe": probe,
        "out": want_out.to(q.dtype),
        "forward_mistakes": attention_forward(q, k, v, allowed),
        "numerical": numerical_jacobians(q, k, v, allowed),
        "mistakes": mistakes,
    }


def square_problem() -> dict:
    """The square float64 problem of ``course.custom_backward_data.square_diagnosis``
    (B = 2, L = S = 4, d_k = d_v = 3), its right gradients and the mistakes' gradients."""
    g = torch.Generator().manual_seed(20261130)  # fixed: this only names a mistake, it earns nothing
    q, k, v, d_out = (torch.randn(2, 4, 3, generator=g, dtype=torch.float64) for _ in range(4))
    scale = 3**-0.5
    a = torch.softmax((q @ k.transpose(-2, -1)) * scale, dim=-1)
    return {
        "q": q,
        "k": k,
        "v": v,
        "d_out": d_out,
        "a": a,
        "scale": scale,
        "right": list(_plain_backward(d_out, q, k, v, a, scale)),
        "mistakes": attention_backward(d_out, q, k, v, a, scale),
        # the same problem without its batch axis: where a mistake raises on the batch (D without
        # keepdim broadcasts only against one [L,S] matrix), it runs here and can be named
        "mistakes_plain": attention_backward(d_out[0], q[0], k[0], v[0], a[0], scale),
    }
