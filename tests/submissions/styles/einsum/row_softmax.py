"""row_softmax written with einsum for every reduction and product."""
import torch


def _to_last(x, dim):
    return x.movedim(dim, -1)


def softmax_rows(scores, dim=-1):
    s = _to_last(scores, dim)
    top = s.max(dim=-1, keepdim=True).values
    e = (s - top).exp()
    total = torch.einsum("...j->...", e).unsqueeze(-1)
    return (e / total).movedim(-1, dim)


def log_softmax_rows(scores, dim=-1):
    s = _to_last(scores, dim)
    top = s.max(dim=-1, keepdim=True).values
    z = s - top
    log_norm = torch.einsum("...j->...", z.exp()).log().unsqueeze(-1)
    return (z - log_norm).movedim(-1, dim)


def cross_entropy(logits, targets):
    n_classes = logits.shape[-1]
    one_hot = (targets.reshape(-1, 1) == torch.arange(n_classes, device=logits.device)).to(logits.dtype)
    lp = log_softmax_rows(logits, dim=-1)
    lp = torch.where(one_hot.bool(), lp, torch.zeros((), dtype=lp.dtype))  # keep −∞ rows out of 0·(−∞)
    per_row = torch.einsum("nv,nv->n", lp, one_hot)
    return -torch.einsum("n->", per_row) / logits.shape[0]


def vocab_probs(h, w_vocab):
    logits = torch.einsum("...c,cv->...v", h, w_vocab)
    return softmax_rows(logits, dim=-1)
