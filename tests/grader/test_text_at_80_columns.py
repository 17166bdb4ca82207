"""Every failure kind of the suites, rendered as a CI log or ``NO_COLOR`` terminal shows it:
80 columns, no colour (issue 30 §4). Each kind has a golden file (tests/grader/golden/text80/;
rewrite them with ``UPDATE_GOLDEN=1`` after a deliberate change, and read the diff), and every
rendering must keep each grid cell whole, mark wrong cells with a symbol (not colour alone),
break no word across lines and fit 80 columns."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import ROOT

from autograder.config import load
from autograder.renderers import Style, render
from autograder.renderers.common import cells, wrap_words
from autograder.runner import scoring
from autograder.runner.manifest import RunManifest

GOLDEN = Path(__file__).with_name("golden") / "text80"
WIDTH = 80
HINT = {
    "id": "masks/zero-fill",
    "text": "Blocked scores were set to 0 instead of −∞: 0 is a legal score, so blocked keys still get weight "
    "(softmax([0.2, 0]) = [0.550, 0.450]). Fill with −∞ before the softmax.",
    "section": "Week 7 §11 (为什么 Mask 在 Softmax 前使用 −∞) — docs/lessons/week07-attention.txt:314",
}


def _grid(n: int, wrong: set[tuple[int, int]], value: str = "0.091") -> dict:
    exp = [[value if j <= i else "0" for j in range(n)] for i in range(n)]
    got = [[("0.100" if (i, j) in wrong else exp[i][j]) for j in range(n)] for i in range(n)]
    bad = [[(i, j) in wrong for j in range(n)] for i in range(n)]
    title = f"single_head_attention weights (T={n})"
    return {"title": title, "rows": "query", "cols": "key", "expected": exp, "got": got, "bad": bad}


KINDS = {
    "values-small-grid": {
        "check": "masked_softmax(Week 7 scores, causal) (Week 7 §11)",
        "problem": "values",
        "detail": "first mismatch at index [0, 1]: expected 0, got 0.450166; 2 of 4 values differ (largest difference "
        "0.450166, tolerance rtol=1e-05, atol=1e-06)\nexpected [[1, 0], [0.5, 0.5]]\n     got [[0.549834, 0.450166], [0.5, 0.5]]",
        "hints": [HINT],
        "grids": [_grid(2, {(0, 1)}, "0.500")],
    },
    "values-wide-grid": {
        "check": "single_head_attention weights (B=2, T=11, C=8, causal=True, float32)",
        "problem": "values",
        "detail": "first mismatch at index [0, 0, 1]: expected 0, got 0.1; 55 of 242 values differ (largest difference "
        "0.1, tolerance rtol=1e-05, atol=1e-06)",
        "hints": [HINT],
        "grids": [_grid(11, {(i, j) for i in range(11) for j in range(11) if j > i})],
    },
    "shape": {
        "check": "merge_heads(y [2,2,5,4]) → [2,5,8] (Week 7 §15: concatenate on the feature axis)",
        "problem": "shape",
        "detail": "expected shape [2, 5, 8], got [2, 2, 20]",
        "hints": [],
        "grids": [],
    },
    "raised": {
        "check": "qkv.project_qkv(…)",
        "problem": "raised",
        "detail": "qkv.project_qkv(…): raised RuntimeError: mat1 and mat2 shapes cannot be multiplied (6x4 and 3x2)",
        "hints": [],
        "grids": [],
        "frames": [{"file": "qkv.py", "line": 12, "function": "project_qkv", "code": "q = x @ w_q.T"}],
        "error": {"type": "RuntimeError", "message": "mat1 and mat2 shapes cannot be multiplied (6x4 and 3x2)", "frames": []},
    },
    "minus-infinity": {
        "check": "to_additive_mask(tril(4)) (Day 1 §A.3)",
        "problem": "values",
        "detail": "expected −∞ at index [0, 1], got -1e+09: a large finite number is not −∞ (6 of the 6 entries that "
        "must be infinite are finite). exp(−1e9 − max) is 0 only while the row has a real score: in a row whose keys "
        "are all blocked, or whose scores are as low, softmax still gives the blocked keys weight",
        "hints": [
            {
                "id": "sdpa_masks/additive-finite",
                "text": "Blocked entries of the additive mask were a finite number (−1e9, finfo.min): the contract asks "
                "for −∞, so that exp(−∞) = 0 exactly.",
                "section": "Day 1 §A.3 (掩码约定对照表) — docs/lessons/week1-day1-self-attention.txt:483",
            }
        ],
        "grids": [],
    },
    "property-parts": {
        "check": "mean loss through your AttentionFunction (float64, W7-43)",
        "problem": "property",
        "detail": "2 of 7 parts failed (W7-43/45/46/47 float64, D1-10 finite differences); first, W7-43/45/46/47 "
        "float64: expected 1.316836, got 1.302412 (tolerance rtol=0, atol=1e-06)\n5 of 7 input cases passed",
        "hints": [],
        "grids": [],
    },
    "constraint": {
        "check": "row_softmax calls no torch softmax, log_softmax or cross_entropy at run time (docs/EXERCISES.md §3)",
        "problem": "constraint",
        "detail": "these torch functions ran inside your calls: softmax (in softmax_rows, vocab_probs); "
        "log_softmax (in cross_entropy, log_softmax_rows)",
        "hints": [],
        "grids": [],
    },
}


def _results(kind: str):
    config = load(ROOT / "grading.toml").select(["qkv"])
    feedback = {"frames": [], "error": None, **KINDS[kind]}
    tests = config.tests
    report = {
        "tests": [
            {
                "nodeid": t.node_id,
                "outcome": "failed" if i == 0 else "passed",
                "metadata": {"result": {"kind": "check", "feedback": feedback}} if i == 0 else {"result": {"kind": "passed"}},
            }
            for i, t in enumerate(tests)
        ]
    }
    return scoring.build(RunManifest.plan(config), report, {"path": "submission", "modules": {}}), config


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_failure_kind_is_readable_at_80_columns_without_colour(kind):
    results, config = _results(kind)
    out = render(results, "text", config, style=Style(width=WIDTH))
    assert "\x1b" not in out
    lines = out.splitlines()
    wide = [line for line in lines if cells(line.rstrip()) > WIDTH]
    assert not wide, f"lines wider than {WIDTH} columns: {wide[:3]}"
    # no grid cell cut to "1…", "0.1…", and wrong cells carry a symbol, not colour alone
    assert not re.search(r"[0-9.]…", out), [line for line in lines if re.search(r"[0-9.]…", line)][:3]
    assert "red = wrong" not in out
    if KINDS[kind].get("grids"):
        assert "* = wrong" in out
        rest = out.split("* = wrong", 1)[1]
        assert "*" in rest or "the wrong cells:" in rest, "the wrong cells are neither marked nor listed"
    # no word broken across lines ("exp │ ected", "def │ ault"): every word of the detail and the hints
    # stands whole on one line
    flat = [re.sub(r"[│╭╮╰╯─]", " ", line) for line in lines]
    words = {w for text in [KINDS[kind]["detail"]] + [h["text"] for h in KINDS[kind]["hints"]] for w in text.split()}
    broken = sorted(w for w in words if len(w) >= 3 and not any(w in line for line in flat))
    assert not broken, f"words broken across lines: {broken[:8]}"
    golden = GOLDEN / f"{kind}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(out, encoding="utf-8")
    assert golden.is_file(), f"no golden file {golden}: run with UPDATE_GOLDEN=1 and read it"
    assert out == golden.read_text(encoding="utf-8"), f"{kind}: the 80-column rendering changed; compare with {golden}"


@pytest.mark.parametrize(
    ("text", "room", "wrapped"),
    [
        ("ab " + "x" * 25 + " cd", 10, "ab\nxxxxxxxxxx\nxxxxxxxxxx\nxxxxx cd"),
        ("   " + "y" * 12, 8, "   yyyyy\n   yyyyy\n   yy"),
        ("中文" * 7 + " z", 9, "中文中文\n中文中文\n中文中文\n中文 z"),
        ("中" * 3, 1, "中\n中\n中"),  # a character wider than the line: a line of its own, no endless loop
    ],
)
def test_a_word_wider_than_the_line_is_cut_at_the_line_and_only_there(text, room, wrapped):
    assert wrap_words(text, room) == wrapped


def test_cutting_a_huge_word_measures_each_character_a_bounded_number_of_times(monkeypatch):
    # a submission's 32 KiB error message without a space: measuring the whole rest of the
    # word again for each 80-column piece made the terminal report take ~16 s (no timing
    # here: the measurements are counted)
    from autograder.renderers import common

    measured = 0
    char_cells = common._char_cells

    def counting(ch: str) -> int:
        nonlocal measured
        measured += 1
        return char_cells(ch)

    monkeypatch.setattr(common, "_char_cells", counting)
    word = "x" * (1 << 15)
    assert wrap_words(word, WIDTH).split("\n") == [word[i : i + WIDTH] for i in range(0, len(word), WIDTH)]
    assert measured <= 4 * len(word)


def test_measuring_and_cutting_ascii_by_length_gives_what_measuring_each_character_gives():
    """cells() and _cut_word() take ASCII by its length (one column a character): the same
    columns and the same pieces as measuring every character, for ASCII, CJK, combining
    marks, fullwidth letters and controls mixed (seeded)."""
    import random

    from autograder.renderers.common import _char_cells, _cut_by_cells, _cut_word

    rng = random.Random(20261204)
    for i in range(3000):
        alphabet = "ab c~\x00\x1b\x7f" if i % 2 else "ab c\x00é中文\u0301ｆ\U0010ffff"
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        first, room = rng.randrange(0, 10), rng.randrange(0, 20)
        assert cells(text) == sum(map(_char_cells, text)), repr(text)
        assert _cut_word(text, first, room) == _cut_by_cells(text, first, room), (repr(text), first, room)


def test_a_revealed_hidden_test_says_what_it_checked_and_a_public_one_shows_nothing_of_it():
    """With the hidden tests revealed (an instructor's grade, or after the due date), a hidden
    test's box names what it checked, as a visible test's does; a student's public results
    carry no check of a hidden test, so nothing of it can show (core/redact.py)."""
    config = load(ROOT / "grading.toml").select(["qkv"])
    hidden = next(t for t in config.tests if t.visibility == "hidden")
    feedback = {"frames": [], "error": None, **KINDS["shape"]}
    report = {
        "tests": [
            {
                "nodeid": t.node_id,
                "outcome": "failed" if t.node_id == hidden.node_id else "passed",
                "metadata": {"result": {"kind": "check", "feedback": feedback}}
                if t.node_id == hidden.node_id
                else {"result": {"kind": "passed"}},
            }
            for t in config.tests
        ]
    }
    results = scoring.build(RunManifest.plan(config), report, {"path": "submission", "modules": {}})
    for fmt in ("text", "gradescope", "github"):  # markdown names no check, visible or hidden
        revealed = render(results, fmt, config, style=Style(width=WIDTH))
        public = render(results.public(), fmt, config, style=Style(width=WIDTH))
        assert "Checked: merge_heads(y [2,2,5,4])" in revealed.replace("\\", "").replace("*", ""), fmt
        assert "merge_heads(y [2,2,5,4])" not in public.replace("\\", ""), fmt


def test_a_long_test_name_is_cut_in_its_panels_title_and_the_points_always_show():
    """The longest names (~90 characters) do not fit an 80-column panel's top edge: rich cut
    the title's end, so the points read "1.─╮" (blind test, 2026-12-04). The name is cut."""
    import dataclasses

    results, config = _results("values-small-grid")
    test = results.skills[0].tests[0]
    long = "test_attention_function_is_applied_and_its_backward_returns_dq_dk_dv_none_via_the_helpers"
    results.skills[0].tests[0] = dataclasses.replace(test, name=long)
    out = render(results, "text", config, style=Style(width=WIDTH))
    title = next(line for line in out.splitlines() if line.startswith("╭─ ✗"))
    assert f"  {test.score:g}/{test.max_score:g} ─" in title, title
    assert "…" in title and cells(title) <= WIDTH, title


def test_a_hidden_constraint_says_forbids_on_a_gate_and_names_no_library_on_a_weighted_test():
    """Blind test D: a weighted hidden constraint — backward not reaching attention_backward — read
    "does not call the library the way the exercise asks", though no library was involved."""
    from autograder.core.redact import _hidden_summary

    failed = {"status": "failed", "problem": "constraint", "summary": "secret detail"}
    gate = _hidden_summary({**failed, "max_score": 0}, "custom_backward", [])
    weighted = _hidden_summary({**failed, "max_score": 2}, "custom_backward", [])
    assert gate == "hidden test failed: uses something this exercise forbids"
    assert "library" not in weighted and "calls the exercise asks for" in weighted
    assert "secret" not in gate + weighted


def test_text_written_to_a_file_is_80_columns_wide_by_default():
    """`grade --format text --output FILE` has no terminal to ask: it is read in a CI log or an
    editor, at 80 columns (blind tester R-BL found 110)."""
    results, config = _results(next(iter(KINDS)))
    out = render(results, "text", config)
    assert Style().width == WIDTH == 80
    wide = [line for line in out.splitlines() if cells(line.rstrip()) > WIDTH]
    assert not wide, f"lines wider than {WIDTH} columns: {wide[:3]}"
    assert max(cells(line.rstrip()) for line in out.splitlines()) > 60  # laid out for the width, not squeezed
