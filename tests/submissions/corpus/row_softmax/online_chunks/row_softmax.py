"""Online (streaming) normaliser: running max and rescaled running sum over chunks."""

import torch

CHUNK = 3


def _log_normaliser(s):  # over the last axis
    run_max = torch.full(s.shape[:-1] + (1,), float("-inf"), dtype=s.dtype)
    run_sum = torch.zeros_like(run_max)
    for block in s.split(CHUNK, dim=-1):
        new_max = torch.maximum(run_max, block.amax(-1, keepdim=True))
        rescale = torch.exp(run_max - new_max).nan_to_num(nan=0.0)  # −∞ − (−∞): nothing summed yet
        fresh = torch.exp(block - new_max).nan_to_num(nan=0.0).sum(-1, keepdim=True)
        run_sum = run_sum * rescale + fresh
        run_max = new_max
    return run_max + torch.log(run_sum)


def log_softmax_rows(scores, dim=-1):
    s = scores.transpose(dim, -1)
    return (s - _log_normaliser(s)).transpose(dim, -1)


def softmax_rows(scores, dim=-1):
    return log_softmax_rows(scores, dim).exp()


def cross_entropy(logits, targets):
    return -(log_softmax_rows(logits)[torch.arange(len(targets)), targets.long()]).mean()


def vocab_probs(h, w_vocab):
    return softmax_rows(h @ w_vocab)
