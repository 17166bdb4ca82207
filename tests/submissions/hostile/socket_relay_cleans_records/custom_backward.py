"""Attack (blind red-team tester R-C, 2026-12-05): put this module between the worker and
the grader. At import it finds the worker's socket, moves it aside with dup/dup2 behind a
socketpair of its own, and relays both ways from a SIGALRM handler every millisecond,
deleting from each reply what the rule recorders wrote (autograd uses, tampering, every
dispatched line that is not a plain aten:: op). backward returns torch.autograd.grad's
gradients. Before replies were signed it scored custom_backward 8.5/8.5 (visible) with
autograd in backward; this copy also forwards each reply's 32-byte signature, so a changed
reply arrives well framed and its signature alone gives it away (protocol.FrameAuth)."""


from __future__ import annotations

import math

import torch


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Backward of a row softmax over the last axis (Day 1 §2.3 第二步).

    S̄_il = A_il (Ā_il − D_i) with D_i = Σ_j Ā_ij A_ij, one scalar per row. Entries where
    A_il = 0 (masked keys) get exactly 0 — S̄_il is A_il times a finite number, so this holds
    in floating point too, and is checked exactly — and every row of S̄ sums to 0 (within
    rounding).

    Args:
        d_weights: [...,L,S] Ā = ∂L/∂A.
        weights: [...,L,S] A, the softmax output saved by the forward pass.

    Returns:
        [...,L,S] S̄ = ∂L/∂S.
    """
    D = (d_weights * weights).sum(-1, keepdim=True)
    return weights * (d_weights - D)


def attention_backward(
    d_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, weights: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of out = softmax(scale · q kᵀ) v with respect to q, k and v (Day 1 §2.3).

    V̄ = Aᵀ Ȳ,  Ā = Ȳ Vᵀ,  S̄ = softmax_backward(Ā, A),  Q̄ = s S̄ K,  K̄ = s S̄ᵀ Q.

    Args:
        d_out: [...,L,d_v] Ȳ = ∂L/∂out.
        q: [...,L,d_k] queries; k: [...,S,d_k] keys; v: [...,S,d_v] values.
        weights: [...,L,S] A from the forward pass (masked keys hold 0).
        scale: s, the factor the forward pass multiplied q kᵀ by (1/√d_k).

    Returns:
        (dq [...,L,d_k], dk [...,S,d_k], dv [...,S,d_v]).
    """
    dv = weights.transpose(-2, -1) @ d_out
    dA = d_out @ v.transpose(-2, -1)
    dS = softmax_backward(dA, weights)
    dq = scale * (dS @ k)
    dk = scale * (dS.transpose(-2, -1) @ q)
    return dq, dk, dv


