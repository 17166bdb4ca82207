"""Input makers shared by the tolerance cases (float64, seeded)."""

from __future__ import annotations

import torch


def randn(g: torch.Generator, *shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64) * scale


def weight(g: torch.Generator, fan_in: int, fan_out: int) -> torch.Tensor:
    """Projection weights as a model would have them: std 1/√fan_in, so scores are O(1)."""
    return randn(g, fan_in, fan_out, scale=fan_in**-0.5)


def dims(g: torch.Generator) -> tuple[int, int, int, int]:
    B = int(torch.randint(1, 4, (1,), generator=g))
    T = int(torch.randint(1, 65, (1,), generator=g))
    C = int(torch.randint(1, 33, (1,), generator=g))
    d = int(torch.randint(1, 17, (1,), generator=g))
    return B, T, C, d
