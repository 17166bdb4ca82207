"""Course numbers for skill mha_reshape (ids from expected-numbers.md).

The lessons print no multi-head outputs, so the worked module example is built from
numbers they do print: two heads of width 2 on Week 7's prompts, head 1 = the Week 7 head
(§4, §12), head 2 = the §1 uniform causal mean (its W_Q is 0, so every allowed key scores
the same), and W_O swapping the two head blocks (§15: Concat(O⁽¹⁾, O⁽²⁾) W_O).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from autograder.testing import Snapshots, SubmissionError, check_no_banned, dispatch, expect

from . import week07 as w7
from .tolerances import Tol, tol

#: the rule at the level of the dispatcher (autograder/testing/dispatch.py): library attention
#: (SDPA and its kernels, nn.MultiheadAttention's fused path), whatever spelling reached it
DENIED_PARTS = ("scaled_dot_product", "multi_head_attention", "attention", "_transformer_encoder_layer")
#: the kernels the worker replaces during a rule-checked call (dispatch.kernel_patterns)
REPLACED = dispatch.kernel_patterns(DENIED_PARTS)

SKILL_DIR = Path(__file__).resolve().parent.parent / "mha_reshape"  # its snapshot holds unsliced_probe

# expected-numbers.md tolerances
FRACTION_TABLE = Tol(rtol=0.0, atol=5e-4)  # D1-27: "abs 0.05 (%)", as a fraction
# GiB (D1-29) and ratios of cost functions: the measured float32 row of the tolerance table —
# the docstrings promise no exact value, and a float32 computation is correct (issue 9 §4);
# relative only, as values span 1e-5..1e7 GiB
GIB_TABLE = Tol(rtol=tol("mha_reshape.attention_matrix_gib", torch.float32).rtol, atol=0.0)
H1_EQUALS_SINGLE_HEAD = Tol(rtol=0.0, atol=1e-12)  # D1-41 in float64

SCORE_ELEMENTS = {(2, 2, 2): 16, (2, 2, 1000): 4_000_000}  # W7-49, W7-50: (B, h, T) → B·h·T²
SCORE_RATIO = 250_000  # W7-51: T=1000 vs T=2
DOUBLING_FACTOR = 4  # W7-52
PARAM_COUNT = {64: 16_640, 512: 1_050_624}  # D1-24: 4d² + 4d
MHA_FLOPS = {(16, 32): 163_840}  # D1-25: (T, d) → 8Td² + 4T²d
FLOP_SHARE = {  # D1-27a–f: (d, T) → attention (T²) share, as printed in %
    (768, 512): 25.0,
    (768, 1536): 50.0,
    (768, 8192): 84.2,
    (4096, 2048): 20.0,
    (4096, 8192): 50.0,
    (4096, 32768): 80.0,
}
# D1-29a–f: (B, h, T, layers) → GiB of A in bf16 (2 bytes); per layer and all layers.
MEMORY_GIB = {
    (8, 12, 1024, 1): 0.1875,
    (8, 12, 1024, 12): 2.25,
    (8, 12, 4096, 1): 3.0,
    (8, 12, 4096, 12): 36.0,
    (1, 32, 32768, 1): 64.0,
    (1, 32, 32768, 32): 2048.0,
}
MEMORY_T_TIMES_4 = 16  # D1-30
HEAD_WIDTH = {(4, 2): 2, (768, 12): 64, (4096, 32): 128}  # W7-34, D1-38: (C, h) → d = C/h

# W7-29 (B=1, T=3, C=4, H=2) and L2-04 (B=2, T=5, d_model=8, h=2)
SHAPES_W7_29 = {"input": [1, 3, 4], "heads": [1, 2, 3, 2], "scores": [1, 2, 3, 3], "merged": [1, 3, 4]}
SHAPES_L2_04 = {"input": [2, 5, 8], "heads": [2, 2, 5, 4], "scores": [2, 2, 5, 5], "merged": [2, 5, 8]}


def two_head_state(dtype: torch.dtype = torch.float32, swap_output: bool = True) -> dict[str, torch.Tensor]:
    """nn.Linear weights ([out, in] = formula matrix transposed) of MHA(4, 2) on Week 7's example."""
    ex = w7.example(dtype)
    zeros = torch.zeros(4, 2, dtype=dtype)
    pick_0_2 = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]], dtype=dtype)  # head 2 carries features 0 and 2
    w_q = torch.cat([ex.w_q, zeros], dim=1)  # [C, C] = [W_Q⁽¹⁾ | W_Q⁽²⁾], W_Q⁽²⁾ = 0
    w_k = torch.cat([ex.w_k, ex.w_k], dim=1)
    w_v = torch.cat([ex.w_v, pick_0_2], dim=1)
    eye = torch.eye(2, dtype=dtype)
    w_o = torch.zeros(4, 4, dtype=dtype)
    if swap_output:  # out = [head 2 | head 1]
        w_o[0:2, 2:4] = eye
        w_o[2:4, 0:2] = eye
    else:
        w_o = torch.eye(4, dtype=dtype)
    return {
        name: m.T.contiguous() for name, m in (("w_q.weight", w_q), ("w_k.weight", w_k), ("w_v.weight", w_v), ("w_o.weight", w_o))
    }


