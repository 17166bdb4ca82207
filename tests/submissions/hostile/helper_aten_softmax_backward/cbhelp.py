import torch


def rows_backward(d_weights, weights):
    return torch.ops.aten._softmax_backward_data(d_weights, weights, -1, weights.dtype)
