"""Week 7's hand-computable example: prompts A = [我, 喜欢] and B = [猫, 喜欢].

Inputs are exactly the lesson's (§1, §4, §16); the ``STATED`` numbers are the values as
printed in the lesson, each with the tolerance ``expected-numbers.md`` gives for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .tolerances import Tol

SQRT2 = math.sqrt(2.0)
VOCAB = ("我", "喜欢", "AI", "学习", "猫")
TARGETS = (2, 0)  # A → AI, B → 我 (expected-numbers.md W7-38)
PROMPTS = (("我", "喜欢"), ("猫", "喜欢"))

# expected-numbers.md tolerances
PRINTED_3DP = Tol(rtol=0.0, atol=5e-4)  # "abs 5e-04 (printed 3 dp)"
PRINTED_4DP_F32 = Tol(rtol=0.0, atol=5e-5)  # W7-26: "abs 5e-5 (float32 ok)"
PRINTED_6DP = Tol(rtol=0.0, atol=2e-6)  # W7-35/36/43/45: "abs 1e-6 (float32 ok at 2e-6)"
NEAR_EXACT = Tol(rtol=0.0, atol=1e-6)  # "1e-6" rows (exact in exact arithmetic)


@dataclass(frozen=True)
class Example:
    x: torch.Tensor  # [B,T,C] = [2,2,4]
    w_q: torch.Tensor  # [C,d_k] = [4,2]
    w_k: torch.Tensor
    w_v: torch.Tensor
    w_vocab: torch.Tensor  # [d,V] = [2,5]
    targets: torch.Tensor  # [2]


def example(dtype: torch.dtype = torch.float32) -> Example:
    """Fresh tensors every call, so no test can disturb another's inputs."""
    x = torch.tensor([[[1.0, 0, 0, 0], [0, 1, 0, 0]], [[0, 0, 1, 0], [0, 1, 0, 0]]], dtype=dtype)
    w_q = torch.tensor([[0.5, 0.5], [1.0, 1.0], [-0.5, 0.5], [0.0, 0.0]], dtype=dtype)
    w_k = torch.tensor([[0.8 * SQRT2, 0.0], [0.2 * SQRT2, 0.2 * SQRT2], [0.0, 0.1 * SQRT2], [0.0, 0.0]], dtype=dtype)
    w_v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, 0.0]], dtype=dtype)
    w_vocab = torch.tensor([[0.0, 1, 2, -1, 0], [0.0, 0, 0, 1, 0]], dtype=dtype)
    return Example(x, w_q, w_k, w_v, w_vocab, torch.tensor(TARGETS))


def t(values, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


NEG_INF = float("-inf")

# Numbers as printed in Week 7 (ids from expected-numbers.md).
STATED = {
    "Q": [[[0.5, 0.5], [1.0, 1.0]], [[-0.5, 0.5], [1.0, 1.0]]],  # W7-06, W7-09
    "K": [[[1.131, 0.0], [0.283, 0.283]], [[0.0, 0.141], [0.283, 0.283]]],  # W7-07, W7-10
    "V": [[[1.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]],  # W7-08, W7-11
    "raw_scores": [[[0.566, 0.283], [1.131, 0.566]], [[0.071, 0.0], [0.141, 0.566]]],  # W7-13, W7-14
    "sqrt_dk": 1.414,  # W7-15
    "scaled_final_rows": [[0.8, 0.4], [0.1, 0.4]],  # W7-16
    "masked_scaled": [[[0.4, NEG_INF], [0.8, 0.4]], [[0.05, NEG_INF], [0.1, 0.4]]],  # W7-22, W7-23
    "weights": [[[1.0, 0.0], [0.599, 0.401]], [[1.0, 0.0], [0.426, 0.574]]],  # W7-24, W7-25
    "final_weights_4dp": [[0.5987, 0.4013], [0.4256, 0.5744]],  # W7-26a
    "final_outputs_4dp": [[0.5987, 0.4013], [-0.4256, 0.5744]],  # W7-26b
    "final_outputs_6dp": [[0.598688, 0.401312], [-0.425557, 0.574443]],  # W7-35
    "uniform_mean_final": [[0.5, 0.5, 0.0, 0.0], [0.0, 0.5, 0.5, 0.0]],  # W7-02, W7-03
    "wrong_zero_fill": [0.550, 0.450],  # W7-32: softmax([0.2, 0])
    "right_neg_inf": [1.0, 0.0],  # W7-33: softmax([0.2, −∞])
    "mask_T2": [[True, False], [True, True]],  # W7-30
    "mask_T4": [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, False],
        [True, True, True, True],
    ],  # W7-31
    "logits": [[0.0, 0.598688, 1.197375, -0.197375, 0.0], [0.0, -0.425557, -0.851115, 1.0, 0.0]],  # W7-36, W7-37
    "p_target": [0.416424, 0.172455],  # W7-39, W7-41
    "loss_each": [0.876051, 1.757621],  # W7-40, W7-42
    "loss_mean": 1.316836,  # W7-43
    "grad_wq_10": -0.076159,  # W7-45
    "q_new": 1.000762,  # W7-46
    "loss_after_update": 1.316778,  # W7-47
    "score_elements": {(2, 2, 2): 16, (2, 2, 1000): 4_000_000},  # W7-49, W7-50
}
