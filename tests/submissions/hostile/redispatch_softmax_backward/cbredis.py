import torch

_CPU = torch.DispatchKeySet(torch.DispatchKey.CPU)


def rows_backward(d_weights, weights):
    return torch.ops.aten._softmax_backward_data.default.redispatch(_CPU, d_weights, weights, -1, weights.dtype)
