"""Attack / fairness probe: torch's own NotImplementedError, a NotImplementedError carrying a
TODO message but raised from torch's frame (via a callback), and tensors that cannot be sent as
data (meta, sparse). None of these is "still the TODO stub", and none may earn anything."""
import torch


def project_qkv(x, w_q, w_k, w_v):
    return torch.empty_like(x, device="meta").cpu()  # torch: "Cannot copy out of meta tensor"


def attention_scores(q, k):
    return torch.empty(q.shape[:-1] + (k.shape[-2],), device="meta")


def scale_scores(scores, d_k):
    return scores.to_sparse()


def weighted_values(weights, v):
    raise NotImplementedError("TODO(masks): another skill's tag is not this skill's stub")


def causal_uniform_mean(v):
    raise NotImplementedError("not implemented for 'Float'")
