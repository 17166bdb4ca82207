"""Red-team attack (blind red-team tester R-DK, 2026-12-07): a str subclass as the file name of
a compile, whose own `startswith` told the audit hook's compile check the name began with "<"
(so no comparison with the library file) and answered truthfully after: the code object kept
the subclass as its name, and the gate ran the exercise's string as an unimported library
module (6.19 of row_softmax's 15 from a stub). The same method, run inside the hook, walked the
stack to the worker's serve while the hook's checks were off. The other functions are the
stubs."""

from __future__ import annotations

import torch

import os
import sys
import types

_SRC = """
def softmax_rows(scores, dim=-1):
    m = scores.amax(dim=dim, keepdim=True)
    e = (scores - m).exp()
    return e / e.sum(dim=dim, keepdim=True)
"""


class Name(str):
    lies = 1

    def startswith(self, prefix, *args):
        if prefix == "<" and self.lies:
            self.lies -= 1
            return True
        return str.startswith(self, prefix, *args)


_DONE = []


def _rows(scores, dim):
    if not _DONE:
        spec = None
        for finder in sys.meta_path:
            try:
                spec = finder.find_spec("json", None)
            except Exception:
                spec = None
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                break
        folder = os.path.dirname(os.path.dirname(spec.origin))
        module = None
        for entry in sorted(os.listdir(folder)):
            if not entry.endswith(".py") or entry.startswith("_"):
                continue
            lib = os.path.join(folder, entry)
            code = spec.loader.source_to_code(_SRC.encode(), Name(lib))

            class Mine(type(spec.loader)):
                def get_code(self, fullname):
                    return code

            candidate = types.ModuleType("zz_dk_rows")
            try:
                Mine("zz_dk_rows", lib).exec_module(candidate)
            except ImportError:
                continue
            module = candidate
            break
        _DONE.append(module)
    return _DONE[0].softmax_rows(scores, dim)



def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Numerically stable softmax along `dim` (Week 7 §5; by default the key axis).

    softmax(s)_j = exp(s_j − m) / Σ_r exp(s_r − m) with m = max_r s_r: subtracting the row
    maximum changes nothing mathematically (Week 7 §8) but keeps every exp() ≤ 1, so
    scores of magnitude 1e4 do not overflow. Entries at −∞ get weight exactly 0, as long
    as the row has at least one finite entry.

    Args:
        scores: [...,L,S] scores (any shape).
        dim: the axis that is normalised (−1: one distribution per query row).

    Returns:
        A tensor shaped like `scores`, non-negative, summing to 1 along `dim`.
    """
    return _rows(scores, dim)


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Stable log-softmax along `dim`: s − logsumexp(s) (log-sum-exp with the max pulled out).

    log softmax(s)_j = (s_j − m) − log Σ_r exp(s_r − m), m = max_r s_r. Never takes the log
    of an underflowed probability, so it stays finite where softmax rounds to 0.

    Args:
        scores: [...,L,S] scores or [N,V] logits (any shape).
        dim: the axis that is normalised.

    Returns:
        A tensor shaped like `scores`: the log-probabilities along `dim`.
    """
    # TODO(row_softmax): compute (s − max) − log Σ exp(s − max) along dim (Week 7 §8, §16).
    raise NotImplementedError("TODO(row_softmax): log_softmax_rows")


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the next-token targets (Week 7 §16).

    L_n = −log p(target_n | context_n), where p is the softmax over the vocabulary axis;
    the result is the mean over the N examples (reduction "mean"; no ignore_index). Finite
    for logits of any magnitude (1e4 included): a log of a probability that underflowed to
    0 would give +∞.

    Args:
        logits: [N,V] vocabulary scores, one row per example.
        targets: [N] integer class indices in [0, V).

    Returns:
        A 0-dim tensor of the logits' dtype: mean over n of −log_softmax(logits)[n, targets[n]].
    """
    # TODO(row_softmax): average −log p(target) over the rows, using log_softmax_rows (Week 7 §16).
    raise NotImplementedError("TODO(row_softmax): cross_entropy")


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    """Next-token probabilities: logits = h @ W_vocab, softmax over the vocabulary axis (Week 7 §16).

    Args:
        h: [...,C] contextual features (e.g. [B,T,C], or the final position [B,C]).
        w_vocab: [C,V] language-model head.

    Returns:
        [...,V] probabilities; each row sums to 1 over the V vocabulary tokens.
    """
    # TODO(row_softmax): project h onto the vocabulary and softmax over the vocabulary axis (Week 7 §16).
    raise NotImplementedError("TODO(row_softmax): vocab_probs")
