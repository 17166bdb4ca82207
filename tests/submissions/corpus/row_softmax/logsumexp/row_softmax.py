"""Everything from torch.logsumexp (allowed by the exercise)."""

import torch


def log_softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return scores - torch.logsumexp(scores, dim=dim, keepdim=True)


def softmax_rows(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return torch.exp(log_softmax_rows(scores, dim))


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    nll = torch.special.logsumexp(logits, -1) - logits.gather(1, targets.long()[:, None]).squeeze(1)
    return nll.mean()


def vocab_probs(h: torch.Tensor, w_vocab: torch.Tensor) -> torch.Tensor:
    return softmax_rows(torch.matmul(h, w_vocab))
