"""Attack (issue 28 A): torch's softmax resolved from a string built at run time by
pydoc.locate, a resolver of dotted names — no banned name, no getattr, no import of torch.nn."""

import pydoc

import torch

_rows = pydoc.locate("torch.nn.functional." + "soft" + "max")
_log_rows = pydoc.locate("torch.nn.functional." + "log_soft" + "max")


def softmax_rows(scores, dim=-1):
    return _rows(scores, dim=dim)


def log_softmax_rows(scores, dim=-1):
    return _log_rows(scores, dim=dim)


def cross_entropy(logits, targets):
    return -log_softmax_rows(logits, -1).gather(-1, targets.long().unsqueeze(-1)).mean()


def vocab_probs(h, w_vocab):
    return softmax_rows(torch.matmul(h, w_vocab), -1)
