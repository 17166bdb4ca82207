"""row_softmax computing in float64 with log-sum-exp, cast back to the input dtype."""
import torch


def _lse(x, dim):
    return torch.logsumexp(x, dim=dim, keepdim=True)


def log_softmax_rows(scores, dim=-1):
    x = scores.to(torch.float64)
    return (x - _lse(x, dim)).to(scores.dtype)


def softmax_rows(scores, dim=-1):
    x = scores.to(torch.float64)
    return torch.exp(x - _lse(x, dim)).to(scores.dtype)


def cross_entropy(logits, targets):
    x = logits.to(torch.float64)
    log_p = x - _lse(x, -1)
    idx = targets.to(torch.int64).view(-1, 1)
    nll = -torch.gather(log_p, 1, idx).view(-1)
    return nll.mean().to(logits.dtype)


def vocab_probs(h, w_vocab):
    logits = h.to(torch.float64) @ w_vocab.to(torch.float64)
    return torch.exp(logits - _lse(logits, -1)).to(h.dtype)
