"""Attack: return objects that claim to equal anything (and to be tensors)."""
import torch


class Anything:
    shape = property(lambda self: torch.Size([2, 2, 2]))
    dtype = torch.float32
    __class__ = torch.Tensor  # isinstance(x, torch.Tensor) is True for this object

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __bool__(self):
        return True

    def __getattr__(self, name):
        return lambda *a, **k: self

    def __getitem__(self, item):
        return self

    def __iter__(self):
        return iter([self, self, self])

    def __len__(self):
        return 3


def project_qkv(x, w_q, w_k, w_v):
    return Anything()


def attention_scores(q, k):
    return Anything()


def scale_scores(scores, d_k):
    return Anything()


def weighted_values(weights, v):
    return Anything()


def causal_uniform_mean(x):
    return Anything()


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    return Anything(), Anything()
