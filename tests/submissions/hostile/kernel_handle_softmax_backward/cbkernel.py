import torch

_CPU = torch.DispatchKeySet(torch.DispatchKey.CPU)
_FORMULA = torch.library.get_kernel("aten::_softmax_backward_data", "CPU")


def rows_backward(d_weights, weights):
    return _FORMULA.call_boxed(_CPU, d_weights, weights, -1, weights.dtype)
