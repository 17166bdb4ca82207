"""Blind red-team tester R-CA (2026-12-07): importing ``torch.nn.attention.bias`` makes the fork
server load torch._dynamo, which keeps ``set_eval_frame`` as ``_maybe_set_eval_frame`` too. A
seal by name left that alias: reached through a container the scan cannot trace
(``dict(m=torch)["m"]._dynamo``), its callback ran in the worker's reply glue after the
autograd tripwire was disarmed and computed the Jacobian by autograd there; ``backward`` later
returned ``d_out @ J`` for the same inputs. 9.31 against 8 honest, the rule test passed. Now
every module-level name that holds torch's frame hook is sealed, whatever its name: the
import fails with the refusal."""
from __future__ import annotations

import math

import torch
import torch.nn.attention.bias

box = dict(m=torch)["m"]
kinds = box._dynamo.types
setter = box._dynamo.eval_frame._maybe_set_eval_frame
KEEP = kinds.ConvertFrameReturn(
    frame_exec_strategy=kinds.FrameExecStrategy(kinds.FrameAction.DEFAULT, kinds.FrameAction.DEFAULT), apply_to_code=False
)
SKIP = kinds.ConvertFrameReturn()


STATE = {"target": None, "todo": []}


def hook(frame, cache_entry, frame_state, state=STATE):
    code = frame.f_code
    if state["target"] is not None:
        if code is not state["target"]:
            return SKIP
    elif "code object take at" not in str(code):
        return SKIP
    state["target"] = code
    for item in state["todo"]:
        if item[4] is None:
            q, k, v, allowed = item[:4]
            with torch.enable_grad():
                jac = torch.autograd.functional.jacobian(
                    lambda a, b, c: plain(a, b, c, allowed)[0].reshape(-1), (q, k, v), vectorize=True
                )
            item[4] = tuple(j.reshape(j.shape[0], -1) for j in jac)
    return KEEP


hook.state = STATE
previous = setter(hook)
try:
    STATE["todo"] = previous.state["todo"]
except AttributeError:
    pass


def remember(q, k, v, allowed):
    if len(STATE["todo"]) < 40 and q.numel() * 3 < 3000:
        STATE["todo"].append([q.detach().clone(), k.detach().clone(), v.detach().clone(), None if allowed is None else allowed.clone(), None])


def lookup(q, k, v):
    for item in STATE["todo"]:
        if item[4] is not None and item[0].shape == q.shape and item[1].shape == k.shape and item[2].shape == v.shape and item[0].dtype == q.dtype:
            if torch.equal(item[0], q) and torch.equal(item[1], k) and torch.equal(item[2], v):
                return item[4]
    return None


def softmax_backward(d_weights: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    d = (d_weights * weights).sum(dim=-1, keepdim=True)
    return weights * (d_weights - d)


def attention_backward(d_out, q, k, v, weights, scale):
    ds = softmax_backward(d_out @ v.transpose(-2, -1), weights)
    found = lookup(q, k, v)
    if found is None:
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    jq, jk, jv = found
    g = d_out.reshape(-1)
    return (g @ jq).reshape(q.shape), (g @ jk).reshape(k.shape), (g @ jv).reshape(v.shape)


def plain(q, k, v, allowed):
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = (q @ k.transpose(-2, -1)) * scale
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    m = s.amax(dim=-1, keepdim=True)
    e = torch.exp(s - m)
    w = e / e.sum(dim=-1, keepdim=True)
    return w @ v, w, scale


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, allowed=None):
        out, w, scale = plain(q, k, v, allowed)
        ctx.save_for_backward(q, k, v, w)
        ctx.scale = scale
        remember(q, k, v, allowed)
        return out

    @staticmethod
    def backward(ctx, d_out):
        q, k, v, w = ctx.saved_tensors
        dq, dk, dv = attention_backward(d_out, q, k, v, w, ctx.scale)
        return dq, dk, dv, None


def attention(q, k, v, allowed=None):
    return AttentionFunction.apply(q, k, v, allowed)
