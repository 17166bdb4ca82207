"""Trusted procedures that run *inside* the worker and call into the submission.

A probe is ``def probe(ctx, *args, **kwargs) -> data``: ``ctx.module("qkv")`` gives a
submission module, ``ctx.watch_ops()`` records the torch functions/aten operators used,
``ctx.watch_autograd()`` records any autograd use. What a probe returns crosses back as
data only. The grader never trusts a probe's result more than the submission it ran:
expected values are always computed on the trusted side.

Suites can ship their own probes (``autograder.testing.probe``); their source is sent to
the worker and may be read by the submission, so a probe holds glue, never answers.
"""

from __future__ import annotations

from .bans import (
    AUTOGRAD_TRIPWIRE,
    STANDING_BAN,
    THREAD_BAN,
    KernelBan,
    kernel_registrations,
    own_frame,
    remove_kernel_handles,
    remove_op_loaders,
)
from .builtin import BUILTIN, PlainFunctionCtx, call, call_with_grad, construct, copied_result, describe_module, resolve
from .recorders import CallWatch, DispatchRecorder, OpRecorder, seal_switches

__all__ = [
    "AUTOGRAD_TRIPWIRE",
    "BUILTIN",
    "CallWatch",
    "DispatchRecorder",
    "KernelBan",
    "OpRecorder",
    "PlainFunctionCtx",
    "STANDING_BAN",
    "THREAD_BAN",
    "call",
    "call_with_grad",
    "construct",
    "copied_result",
    "describe_module",
    "kernel_registrations",
    "own_frame",
    "remove_kernel_handles",
    "remove_op_loaders",
    "resolve",
    "seal_switches",
]
