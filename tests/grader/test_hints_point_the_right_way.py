"""No hint that sends a student the wrong way, and a hint on every failed test a known mistake
explains (issue 30).

Each case is a single-mistake variant of tests/submissions/mistakes/<skill>.toml (the same
variants `make check`'s hint benchmark grades on three seeds). Graded with the hidden tests,
it must lose points, show its own hint, show no hint but its own (and the few listed that
the failed check itself proves, such as ``general/in-place``) — a hint about the backward
on a forward that saved a scaled q, a vocab_probs hint on a softmax_rows mistake, "the
backward ignores the mask" on a forward that ignores it — and, where ``every_test`` is set,
name a hint on every test it fails.

Cases of different skills share a grading run (the suites call only their own module), so
the runs are as few as the most cases of one skill.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest
from conftest import MODULES, SKILLS, SUBMISSIONS, grade

sys.path.insert(0, str(SUBMISSIONS))
import variants


@dataclass(frozen=True)
class Case:
    skill: str
    variant: str
    also: frozenset[str] = frozenset()  # hints the failed checks themselves prove (no function named)
    every_test: bool = False  # every failed test names a hint
    confined: bool = False  # no failed test is about another function (by its name) than the broken one or its callers
    with_: str | None = None  # a second variant of the same skill, base and file: both mistakes at once, both named

    @property
    def id(self) -> str:
        return f"{self.skill}/{self.variant}" + (f"+{self.with_}" if self.with_ else "")


CASES = [
    # §1: hints that pointed the wrong way
    Case("custom_backward", "forward-scales-q-in-place", frozenset({"general/in-place"}), every_test=True),
    Case("custom_backward", "forward-ignores-mask", every_test=True),
    Case("custom_backward", "backward-recomputes-unmasked-weights", every_test=True),  # and the converse
    Case("row_softmax", "sum-over-dim-0", every_test=True),
    # §3: one function's mistake charged to that function; two mistakes in one function both named
    Case("mha_reshape", "split-view-without-transpose", confined=True, every_test=True),
    Case("qkv", "chain-weights-times-keys", every_test=True),
    Case("qkv", "chain-keys-times-queries", with_="chain-weights-times-keys"),
    # §2: failed tests with no hint, or a message that contradicts itself
    Case("sdpa_masks", "additive-minus-1e9", every_test=True),
    Case("sdpa_masks", "mha-never-transposes", every_test=True),
    Case("mha_reshape", "merge-view-without-contiguous", every_test=True),
    Case("mha_reshape", "padding-mask-on-queries", every_test=True),
    Case("masks", "zero-fill-then-zeroed-after-softmax", every_test=True),  # the gradient test's row kinds are fixed
    # §2: failed tests that had no hint (shape errors explained by behaviour, dL/dW_Q, the stated-precision tests)
    Case("custom_backward", "d-without-keepdim", every_test=True),
    Case("custom_backward", "dq-dk-swapped", every_test=True),
    # blind tester R-BJ: failed tests with no hint (an axis written in, a floor, keepdims, a float mask in `&`)
    Case("row_softmax", "softmax-over-first-axis", every_test=True),
    Case("row_softmax", "scores-clamped", every_test=True),
    Case("row_softmax", "log-softmax-max-and-sum-without-keepdim", every_test=True),
    Case("sdpa_masks", "float-mask-combined-with-and", frozenset({"sdpa_masks/float-mask-added"}), every_test=True),
    Case("custom_backward", "attention-drops-mask", every_test=True),  # R-BL: was sent to the forward
    Case("custom_backward", "mask-used-when-none", every_test=True),
    Case("qkv", "context-check-with-assert", every_test=True),  # was told "instead of silently slicing"
    Case("row_softmax", "lse-helper-without-keepdim", every_test=True),
    Case("row_softmax", "vocab-head-transposed", every_test=True),
    Case("sdpa_masks", "batch-first-ignored", every_test=True),
    # feedback round 4, the last bare tests: qkv's stated-precision test on AttentionHead (a raise explained
    # by a probe; mistakes the course's example cannot tell apart confirmed on a probe of the same function),
    # mha_reshape's gradient test (the same call's forward output) and memory table (h = layers)
    Case("qkv", "head-x-at-linear-weight", every_test=True),
    Case("qkv", "head-scaled-by-embed-dim", every_test=True),
    Case("qkv", "head-context-check-off-by-one", every_test=True),
    Case("qkv", "sqrt-operator-precedence", every_test=True),
    Case("mha_reshape", "causal-mask-dropped", every_test=True),
    Case("mha_reshape", "mha-softmax-over-queries", every_test=True),
    Case("mha_reshape", "memory-ignores-layers", every_test=True),
    # two mistakes in one skill, each named by the test that isolates its step (your own S̄ for the third
    # step of attention_backward; your own attention_backward for what the forward saved)
    Case("custom_backward", "missing-d-term", with_="dq-transposed"),
    Case("custom_backward", "forward-scales-q-in-place", frozenset({"general/in-place"}), with_="dq-dk-swapped"),
    # blind test, 2026-12-04: hints that named a mistake the code did not make. A forward with the
    # mask's polarity flipped was told "save the weights, not the scores" (Week 7's NaN loss made its
    # gradient match that mistake's NaN: now only a right loss lets the gradient name a backward
    # mistake); a KV-cache mask one diagonal short was called top-left where the two coincide
    Case("custom_backward", "forward-mask-inverted", every_test=True),  # (every test since its NaN loss is named)
    Case("sdpa_masks", "kv-cache-one-diagonal-too-few", every_test=True),  # (every test since L = S − 1 is drawn second)
    # and failed tests with no hint at all: the mask applied after the softmax, A ⊙ Ā − D
    Case("custom_backward", "forward-mask-after-softmax", every_test=True),
    Case("custom_backward", "d-outside-product", every_test=True),
    Case("sdpa_masks", "additive-plus-inf", every_test=True),
    Case("sdpa_masks", "causal-or-allowed", every_test=True),
    Case("mha_reshape", "causal-diagonal-blocked"),  # its gradient test names nothing (a NaN row)
    # blind test, continued: K made with W_Q (one prediction per hint kept only the V swap), the
    # head's two results returned in each other's place, prefix_lm_mask's j <= prefix_len
    Case("qkv", "k-projected-with-w-q", every_test=True),
    Case("qkv", "chain-returns-weights-first", every_test=True),
    Case("masks", "prefix-off-by-one", every_test=True),
    Case("custom_backward", "forward-divides-by-dk", every_test=True),
    Case("custom_backward", "forward-softmax-over-queries", every_test=True),
    Case("mha_reshape", "key-allowed-inverted", every_test=True),  # was told "causal mask blocks the diagonal"
    Case("mha_reshape", "split-without-head-transpose", every_test=True),
    Case("sdpa_masks", "causal-flag-beside-merged-mask", every_test=True),  # torch's refusal, named wherever it is raised
    Case("sdpa_masks", "allowed-dropped-with-causal", every_test=True),
    # (out, weights) returned as it is: batch_first=False then raises on tuple.transpose, which the
    # probe called "batch_first ignored" because the batch_first=True call ran; now it must be right
    Case("sdpa_masks", "mha-pair-not-unpacked", every_test=True),
    Case("mha_reshape", "merge-heads-interleaved", every_test=True),  # the visible module tests now know one-function slips
    Case("mha_reshape", "weights-averaged-over-heads", every_test=True),  # its shape check named it only by a dropped fallback
    Case("masks", "softmax-without-max-shift-nan-rows", every_test=True),
    # autograd's refusal of an in-place change now names it too; a mask wider than the scores
    # cannot grow an in-place result either (torch's "doesn't match the broadcast shape")
    Case("masks", "apply-mask-in-place", frozenset({"general/in-place-broadcast"})),
    Case("masks", "apply-mask-keeps-scores-shape", every_test=True, confined=True),  # blind tester N
    Case("row_softmax", "vocab-softmax-over-first-axis", every_test=True),
    # blind test C: s = √d_k in forward; K̄ = s S̄ᵀ K (a shape error unless L = S: named on the square
    # probe, whose table a `hint#variant` key did not reach)
    Case("custom_backward", "forward-multiplies-by-sqrt-dk", every_test=True),
    Case("custom_backward", "dk-times-k", every_test=True),
    Case("sdpa_masks", "additive-ignores-dtype", every_test=True),
    Case("mha_reshape", "fraction-floor-division", every_test=True),  # was "keep the input's dtype": its input is a bool mask
]


def _runs(cases: list[Case]) -> list[list[Case]]:
    """At most one case of each skill per run."""
    runs: list[list[Case]] = []
    for case in cases:
        run = next((r for r in runs if all(c.skill != case.skill for c in r)), None)
        if run is None:
            runs.append([case])
        else:
            run.append(case)
    return runs


RUNS = _runs(CASES)


def test_every_case_is_a_variant_of_the_mistake_tables():
    known = {(s, m["id"]) for s in SKILLS for m in variants.mistakes(s)}
    assert not [c.id for c in CASES for v in (c.variant, c.with_) if v and (c.skill, v) not in known]


def _source(case: Case, table: dict) -> tuple[dict, str, list[str]]:
    """The variant, its module's source (two variants of one file applied together) and the
    hints it must show."""
    m = table[case.variant]
    source = variants.mutated_source(m)
    if case.with_ is None:
        return m, source, [m["hint"]]
    other = table[case.with_]
    assert (other["base"], other["file"]) == (m["base"], m["file"]), case.id
    assert source.count(other["find"]) == 1, case.id
    return m, source.replace(other["find"], other["replace"]), [m["hint"], other["hint"]]


@pytest.mark.parametrize("run", RUNS, ids=[" + ".join(c.id for c in r) for r in RUNS])
def test_a_mistake_shows_its_own_hint_and_no_other(run, tmp_path):
    table = {c.skill: {m["id"]: m for m in variants.mistakes(c.skill)} for c in run}
    built = [_source(c, table[c.skill]) for c in run]
    folder = variants.build(tmp_path / "submission", [])
    for m, source, _ in built:
        (folder / m["file"]).write_text(source, encoding="utf-8")
    only = [arg for c in run for arg in ("--skill", c.skill)]
    graded = grade(folder, "--reveal-hidden", *only, output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr
    problems = []
    for case, (m, source, own) in zip(run, built):
        failed = [t for t in graded.tests(case.skill) if t["status"] != "passed"]
        shown = {h["id"] for t in failed for h in t["hints"]}
        if not failed:
            problems.append(f"{case.id}: lost no points")
        problems += [f"{case.id}: its hint {h} is not shown (shown: {sorted(shown)})" for h in own if h not in shown]
        allowed = set(own) | case.also
        wrong = {t["name"]: sorted(h["id"] for h in t["hints"] if h["id"] not in allowed) for t in failed}
        wrong = {name: ids for name, ids in wrong.items() if ids}
        if wrong:
            problems.append(f"{case.id}: hints of other mistakes shown: {wrong}")
        if case.every_test:
            bare = [t["name"] for t in failed if not t["hints"]]
            if bare:
                problems.append(f"{case.id}: failed tests without a hint: {bare}")
        if case.confined:
            names = variants.functions(MODULES[case.skill])
            mine = variants.dependents(source, m["function"])
            elsewhere = [
                t["name"]
                for t in failed
                if variants.named_functions(t["name"], names, case.skill)
                and not set(variants.named_functions(t["name"], names, case.skill)) & mine
            ]
            if elsewhere:
                problems.append(f"{case.id} (a mistake in {m['function']}) failed tests of other functions: {elsewhere}")
    assert not problems, "\n".join(problems)


def test_a_zero_fill_zeroed_after_the_softmax_costs_the_same_on_every_seed(tmp_path):
    """masks/zero-fill-then-zeroed-after-softmax wrongs only rows that block some keys and allow
    others: the masked_softmax gradient test's random-mask parts hold such a row on every seed
    (fixed row kinds), so the variant loses the same points, test by test, on seeds 1, 2, 3
    (on seed 3 it used to lose 1.75 where seeds 1 and 2 lost 1.3125), in masks only."""
    m = {v["id"]: v for v in variants.mistakes("masks")}["zero-fill-then-zeroed-after-softmax"]
    folder = variants.build(tmp_path / "submission", [m])
    losses = []
    for seed in (1, 2, 3):
        graded = grade(folder, "--reveal-hidden", "--skill", "masks", seed=seed, output=tmp_path / f"r{seed}.json")
        assert graded.rc == 0, graded.stderr
        losses.append(
            {t["name"]: round(t["max_score"] - t["score"], 4) for t in graded.tests("masks") if t["score"] < t["max_score"]}
        )
    assert losses[0], "the variant lost no points"
    assert losses[0] == losses[1] == losses[2], losses


def test_torchs_refusal_to_mix_dtypes_names_the_dtype_hint_and_nothing_else_does():
    """Blind tester F: a float32 matrix built inside qkv met a float64 input, and the hidden
    tests said only "expected scalar type Float but found Double"."""
    import torch

    from autograder.testing.error_hints import hints_for as _hints_for

    a, b = torch.randn(2, 3), torch.randn(3, 2, dtype=torch.float64)
    refusals = []
    for call in (lambda: a @ b, lambda: torch.bmm(a[None], b[None]), lambda: torch.nn.Linear(3, 2)(b.T)):
        with pytest.raises(RuntimeError) as raised:
            call()
        refusals.append(str(raised.value))
    for message in refusals:
        assert _hints_for({"type": "RuntimeError", "message": message}) == ["general/dtype-changed"], message
    for message in ("shape '[2, 3]' is invalid for input of size 5", "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"):
        assert _hints_for({"type": "RuntimeError", "message": message}) == [], message
