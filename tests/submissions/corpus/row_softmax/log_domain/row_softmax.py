"""log-softmax first (base-2 exponentials), softmax as its exponential."""

import math

import torch

LOG2E = 1.0 / math.log(2.0)


def log_softmax_rows(scores, dim=-1):
    m = torch.amax(scores, dim, True)
    shifted = scores - m
    return shifted - torch.log2(torch.exp2(shifted * LOG2E).sum(dim, True)) / LOG2E


def softmax_rows(scores, dim=-1):
    m = torch.amax(scores, dim, True)
    p = torch.exp2((scores - m) * LOG2E)
    return p / torch.sum(p, dim, True)


def cross_entropy(logits, targets):
    n = logits.shape[0]
    lp = log_softmax_rows(logits, dim=1)
    return -lp.flatten()[torch.arange(n) * logits.shape[1] + targets.long()].sum() / n


def vocab_probs(h, w_vocab):
    return softmax_rows(torch.tensordot(h, w_vocab, dims=1), -1)