def two_head_expected(dtype: torch.dtype = torch.float32, padded: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(out [2,2,4] with W_O swapping the heads, weights [2,2,2,2]) from printed numbers.

    Head 1 = Week 7 (W7-24/25 weights, W7-26b final outputs; position 0 reads only itself,
    so its output is v_我 = [1, 0] and v_猫 = [−1, 0], W7-08/11). Head 2 = the §1 uniform
    mean of features 0 and 2 (W7-02/03). With `padded`, prompt B's second key (喜欢) is
    padding: both of B's queries read only 猫.
    """
    weights = torch.empty(2, 2, 2, 2, dtype=dtype)
    weights[:, 0] = torch.tensor(w7.STATED["weights"], dtype=dtype)
    weights[0, 0, 1] = torch.tensor(w7.STATED["final_weights_4dp"][0], dtype=dtype)  # W7-26a, 4 dp
    weights[1, 0, 1] = torch.tensor(w7.STATED["final_weights_4dp"][1], dtype=dtype)
    weights[:, 1] = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=dtype)
    head1 = torch.tensor(
        [[[1.0, 0.0], w7.STATED["final_outputs_4dp"][0]], [[-1.0, 0.0], w7.STATED["final_outputs_4dp"][1]]], dtype=dtype
    )
    head2 = torch.tensor([[[1.0, 0.0], [0.5, 0.0]], [[0.0, 1.0], [0.0, 0.5]]], dtype=dtype)
    if padded:
        weights[1] = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=dtype)
        head1[1] = torch.tensor([[-1.0, 0.0], [-1.0, 0.0]], dtype=dtype)
        head2[1] = torch.tensor([[0.0, 1.0], [0.0, 1.0]], dtype=dtype)
    return torch.cat([head2, head1], dim=-1), weights


# --------------------------------------------------------------------------- errors with a known cause
@contextmanager
def view_hint(sub=None) -> Iterator[None]:
    """Name the lesson's error when the submission raised it: view() on a transposed tensor
    ("view size is not compatible with input tensor's size and stride", Day 1 §A.5). With
    ``sub``, a size mismatch is also checked for its known cause, by behaviour: the module
    works when context_length == T and fails when context_length > T — the mask buffer was
    used without slicing it to [:T, :T] (Week 7 §13)."""
    try:
        yield
    except SubmissionError as exc:
        message = str((exc.error or {}).get("message", "")) + " " + str(exc.message)
        if "view size is not compatible" in message and "mha_reshape/view-needs-contiguous" not in exc.hints:
            exc.hints.append("mha_reshape/view-needs-contiguous")
        elif sub is not None and "size" in message and unsliced_mask(sub) and "mha_reshape/unsliced-mask" not in exc.hints:
            exc.hints.append("mha_reshape/unsliced-mask")
        elif sub is not None and "size" in message and split_missing_transpose(sub):
            exc.hints.append("mha_reshape/split-missing-transpose")
        elif (
            sub is not None
            and ("size" in message or "shapes cannot be multiplied" in message)
            and key_mask_three_axes(sub)
            and "mha_reshape/key-mask-three-axes" not in exc.hints
        ):
            exc.hints.append("mha_reshape/key-mask-three-axes")
        elif (
            sub is not None
            and (exc.error or {}).get("type") == "ValueError"
            and context_off_by_one(sub)
            and "mha_reshape/context-check-off-by-one" not in exc.hints
        ):
            exc.hints.append("mha_reshape/context-check-off-by-one")
        raise


def _on_probe(sub, context_length: int):
    """MultiHeadAttention(4, 1, context_length) on the fixed probe x [1,3,4] (snapshot
    ``unsliced_probe``): (output or the SubmissionError it raised, the reference's output)."""
    c = Snapshots(SKILL_DIR)["unsliced_probe"]  # fixed x, weights and the reference's output
    try:
        r = sub.mha_reshape.construct(
            "MultiHeadAttention",
            [4, 1, context_length],
            dtype=torch.float64,
            state=c["state"],
            calls=[("forward", [c["x"]], {})],
            describe=False,
        )
    except SubmissionError as exc:
        return exc, c["want"]
    return r["outputs"][0], c["want"]


def _right(got, want) -> bool:
    return not isinstance(got, SubmissionError) and expect.distance(got, want, expect.Tol(1e-9, 1e-12)) <= 1


def context_off_by_one(sub) -> bool:
    """True when MultiHeadAttention(4, 1, context_length=3) raises ValueError on T = 3 tokens,
    which fit, while context_length=4 gives the right output on the same input: the check
    was written T >= context_length (fixed data: this only names a mistake, it earns nothing).
    The match is recorded for the hint rule."""
    tight, _ = _on_probe(sub, 3)
    if (
        not isinstance(tight, SubmissionError)
        or (tight.error or {}).get("type") != "ValueError"
        or not _right(*_on_probe(sub, 4))
    ):
        return False
    expect.observed("mha_reshape/context-check-off-by-one")
    return True


def unsliced_mask(sub) -> bool:
    """True when MultiHeadAttention(4, 1, context_length=T) is right on T = 3 tokens but
    MultiHeadAttention(4, 1, context_length=6) raises on the same input (fixed data: this
    only names a mistake, it earns nothing). The match is recorded for the hint rule."""
    fits, want = _on_probe(sub, 3)
    if not _right(fits, want) or not isinstance(_on_probe(sub, 6)[0], SubmissionError):
        return False
    expect.diagnose(fits, {"mha_reshape/unsliced-mask": fits}, expect.Tol(1e-9, 1e-12))  # records the match
    return True


def key_mask_three_axes(sub) -> bool:
    """True when MultiHeadAttention(4, 2, 3) on the fixed probe x [2,3,4] with a key_allowed —
    B = h, where a key mask lined up with the heads ([B,1,T], ``key_allowed[:, None, :]``)
    still broadcasts — gives that mistake's output; on other shapes the same code raises a
    size error or makes [B,B,T,T] scores (blind tester R-S; fixed data: this only names a
    mistake, it earns nothing). The match is recorded for the hint rule."""
    c = Snapshots(SKILL_DIR)["key_mask_probe"]
    try:
        r = sub.mha_reshape.construct(
            "MultiHeadAttention",
            [4, 2, 3],
            dtype=torch.float64,
            state=c["state"],
            calls=[("forward", [c["x"]], {"key_allowed": c["key_allowed"]})],
            describe=False,
        )
    except SubmissionError:
        return False
    got = r["outputs"][0]
    if type(got) is not torch.Tensor:
        return False
    return bool(expect.diagnose(got, c["mistakes"], expect.Tol(1e-9, 1e-12), want=c["want"]))


def split_missing_transpose(sub) -> bool:
    """True when split_heads(x [1,3,4], 2) returns x.view(1, 3, 2, 2): [B,T,h,d], the head
    axis never moved in front of the tokens, so the module's shapes fail further on (fixed
    data: this only names a mistake, it earns nothing). The match is recorded for the hint rule."""
    x = torch.arange(12, dtype=torch.float64).reshape(1, 3, 4)
    try:
        got = sub.mha_reshape.split_heads(x, 2)
    except SubmissionError:
        return False
    right = x.reshape(1, 3, 2, 2).transpose(1, 2)
    wrong = {"mha_reshape/split-missing-transpose": x.reshape(1, 3, 2, 2)}
    return bool(expect.diagnose(got, wrong, expect.Tol(1e-9, 1e-12), want=right))


# --------------------------------------------------------------------------- module layout
_LINEARS = ("w_q", "w_k", "w_v", "w_o")


def layout_hints(extra: list[str], missing: list[str] = ()) -> list[str]:
    """Hints for state_dict / parameter names that differ from the four nn.Linear layers':
    a name outside w_q/w_k/w_v/w_o is a mask kept in the state; biases alone that differ are
    the ``bias`` argument ignored (blind tester R-B: always ``bias=False``); the rest is the layout."""
    differ = [*extra, *missing]
    if differ and all(name.split(".")[0] in _LINEARS and name.endswith(".bias") for name in differ):
        return expect.observed("mha_reshape/bias-ignored")  # seen in what the module holds
    hints = []
    if any(name.split(".")[0] not in _LINEARS for name in extra):
        hints.append("mha_reshape/persistent-mask-buffer")
    if list(missing) or any(name.split(".")[0] in _LINEARS for name in extra):
        hints.append("mha_reshape/linear-layout")
    return hints or ["mha_reshape/linear-layout"]


def linear_hints(described: dict | None, want: tuple[int, int, bool]) -> list[str]:
    """The hint for one projection described as ``{"in_features", "out_features", "bias"}``
    (None: no such nn.Linear) against ``want`` = (in, out, bias): only its bias differs is the
    ``bias`` argument ignored; anything else is the layout."""
    if described is None or (described["in_features"], described["out_features"], described["bias"]) == want:
        return ["mha_reshape/linear-layout"]
    if (described["in_features"], described["out_features"]) == want[:2]:
        return expect.observed("mha_reshape/bias-ignored")
    return ["mha_reshape/linear-layout"]


def round_trip_hints() -> list[str]:
    return ["mha_reshape/view-without-transpose", "mha_reshape/interleaved-heads"]


# --------------------------------------------------------------------------- counts and costs
def numbers(got, candidates: list[tuple[str, float]], right: float) -> list[str]:
    """Hint ids of the candidates ``got`` equals (and the right answer does not). As in
    ``expect.diagnose``, two different mistakes that predict this same number cannot be told
    apart here (memory without its layers = memory without its heads when h = layers): name
    neither — another input will."""
    if isinstance(got, torch.Tensor) and got.dim() == 0:
        got = got.item()
    number = expect.as_float(got)  # None for a non-number, or an int beyond floats (2**2000)
    if number is None:
        return []
    found = [
        (hint, value)
        for hint, value in candidates
        if math.isclose(number, float(value), rel_tol=1e-9, abs_tol=1e-12)
        and not math.isclose(float(value), float(right), rel_tol=1e-9, abs_tol=1e-12)
    ]
    if len({hint for hint, _ in found}) != 1:
        return []
    hint, value = found[0]
    # record the match (the hint rule shows a named hint only where its signature matched)
    expect.diagnose_number(number, {hint: value}, expect.Tol(1e-9, 1e-12), want=float(right))
    return [hint]


#: Day 1 §B: the multi-head module is written by hand, without torch's attention (the hidden
#: rule test, a gate, judges this and the operators the dispatcher ran)
RULE_BANNED = ("MultiheadAttention", "multi_head_attention_forward", "scaled_dot_product_attention")
#: the names the grader reads from the file (docs/EXERCISES.md): an import bound to one counts as read
API = (
    "split_heads",
    "merge_heads",
    "MultiHeadAttention",
    "score_elements",
    "mha_flops",
    "attention_flop_fraction",
    "attention_matrix_gib",
    "mha_param_count",
)


def check_rule_source(sub) -> None:
    """The rule's source check, first in the visible tests too: without it a file the hidden
    gate zeroes (torch's attention, a computed getattr) graded 41.5/41.5 locally (blind tester M)."""
    check_no_banned(
        sub.source("mha_reshape"),
        "mha_reshape.py",
        RULE_BANNED,
        what="mha_reshape.py: no nn.MultiheadAttention and no F.scaled_dot_product_attention (Day 1 §B)",
        hints=["mha_reshape/uses-library-attention"],
        imports=sub.importable_sources(),
        api=API,
        # refused wherever they run (REPLACED, and torch's Python functions and classes of the rule): a
        # call of the student's own method by such a name is judged by what runs
        deferred=RULE_BANNED,
    )
