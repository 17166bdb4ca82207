"""Correct code is never refused (issue 28 B): a corpus of legitimate implementations of
each rule-bound function, in styles the reference does not use.

tests/submissions/corpus/<skill>/<style>/ holds the skill's module (and any helper module of
the student's own it imports); graded, it overlays the reference solutions. Each entry must
pass the skill's static rule and run-time rule (checked here in-process, every entry, fast)
and score full marks with hidden tests revealed (a grading run of its own, ~3 s each: one
entry per skill in the fast set, the whole corpus marked slow)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from conftest import ROOT, SOLUTIONS, SUBMISSIONS, grade, graded_class, make_submission, student

from autograder.sandbox.probes import DispatchRecorder, PlainFunctionCtx
from autograder.testing import dispatch
from autograder.testing.source import check_no_banned

CORPUS = SUBMISSIONS / "corpus"
SKILLS = ("row_softmax", "custom_backward", "mha_reshape")
ENTRIES = [(skill, p.name) for skill in SKILLS for p in sorted((CORPUS / skill).iterdir()) if p.is_dir()]
#: graded by `make test`: the issue's own refusals (a helper module's softmax, F.softmax to
#: recompute A in backward, an own helper named after SDPA), debugging prints of tensors and
#: helpers reached through a dict and a default argument (blind tester R-AV);
#: the rest by `make test-slow`
FAST = {
    ("row_softmax", "helper_module"),
    ("custom_backward", "recompute_with_f_softmax"),
    ("custom_backward", "prints_debugging"),
    ("custom_backward", "helpers_through_a_dict"),
    ("mha_reshape", "helper_module"),
}

sys.path.insert(0, str(ROOT / "tests/suites"))
from course import custom_backward_data, mha_reshape_data, row_softmax_data


def _mha_banned() -> tuple[str, ...]:
    spec = importlib.util.spec_from_file_location(
        "_corpus_mha_hidden", ROOT / "tests/suites/mha_reshape/test_mha_reshape_hidden.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BANNED


def _files(skill: str, style: str) -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted((CORPUS / skill / style).glob("*.py"))}


def _load(folder: Path, module: str):
    spec = importlib.util.spec_from_file_location(f"_corpus_{folder.parent.name}_{folder.name}_{module}", folder / f"{module}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    helpers = {p.stem for p in folder.glob("*.py")} - {module}
    sys.modules[spec.name] = mod  # as an import does: dataclasses look their module up there
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(folder))
        for name in helpers:  # the next entry's helper of the same name is another file
            sys.modules.pop(name, None)
    return mod


def _record(fn, phase, own):
    entries: dict = {}
    tampered: set[str] = set()
    with torch.no_grad(), DispatchRecorder(entries, tampered, own, phase):
        fn()
    assert not tampered, tampered
    return dispatch.parse([f"{ph}\t{op}\t{e[0]}\t{e[1]}\t{e[2]}\t{e[3]}" for (ph, op), e in entries.items()])


def test_every_gated_skill_has_ten_styles_or_more():
    for skill in SKILLS:
        styles = [style for s, style in ENTRIES if s == skill]
        assert len(styles) >= 10, (skill, styles)
        for style in styles:
            assert (CORPUS / skill / style / f"{skill}.py").is_file(), (skill, style)


@pytest.mark.parametrize(("skill", "style"), ENTRIES, ids=[f"{s}/{t}" for s, t in ENTRIES])
def test_every_corpus_entry_passes_its_static_rule(skill, style):
    files = _files(skill, style)
    others = {k: v for k, v in files.items() if k != skill}
    if skill == "row_softmax":
        banned = row_softmax_data.BANNED_NAMES
        check_no_banned(files[skill], "row_softmax.py", banned, what="rule", imports=others, deferred=banned)
    elif skill == "custom_backward":
        check_no_banned(
            files[skill],
            "custom_backward.py",
            custom_backward_data.BANNED_IN_BACKWARD,
            scope=custom_backward_data.BACKWARD_SCOPE,
            what="rule",
            imports=others,
        )
    else:
        check_no_banned(files[skill], "mha_reshape.py", _mha_banned(), what="rule", imports=others, deferred=_mha_banned())


@pytest.mark.parametrize(("skill", "style"), ENTRIES, ids=[f"{s}/{t}" for s, t in ENTRIES])
def test_every_corpus_entry_keeps_its_run_time_rule(skill, style):
    folder = CORPUS / skill / style
    own = str(folder) + "/"
    module = _load(folder, skill)
    g = torch.Generator().manual_seed(0)
    if skill == "custom_backward":
        for dtype in (torch.float64, torch.float32):
            for lead, L, S, dk, dv in (((2,), 5, 5, 3, 3), ((2, 3), 4, 6, 2, 5)):
                q, k, v = (torch.randn(*lead, n, d, generator=g, dtype=dtype) for n, d in ((L, dk), (S, dk), (S, dv)))
                allowed = torch.tril(torch.ones(L, S, dtype=torch.bool)) | (torch.arange(S) == 0)
                fn, fctx = module.AttentionFunction, PlainFunctionCtx()
                split = getattr(fn, "setup_context", None) is not torch.autograd.Function.setup_context

                def forward():
                    if split:
                        fn.setup_context(fctx, (q, k, v, allowed), fn.forward(q, k, v, allowed))
                    else:
                        fn.forward(fctx, q, k, v, allowed)

                recorded = _record(forward, "forward", own)
                d_out = torch.randn(*lead, L, dv, generator=g, dtype=dtype)
                dispatch.merge(recorded, _record(lambda: fn.backward(fctx, d_out), "backward", own))
                # as the suites judge it: a helper Function of the file's own is applied under its class's name
                source = (folder / "custom_backward.py").read_text(encoding="utf-8")
                allows = custom_backward_data._or_own_functions(
                    dispatch.backward_allows, custom_backward_data._function_classes(source)
                )
                assert not dispatch.violations(recorded, None, allows), dispatch.violations(recorded, None, allows)
    elif skill == "row_softmax":
        s = torch.randn(2, 3, 5, generator=g)
        rule = row_softmax_data.ALLOWS_AT_DISPATCH
        for call in (
            lambda: module.softmax_rows(s),
            lambda: module.log_softmax_rows(s, dim=1),
            lambda: module.cross_entropy(s[0], torch.tensor([0, 4, 2])),
            lambda: module.vocab_probs(s, torch.randn(5, 7, generator=g)),
        ):
            recorded = _record(call, "call", own)
            assert not dispatch.violations(recorded, None, rule), dispatch.violations(recorded, None, rule)
    else:
        mha = module.MultiHeadAttention(8, 2, 6)
        x = torch.randn(2, 5, 8, generator=g)
        key_allowed = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
        rule = dispatch.denies_parts(mha_reshape_data.DENIED_PARTS)
        recorded = _record(lambda: mha(x, key_allowed=key_allowed, return_weights=True), "call", own)
        assert not dispatch.violations(recorded, None, rule), dispatch.violations(recorded, None, rule)


def _submission_files(skill: str, style: str) -> dict[str, str]:
    return {f"{name}.py": text for name, text in _files(skill, style).items()}


@pytest.fixture(scope="session")
def slow_corpus_graded(tmp_path_factory):
    """skill → the skill's slow entries graded as one class, once per test run (`autograder
    batch --skill`, one student per entry, each overlaying the reference): one batch run a
    skill instead of a grading run an entry, each of which imported torch again."""

    done: dict = {}

    def graded(skill: str):
        def build(folder):
            for s, style in ENTRIES:
                if s == skill and (s, style) not in FAST:
                    make_submission(folder / style, _submission_files(skill, style), base=SOLUTIONS)

        if skill not in done:
            done[skill] = graded_class(tmp_path_factory, f"corpus-{skill}", build, "--skill", skill)
        return done[skill]

    return graded


@pytest.mark.parametrize(
    ("skill", "style"),
    [entry if entry in FAST else pytest.param(*entry, marks=pytest.mark.slow) for entry in ENTRIES],
    ids=[f"{s}/{t}" for s, t in ENTRIES],
)
def test_every_corpus_entry_scores_full_marks(skill, style, tmp_path, request):
    if (skill, style) in FAST:
        folder = make_submission(tmp_path / "sub", _submission_files(skill, style), base=SOLUTIONS)
        graded = grade(folder, "--skill", skill, "--reveal-hidden", output=tmp_path / "r.json")
        assert graded.rc == 0, graded.stderr[-2000:]
    else:
        graded = student(request.getfixturevalue("slow_corpus_graded")(skill), style)
        assert graded.data is not None and graded.data["status"] == "complete", (graded.output, graded.stderr[-2000:])
    result = graded.skill(skill)
    lost = [(t["name"], t["summary"][:200]) for t in result["tests"] if t["status"] != "passed"]
    assert result["score"] == result["points"], lost


#: sdpa_masks' causal branch through torch's own bottom-right mask (torch.nn.attention.bias), which
#: loads torch._dynamo and with it ctypes: a worker cannot import it, so the fork server makes it
#: where a submission imports it (sandbox/libraries.py, WARMED_TORCH_MODULES)
CAUSAL_LOWER_RIGHT = (
    """    if causal and allowed is None:
        from torch.nn.attention.bias import causal_lower_right

        return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(L, S), dropout_p=p)
""",
    "    mask = allowed\n",
)


def test_torchs_own_bottom_right_causal_mask_scores_full_marks_in_sdpa_masks(tmp_path):
    """A correct `sdpa` written with `causal_lower_right` (blind tester R-BY: it scored 0 at
    module level, "No module named 'ctypes'", and 6.68 of 10 imported inside the function)."""
    text = (SOLUTIONS / "sdpa_masks.py").read_text(encoding="utf-8")
    new_branch, anchor = CAUSAL_LOWER_RIGHT
    assert text.count(anchor) == 1, "the reference's sdpa changed: move the branch"
    folder = make_submission(tmp_path / "sub", {"sdpa_masks.py": text.replace(anchor, new_branch + anchor)})
    graded = grade(folder, "--skill", "sdpa_masks", "--reveal-hidden", output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr[-2000:]
    lost = [(t["name"], t["summary"][:200]) for t in graded.tests("sdpa_masks") if t["status"] != "passed"]
    assert graded.score("sdpa_masks") == graded.skill("sdpa_masks")["points"], lost


def test_the_fork_server_reads_which_modules_a_submission_imports_without_running_it():
    from autograder.sandbox.libraries import WARMED_TORCH_MODULES, imported_modules

    sources = [
        b"import torch.nn.attention.bias as b\nfrom torch.nn.attention import varlen, sdpa_kernel\n",
        b"def f():\n    from torch.nn import functional as F\n    from . import sibling\n",
        b"this is not python (",
    ]
    found = imported_modules(sources)
    assert {"torch.nn.attention.bias", "torch.nn.attention", "torch.nn.attention.varlen", "torch.nn.functional"} <= found
    assert not any(name.endswith("sibling") for name in found)  # relative: another exercise file, never torch's
    assert WARMED_TORCH_MODULES <= found
