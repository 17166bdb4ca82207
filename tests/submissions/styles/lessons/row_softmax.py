"""Skill row_softmax typed from the lessons: Week 7 §5's softmax with §8's max shift (adding
one constant to a row changes nothing, so subtract the row maximum first) and §16's
next-token probabilities and cross-entropy (L = −log p(target), averaged over the prompts).
Adapted only to the exercise API (function names, the `dim` argument, batched targets)."""

import torch


def softmax_rows(scores, dim=-1):
    # Week 7 §8: subtracting the row max changes nothing, but keeps exp() ≤ 1
    shifted = scores - scores.max(dim=dim, keepdim=True).values
    e = torch.exp(shifted)
    # Week 7 §5: each row becomes a probability distribution
    return e / e.sum(dim=dim, keepdim=True)


def log_softmax_rows(scores, dim=-1):
    shifted = scores - scores.max(dim=dim, keepdim=True).values
    return shifted - torch.log(torch.exp(shifted).sum(dim=dim, keepdim=True))


def cross_entropy(logits, targets):
    # Week 7 §16: L = −log p(target) per prompt, then the mean over the prompts
    log_p = log_softmax_rows(logits, dim=-1)
    losses = -log_p[torch.arange(logits.size(0)), targets]
    return losses.mean()


def vocab_probs(h, w_vocab):
    # Week 7 §16: logits = h @ W_vocab, softmax over the vocabulary axis
    logits = h @ w_vocab
    return softmax_rows(logits, dim=-1)
