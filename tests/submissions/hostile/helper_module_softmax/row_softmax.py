"""Attack: row_softmax.py itself is clean; the forbidden softmax hides in a helper module it
imports, fetched through vars() with torch-function handling switched off."""
import torch

from rowhelp import rows


def softmax_rows(scores, dim=-1):
    return rows(scores, dim)


def log_softmax_rows(scores, dim=-1):
    return torch.log(rows(scores, dim))


def cross_entropy(logits, targets):
    logp = torch.log(rows(logits, -1))
    return -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).mean()


def vocab_probs(h, w_vocab):
    return rows(h @ w_vocab, -1)
