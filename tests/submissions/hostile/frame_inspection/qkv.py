"""Attack: look for the expected answer in the caller's frames and in every live object."""
import gc
import inspect
import sys

import torch


def _find_expected(shape, dtype):
    """Any tensor of the right shape that is not one of our inputs."""
    for frame_info in inspect.stack():
        for value in list(frame_info.frame.f_locals.values()) + list(frame_info.frame.f_globals.values()):
            if isinstance(value, torch.Tensor) and value.shape == shape and value.dtype == dtype:
                return value
    frame = sys._getframe()
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, torch.Tensor) and value.shape == shape:
                return value
        frame = frame.f_back
    for obj in gc.get_objects():
        if type(obj) is torch.Tensor and obj.shape == shape and obj.dtype == dtype and obj.abs().sum() > 0:
            return obj
    return torch.zeros(shape, dtype=dtype)


def project_qkv(x, w_q, w_k, w_v):
    B, T, _ = x.shape
    return tuple(_find_expected(torch.Size([B, T, w.shape[1]]), x.dtype) for w in (w_q, w_k, w_v))


def attention_scores(q, k):
    return _find_expected(q.shape[:-1] + (k.shape[-2],), q.dtype)


def scale_scores(scores, d_k):
    return _find_expected(scores.shape, scores.dtype)


def single_head_attention(x, w_q, w_k, w_v, causal=True):
    B, T, _ = x.shape
    return _find_expected(torch.Size([B, T, w_v.shape[1]]), x.dtype), _find_expected(torch.Size([B, T, T]), x.dtype)
