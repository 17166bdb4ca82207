"""Seeded random inputs for suites. Every draw takes the test's ``rng`` (a
``CaseGenerator``: values seeded from the run's seed and the test id, sizes from the test id
alone), so a failure can be reproduced with ``--seed``."""

from __future__ import annotations

import hashlib

import torch


class CaseGenerator(torch.Generator):
    """A test's ``rng``: a ``torch.Generator`` seeded from the run's seed and the test id, for
    the values (``randn``, ``bernoulli``, ``torch.randint(…, generator=rng)``), carrying
    ``sizes``, a second generator seeded from the test id alone, which ``randint`` and
    ``choice`` draw from. So a test's sizes and its structure (T, B, a width, a prefix length,
    which case) are the same on every seed, and a mistake that depends on a size costs the
    same for every student who makes it (rule 6): a causal buffer of fixed length sliced to
    ``[:T, :T]`` cost 0 to 0.75 points by seed when T was drawn with the values (blind tester
    R-BS). What changes with the seed is the numbers."""

    sizes: torch.Generator

    @classmethod
    def for_test(cls, seed: int, test_id: str) -> CaseGenerator:
        rng = cls()
        rng.manual_seed(seed)
        digest = hashlib.sha256(f"sizes:{test_id}".encode()).digest()
        rng.sizes = torch.Generator().manual_seed(int.from_bytes(digest[:8], "little") >> 1)
        return rng


def randint(rng: torch.Generator, low: int, high: int) -> int:
    """An int in [low, high] (inclusive): from the test's ``sizes`` where it has one
    (``CaseGenerator``), else from ``rng`` itself (snapshot cases, other seeded draws)."""
    sizes = getattr(rng, "sizes", None)
    return int(torch.randint(low, high + 1, (1,), generator=rng if sizes is None else sizes))


#: a sequence length past any fixed-size buffer of up to 128 positions: each test of a function
#: that takes a length draws one (blind tester R-BS: ``tril(ones(50, 50))[:T, :T]`` scored full
#: marks once the sizes were the same on every seed and none was over 50; R-BV: 100–130 let a
#: buffer of 112 or 128 through where the draw was below it). Not much longer: a correct
#: submission that fills a mask one entry at a time must stay within its time limit
LONG_LENGTHS = (129, 144)


def long_length(rng: torch.Generator) -> int:
    """A sequence length in ``LONG_LENGTHS`` (from the test's sizes, as ``randint``)."""
    return randint(rng, *LONG_LENGTHS)


def choice(rng: torch.Generator, options: list | tuple):
    return options[randint(rng, 0, len(options) - 1)]


def randn(rng: torch.Generator, *shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=rng, dtype=torch.float64) * scale).to(dtype)


def weight(rng: torch.Generator, fan_in: int, fan_out: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A projection [fan_in, fan_out] scaled like a trained layer (std 1/√fan_in)."""
    return randn(rng, fan_in, fan_out, dtype=dtype, scale=fan_in**-0.5)


def noncontiguous(t: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous layout (every other element of a wider buffer).
    A tensor whose last dimension is 1 stays contiguous: no layout can change that."""
    if t.dim() == 0:
        return t.clone()
    wide = torch.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype)
    wide[..., ::2] = t
    return wide[..., ::2]


def bernoulli(rng: torch.Generator, *shape: int, p: float) -> torch.Tensor:
    """A bool mask, each entry True with probability ``p``."""
    return torch.rand(*shape, generator=rng) < p


def mixed(rng: torch.Generator, mask: torch.Tensor) -> torch.Tensor:
    """Give ``mask`` (at least 2 entries) one True and one False at random places, in place:
    with nothing blocked (or nothing allowed) a trivial or unconverted answer is right."""
    flat = mask.view(-1)
    n = flat.numel()
    i = randint(rng, 0, n - 1)
    j = (i + randint(rng, 1, n - 1)) % n
    flat[i], flat[j] = True, False
    return mask


def beside_regular(regular, degenerate=None) -> list:
    """The draws one credited case checks: the regular draw and, when given, a degenerate one
    (T = 1, L = S, nothing masked…) next to it — a wrong answer can pass a degenerate draw,
    so it is checked but never credited on its own (README: No free points)."""
    return [regular] if degenerate is None else [regular, degenerate]


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` → ``"float32"`` (for labels of cases and checks)."""
    return str(dtype).replace("torch.", "")