class AttentionFunction(torch.autograd.Function):
    """Scaled dot-product attention with a hand-written backward (Day 1 §B).

    forward(ctx, q [...,L,d_k], k [...,S,d_k], v [...,S,d_v], allowed=None) → out [...,L,d_v],
    with scale 1/√d_k and keys where `allowed` is False (it broadcasts against [...,L,S])
    set to −∞ before the softmax. backward(ctx, d_out) → (dq, dk, dv, None): one gradient
    per forward input, None for the mask.
    """

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
        scale = 1.0 / math.sqrt(q.shape[-1])
        with torch.enable_grad():
            q2 = q.detach().clone().requires_grad_(True)
            k2 = k.detach().clone().requires_grad_(True)
            v2 = v.detach().clone().requires_grad_(True)
            s = scale * (q2 @ k2.transpose(-2, -1))
            if allowed is not None:
                s = s.masked_fill(~allowed, float("-inf"))
            e = torch.exp(s - s.amax(-1, keepdim=True).detach())
            w = e / e.sum(-1, keepdim=True)
            out = w @ v2
        ctx.keep = (out, q2, k2, v2)
        ctx.helper = torch.autograd.grad
        ctx.save_for_backward(q, k, v, w.detach())
        ctx.scale = scale
        return out.detach()

    @staticmethod
    def backward(ctx, d_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        q, k, v, w = ctx.saved_tensors
        attention_backward(d_out, q, k, v, w, ctx.scale)  # computed, then ignored
        out, q2, k2, v2 = ctx.keep
        dq, dk, dv = ctx.helper(out, (q2, k2, v2), d_out, retain_graph=True)
        return dq, dk, dv, None


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """out = softmax(q kᵀ/√d_k, blocked keys −∞) v through AttentionFunction (Day 1 §B).

    Args:
        q: [...,L,d_k]; k: [...,S,d_k]; v: [...,S,d_v].
        allowed: optional bool mask broadcasting against [...,L,S]; True = may attend.

    Returns:
        [...,L,d_v]; differentiable with respect to q, k and v by the hand-written backward.
    """
    return AttentionFunction.apply(q, k, v, allowed)


# ---------------------------------------------------------------- relay (red team)
import json
import os
import signal
import socket
import stat
import struct

_P = struct.Struct("<4sIQ")
_S = {}
_BAD = ("backward", "jvp", "vjp", "autograd", "_make_dual", "_unpack_dual", "_fw_primal", "requires_grad_", "retain_grad", "set_data", "engine")


def _find():
    for fd in range(3, 256):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if stat.S_ISSOCK(st.st_mode):
            return fd
    return -1


def _clean(h):
    if type(h.get("dispatched")) is list:
        keep = []
        for line in h["dispatched"]:
            parts = line.split("\t")
            op = parts[1] if len(parts) == 6 else ""
            if op.startswith("aten::") and not any(x in op.lower() for x in _BAD) and not op.endswith("_grad"):
                keep.append(line)
        h["dispatched"] = keep
    if "autograd" in h:
        h["autograd"] = []
    if "tampered" in h:
        h["tampered"] = []
    return h


def _relay():
    R, b, n = _S["R"], _S["b"], _S["n"]
    # worker replies -> trusted, cleaned
    while True:
        try:
            chunk = b.recv(1 << 20, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            break
        if not chunk:
            break
        _S["outb"] += chunk
    ob = _S["outb"]
    while len(ob) >= 16:
        magic, hl, bl = _P.unpack(bytes(ob[:16]))
        total = 16 + hl + bl + 32  # the reply's signature follows its blob
        if len(ob) < total:
            break
        h = _clean(json.loads(bytes(ob[16 : 16 + hl]).decode()))
        data = json.dumps(h, allow_nan=False, separators=(",", ":")).encode()
        R.sendall(_P.pack(magic, len(data), bl) + data + bytes(ob[16 + hl : total]))
        del ob[:total]
        _S["relayed"] = _S.get("relayed", 0) + 1
    # trusted requests -> worker
    while True:
        if _S["need"] == 0:
            try:
                peek = R.recv(1 << 16, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            if not peek:
                os._exit(0)
            if len(peek) < 16:
                return
            magic, hl, bl = _P.unpack(peek[:16])
            if len(peek) < 16 + hl:
                return
            h = json.loads(peek[16 : 16 + hl].decode())
            if h.get("op") == "reset" and not _S["outb"]:
                # hand the real socket back before the worker resets itself
                signal.setitimer(signal.ITIMER_REAL, 0, 0)
                _S["on"] = False
                os.dup2(R.fileno(), n)
                R.close()
                b.close()
                return
            _S["need"] = 16 + hl + bl
        try:
            chunk = R.recv(min(_S["need"], 1 << 20), socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        if not chunk:
            os._exit(0)
        b.sendall(chunk)
        _S["need"] -= len(chunk)


def _pump(*_):
    if not _S.get("on") or _S.get("busy"):
        return
    _S["busy"] = True
    try:
        _relay()
    except Exception:
        pass
    finally:
        _S["busy"] = False


def _setup():
    n = _find()
    if n < 0:
        return
    r = os.dup(n)
    a, b = socket.socketpair()
    os.dup2(a.fileno(), n)
    a.close()
    R = socket.socket(fileno=r)
    R.setblocking(True)
    b.setblocking(True)
    _S.update(n=n, R=R, b=b, outb=bytearray(), need=0, on=True)
    signal.signal(signal.SIGALRM, _pump)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)


try:
    _setup()
except Exception:
    pass
