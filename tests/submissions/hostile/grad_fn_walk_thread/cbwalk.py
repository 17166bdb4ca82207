import concurrent.futures

import torch


def _walk(out, grad, leaf):
    """Backpropagate ``grad`` from ``out`` to ``leaf`` by calling each grad_fn node (every
    node is linear in its incoming gradient, so one call per path adds up correctly)."""
    total = torch.zeros_like(leaf)
    pending = [(out.grad_fn, grad)]
    while pending:
        node, g = pending.pop()
        if node is None:
            continue
        if type(node).__name__ == "AccumulateGrad":
            if node.variable is leaf:
                total = total + g
            continue
        outs = node(g)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for (following, _), o in zip(node.next_functions, outs):
            if o is not None:
                pending.append((following, o))
    return total


def _rebuild_and_walk(d_weights, weights):
    scores = weights.log().detach().requires_grad_(True)  # softmax(log A) = A: rows of A sum to 1
    return _walk(torch.softmax(scores, dim=-1), d_weights, scores)


def rows_backward(d_weights, weights):
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(_rebuild_and_walk, d_weights, weights).result()
