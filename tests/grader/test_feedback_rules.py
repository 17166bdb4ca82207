"""The two fairness rules every suite inherits (issue 9 §1–§3), tested on the API itself:

* partial credit by kind: a kind passes only when every random draw of it passes;
  credit = passed kinds / kinds; a failed required part scores 0 and says why;
* the hint rule: a mistake is named only when its predicted output matches the answer
  better than the correct output does, only the closest one, and only on a test that
  called the function the hint is about.
"""

from __future__ import annotations

import pytest
import torch

from autograder.core.feedback.hints import Hint, filter_named
from autograder.testing import expect
from autograder.testing.credit import Credit
from autograder.testing.expect import Tol
from autograder.testing.failures import CheckFailed

TOL = Tol(1e-5, 1e-8)


def _run(credit: Credit, loop, failing: set[str]) -> CheckFailed | None:
    try:
        for item in loop:
            with item:
                if item.label in failing or item.kind in failing:
                    expect.true(False, what=item.label, detail="wrong")
    except CheckFailed as exc:
        return exc
    return None


def test_a_kind_passes_only_when_every_draw_passes():
    credit = Credit()
    exc = _run(credit, credit.kinds(["float32", "float64", "causal"], draws=3), {"float64 · draw 2"})
    assert credit.fraction == pytest.approx(2 / 3)
    assert credit.summary()["passed"] == 2 and credit.summary()["total"] == 3
    assert "2 of 3 input cases passed" in exc.feedback.detail and "✗ float64" in exc.feedback.detail


def test_a_case_checked_beside_a_regular_draw_says_its_cross_may_be_the_regular_draws():
    # blind test: "✗ and T = 1" read as if T = 1 had failed, when the regular draw before it had
    credit = Credit()
    exc = _run(credit, credit.kinds(["regular", "and T = 1"]), {"and T = 1"})
    assert "✗ and T = 1" in exc.feedback.detail and "so its ✗ may be the regular draw's" in exc.feedback.detail
    credit = Credit()
    exc = _run(credit, credit.kinds(["float32", "float64"]), {"float64"})
    assert "regular draw" not in exc.feedback.detail  # no such case here: the note stays as it was


def test_cases_not_run_after_a_timeout_are_counted_apart_from_wrong_ones():
    """One call that ran out of time stops its function for the rest of the run; the cases
    after it fail unrun, and the summary says so (blind tester R-BX read "7 of 8 cases
    failed" as seven wrong answers)."""
    from autograder.testing.failures import NOT_CALLED_AGAIN, SubmissionTimeout

    credit = Credit()
    try:
        for item in credit.cases(4):
            with item:
                if item.label == "case 2":
                    raise SubmissionTimeout("f(…)", "did not finish within 0.2 CPU s", hints=["general/timeout"])
                if item.label in ("case 3", "case 4"):
                    raise SubmissionTimeout("f(…)", f"timed out {NOT_CALLED_AGAIN}", hints=["general/timeout"])
    except CheckFailed as exc:
        detail = exc.feedback.detail
    assert detail.startswith("3 of 4 cases failed (case 2, case 3, case 4); first, case 2: did not finish within 0.2 CPU s")
    assert "2 of them were not run (a function that ran out of time or broke the protocol is not called again)" in detail
    credit = Credit()
    exc = _run(credit, credit.cases(3), {"case 1", "case 2"})
    assert "not run" not in exc.feedback.detail  # wrong answers stay wrong answers


def test_a_tuple_around_the_right_tensor_is_named_and_a_tuple_around_a_wrong_one_is_not():
    want = torch.linspace(0, 1, 6).reshape(2, 3)
    for got, named in (((want.clone(), None), True), ([want + 1, None], False), ((), False), ((None, want), False)):
        try:
            expect.close(got, want, what="out", tol=TOL)
        except CheckFailed as exc:
            assert exc.feedback.problem == "type"
            assert ("general/returns-tuple" in exc.feedback.hints) == named, (got, exc.feedback.hints)
        else:
            raise AssertionError("a tuple passed as a tensor")


def test_a_shape_off_by_axes_of_size_one_names_them_not_the_checks_value_hints():
    """A ``.squeeze()`` that dropped a batch of one was told, by the check's own hint, that its
    examples read each other (blind tester R-BS); a shape that differs only by axes of size 1
    names that, and any other shape keeps the check's hints."""
    want = torch.linspace(0, 1, 45).reshape(1, 5, 9)
    for got, hint in ((want[0], "general/unit-axes"), (want[:, None], "general/unit-axes"), (want[:, :4], "x/value")):
        for check in (
            lambda g: expect.close(g, want, what="out", tol=TOL, hints=["x/value"]),
            lambda g: expect.tensor(g, what="out", shape=want.shape, hints=["x/value"]),
        ):
            try:
                check(got)
            except CheckFailed as exc:
                assert exc.feedback.problem == "shape" and exc.feedback.hints == [hint], (got.shape, exc.feedback.hints)
            else:
                raise AssertionError("a wrong shape passed")


def test_a_fixed_wrong_answer_matching_one_draw_earns_nothing():
    # one lucky draw out of three in each kind: no kind is earned
    credit = Credit()
    _run(credit, credit.kinds(["left", "right"], draws=3), {"left · draw 2", "left · draw 3", "right · draw 1", "right · draw 3"})
    assert credit.fraction == 0.0


def test_cases_are_one_kind_so_the_score_does_not_depend_on_how_many_draws_hit_the_bug():
    for failing in ({"case 1"}, {"case 2", "case 5"}, {"case 1", "case 2", "case 3", "case 4", "case 5", "case 6"}):
        credit = Credit()
        _run(credit, credit.cases(6), failing)
        assert credit.fraction == 0.0


def test_a_failed_required_part_scores_zero_and_says_why():
    credit = Credit()
    exc = _run(
        credit, credit.parts(["Q", "K", "fresh"], required={"fresh": "printing the numbers alone earns nothing"}), {"fresh"}
    )
    assert credit.fraction == 0.0
    assert "required part 'fresh' failed" in exc.feedback.detail and "printing the numbers alone" in exc.feedback.detail


def test_a_test_whose_every_part_failed_shows_its_reason_alone():
    """A stub's test said "is not implemented yet (all 4 parts)" and then why the control
    part is required (blind tester R-AY): with nothing passed, 0 points needs no rule."""
    credit = Credit()
    exc = _run(credit, credit.parts(["Q", "K", "fresh"], required=["fresh"]), {"Q", "K", "fresh"})
    assert credit.fraction == 0.0 and credit.note() == ""
    assert "required" not in exc.feedback.detail, exc.feedback.detail


def test_required_parts_gate_but_are_not_a_share():
    credit = Credit()
    _run(credit, credit.parts(["Q", "K", "V", "fresh"], required=["fresh"]), {"K"})
    assert credit.fraction == pytest.approx(2 / 3)
    assert credit.summary()["total"] == 3


def test_a_failed_required_part_is_named_so_no_count_of_passed_cases_reads_as_points():
    """The summary says which required part failed: "2 of 3 cases" beside 0 points misleads
    (the terminal table says "required part failed: fresh" instead; blind tester K)."""
    credit = Credit()
    _run(credit, credit.parts(["Q", "K", "V", "fresh"], required=["fresh"]), {"V", "fresh"})
    summary = credit.summary()
    assert credit.fraction == 0.0 and summary["required_failed"] == ["fresh"] and summary["passed"] == 2
    ok = Credit()
    _run(ok, ok.parts(["Q", "K", "fresh"], required=["fresh"]), {"K"})
    assert ok.summary()["required_failed"] == []


def test_the_credit_record_adds_up_and_labels_with_commas_stay_apart():
    """Blind tester R-G: the JSON said passed 1, total 3 beside three failed labels, and the
    summary "3 of 4 parts failed (P_A, P_B, float64, non-contiguous, control inputs)" read as
    five parts. ``failed_kinds`` are the share-bearing kinds that failed (passed + their count
    = total); ``failed`` lists every failed part and draw, the required ones too; labels that
    hold a comma are listed with " · " between them."""
    credit = Credit()
    exc = _run(
        credit,
        credit.parts(["P_A, P_B", "float64, non-contiguous", "float32", "control"], required=["control"]),
        {"P_A, P_B", "float64, non-contiguous", "control"},
    )
    summary = credit.summary()
    assert summary["passed"] + len(summary["failed_kinds"]) == summary["total"] == 3
    assert summary["failed_kinds"] == ["P_A, P_B", "float64, non-contiguous"]
    assert summary["failed"] == ["P_A, P_B", "float64, non-contiguous", "control"]
    assert "(P_A, P_B · float64, non-contiguous · control)" in exc.feedback.detail
    draws = Credit()
    _run(draws, draws.kinds(["a", "b"], draws=2), {"a · draw 2"})
    assert draws.summary()["failed_kinds"] == ["a"] and draws.summary()["failed"] == ["a · draw 2"]


def test_a_float64_result_right_only_to_float32_precision_says_so():
    """Blind tester R-I: ``scores / torch.tensor(d_k).sqrt()`` (a float32 constant) failed the
    float64 checks with no word of why. A float64 answer that misses the float64 tolerance
    but agrees to float32's precision everywhere names that; a wrong answer does not."""
    want = torch.linspace(-1, 1, 12, dtype=torch.float64).reshape(3, 4) / 3.0
    tight = expect.Tol(1e-10, 1e-12)
    rounded = want * (torch.tensor(3.0).sqrt().double() / 3.0**0.5)  # √3 rounded to float32
    standin = want.clone()
    standin[:, -1] = -1e9
    shifted = standin.clone()
    shifted[:, -1] += want[:, -1]  # s − 1e9 for −1e9: as close, but a mask mistake, not float32
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(6, 64, generator=g, dtype=torch.float64), torch.randn(5, 64, generator=g, dtype=torch.float64)
    k[0] -= (q[0] @ k[0] - 1e-3) / (q[0] @ q[0]) * q[0]  # q₀·k₀ = 0.001: a sum that cancels
    product = q @ k.T
    # the whole product in float32, cast back (blind tester R-CM): sums that cancel near 0 are off
    # by more than 1e-7, and every value is a float32 number
    in_float32 = (q.float() @ k.float().T).double()
    assert not torch.isclose(in_float32, product, rtol=1e-5, atol=1e-7).all()
    cases = {  # name: (got, want, the hint named)
        "rounded": (rounded, want, True),
        "computed in float32": (in_float32, product, True),
        "float32 numbers, wrong": ((product * 1.001).float().double(), product, False),
        "wrong": (want * 1.01, want, False),
        "float32": (want.float(), want, False),
        "beside a stand-in": (shifted, standin, False),
    }
    for name, (got, wanted, named) in cases.items():
        with pytest.raises(CheckFailed) as raised:
            expect.close(got, wanted, what="out", tol=tight)
        assert ("general/float32-precision" in raised.value.feedback.hints) == named, name
        # a property check (rows sum to 1) names it the same way, from the values it holds; a
        # result in float32 for float64 inputs, by its dtype (blind tester R-CP)
        assert ("general/float32-precision" in expect.float32_hints(got, wanted)) == named, name
        assert (expect.float32_hints(got, wanted) == ["general/dtype-changed"]) == (got.dtype != wanted.dtype), name


def test_a_nan_is_said_first_and_every_other_wrong_value_is_marked_too():
    """A softmax over the wrong axis gave one NaN and wrong finite values beside it: the grid
    marked only the NaN, as if it were the only problem (blind tester K)."""
    want = torch.tensor([[1.0, 0.0], [0.599, 0.401]], dtype=torch.float64)
    got = torch.tensor([[0.5, float("nan")], [0.574, 0.401]], dtype=torch.float64)
    with pytest.raises(CheckFailed) as failed:
        expect.close(got, want, what="softmax_rows", tol=TOL, grid=("query", "key"))
    feedback = failed.value.feedback
    assert feedback.problem == "nan" and "NaN at index [0, 1]" in feedback.detail
    assert "2 other values differ too" in feedback.detail, feedback.detail
    assert feedback.grids[0]["bad"] == [[True, True], [True, False]]


def test_a_single_nan_names_a_mistake_only_where_a_pattern_or_a_value_matched_it_too():
    """Every mistake that makes a NaN anywhere upstream gives a NaN loss: a NaN scalar agreeing
    with one mistake's NaN is no evidence of that mistake alone (blind tester R-BS, c38: told
    "mask polarity inverted" for a boolean index that did not broadcast). Its match is not
    recorded, so the plugin keeps the hint only where the same test matched it otherwise.
    Where NaN fills a pattern (every weight, as 0·(−∞) in an additive mask gives; row 0 alone,
    as an inverted causal mask gives), the pattern tells the mistakes apart."""
    from autograder.core.feedback.hints import filter_named

    nan = float("nan")
    catalogue = {"m/inverted": Hint("m/inverted", "inverted", "§1", functions=("attention",))}
    loss = torch.tensor(nan, dtype=torch.float64)
    expect.reset_matches()
    named = expect.diagnose(loss, {"m/inverted": torch.tensor(nan)}, TOL, torch.tensor(1.3168, dtype=torch.float64))
    assert named == ["m/inverted"] and expect.matched_hints() == set()
    assert filter_named(named, catalogue, expect.matched_hints(), ["m.probe:forward"]) == []  # c38: nothing else matched
    rows = torch.tensor([[nan, nan], [nan, nan]], dtype=torch.float64)
    row0 = torch.tensor([[nan, nan], [0.5, 0.5]], dtype=torch.float64)
    assert expect.diagnose(row0.clone(), {"m/times-inf": rows, "m/inverted": row0}, TOL, row0.nan_to_num(1.0)) == ["m/inverted"]
    assert filter_named(named, catalogue, expect.matched_hints(), ["m.probe:forward"]) == ["m/inverted"]
    expect.reset_matches()
    assert expect.diagnose(rows.clone(), {"m/times-inf": rows, "m/inverted": row0}, TOL, rows.nan_to_num(0.5)) == ["m/times-inf"]
    assert expect.matched_hints() == {"m/times-inf"}


def test_kinds_must_be_distinct():
    with pytest.raises(ValueError):
        list(Credit().parts(["a", "a"]))


def test_a_mistake_is_named_only_when_it_matches_better_than_the_correct_answer():
    want = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    # a mistake whose prediction equals the right answer on these inputs can never be named
    assert expect.diagnose(want.clone(), {"m/same": want.clone()}, TOL, want) == []
    got = torch.tensor([1.0, 2.0, 3.5], dtype=torch.float64)
    assert expect.diagnose(got, {"m/right": got.clone(), "m/far": want * 2}, TOL, want) == ["m/right"]


def test_only_the_closest_of_several_matching_mistakes_is_named():
    want = torch.zeros(4, dtype=torch.float64)
    got = torch.full((4,), 1.0, dtype=torch.float64)
    loose = Tol(0.1, 0.0)
    near, nearer = got * 1.05, got * 1.001
    assert expect.diagnose(got, {"m/near": near, "m/nearer": nearer}, loose, want) == ["m/nearer"]


def test_mistakes_predicting_the_same_numbers_are_not_named():
    want = torch.zeros(3, dtype=torch.float64)
    got = torch.ones(3, dtype=torch.float64)
    assert expect.diagnose(got, {"m/a": got.clone(), "m/b": got.clone()}, TOL, want) == []


def test_numbers_follow_the_same_rule():
    assert expect.diagnose_number(4.0, {"m/double": 4.0, "m/half": 1.0}, Tol(1e-9, 0.0), 2.0) == ["m/double"]
    assert expect.diagnose_number(2.0, {"m/same": 2.0}, Tol(1e-9, 0.0), 2.0) == []


def test_function_hints_need_a_match_in_this_test_on_a_test_of_that_function():
    catalogue = {
        "s/fact": Hint("s/fact", "a fact", "§1"),
        "s/mistake": Hint("s/mistake", "a mistake", "§2", ("scale_scores",)),
    }
    ids = ["s/fact", "s/mistake"]
    assert filter_named(ids, catalogue, {"s/mistake"}, ["qkv.scale_scores"]) == ids
    assert filter_named(ids, catalogue, set(), ["qkv.scale_scores"]) == ["s/fact"]  # guessed, not matched
    assert filter_named(ids, catalogue, {"s/mistake"}, ["qkv.attention_scores"]) == ["s/fact"]  # another function's test


def test_a_behavioural_signature_counts_as_a_match():
    expect.reset_matches()
    assert expect.observed("s/mistake") == ["s/mistake"]
    assert "s/mistake" in expect.matched_hints()
    expect.reset_matches()
    assert expect.matched_hints() == set()


def test_a_raise_names_the_mistake_whose_code_raises_the_same_error_and_stays_a_raise():
    from autograder.testing.failures import SubmissionRaised

    predicted = {"s/fixed-axes#4d": "The size of tensor a (3) must match the size of tensor b (5) at non-singleton dimension 1"}
    expect.reset_matches()
    same = SubmissionRaised("qkv.attention_scores(…)", "raised RuntimeError: " + predicted["s/fixed-axes#4d"])
    expect.observed_raise(same, predicted)
    expect.observed_raise(same, predicted)  # a second look names it once
    assert same.hints == ["s/fixed-axes"] and expect.matched_hints() == {"s/fixed-axes"}
    assert same.feedback().problem == "raised"
    expect.reset_matches()
    other = SubmissionRaised("qkv.attention_scores(…)", "raised RuntimeError: mat1 and mat2 shapes cannot be multiplied")
    expect.observed_raise(other, predicted)
    expect.observed_raise(other, {"s/never-raises": ""})  # a mistake that does not raise on these inputs
    assert other.hints == [] and expect.matched_hints() == set()


def test_a_probe_may_have_called_any_function_of_its_module():
    catalogue = {"s/mistake": Hint("s/mistake", "a mistake", "§2", ("backward",))}
    assert filter_named(["s/mistake"], catalogue, {"s/mistake"}, ["custom_backward.probe:direct_backward"]) == ["s/mistake"]


# --------------------------------------------------------------------------- issue 30
def test_a_mistake_is_named_from_one_component_only_when_its_whole_signature_agrees():
    """q.mul_(s) in forward: dk is off by s, dq is right. "The scale was applied twice" predicts
    dk off by s *and* dq off by s, so it is not named from dk; the mistake that changes dk
    alone is. A second mistake elsewhere (dv wrong) does not hide either."""
    from autograder.testing import whole

    dq, dk, dv = (torch.randn(3, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(i)) for i in range(3))
    s = 0.5
    table = {"m/scale-twice": (dq * s, dk * s, dv), "m/saved-scaled-q": (dq, dk * s, dv)}
    got = (dq, dk * s, dv)
    kept = whole(table, got, (dq, dk, dv), TOL)
    assert list(kept) == ["m/saved-scaled-q"]
    assert expect.diagnose(got[1], {h: v[1] for h, v in kept.items()}, TOL, dk) == ["m/saved-scaled-q"]
    # the same, with dv also wrong (another mistake): the components saved-scaled-q changes still agree
    assert list(whole(table, (dq, dk * s, dv + 1), (dq, dk, dv), TOL)) == ["m/saved-scaled-q"]


def test_a_large_finite_number_for_minus_infinity_is_said_and_named_whatever_the_number():
    want = torch.tensor([[0.0, float("-inf")], [0.0, 0.0]])
    got = torch.tensor([[0.0, -1e9], [0.0, 0.0]])
    table = {"m/finite": torch.tensor([[0.0, torch.finfo(torch.float32).min], [0.0, 0.0]]), "m/zero": torch.zeros(2, 2)}
    with pytest.raises(CheckFailed) as failed:
        expect.close(got, want, what="mask", tol=Tol(0.0, 0.0), mistakes=table)
    feedback = failed.value.feedback
    assert feedback.hints == ["m/finite"]
    assert "expected −∞ at index [0, 1], got -1e+09: a large finite number is not −∞" in feedback.detail
    assert "largest difference 0" not in feedback.detail
    # a small finite number in place of −∞ is not that mistake
    assert expect.diagnose(torch.tensor([[0.0, -5.0], [0.0, 0.0]]), table, Tol(0.0, 0.0), want) == []


# --------------------------------------------------------------------------- blind test, 2026-12-04
def test_each_variant_of_a_mistake_is_a_candidate_and_names_the_mistake():
    """``hint#variant`` keys: a mask shifted by one either way is one mistake with two outputs.
    Either variant matching names the hint; the variants coinciding with each other does not
    count as two mistakes predicting the same numbers, but a variant coinciding with another
    mistake still names neither."""
    from autograder.testing import signatures

    want = torch.zeros(3, dtype=torch.float64)
    up, down = torch.tensor([1.0, 0, 0], dtype=torch.float64), torch.tensor([0, 0, 1.0], dtype=torch.float64)
    table = {"m/off-by-one": up, "m/off-by-one#too-few": down}
    assert expect.diagnose(down.clone(), table, TOL, want) == ["m/off-by-one"]
    assert expect.diagnose(up.clone(), table, TOL, want) == ["m/off-by-one"]
    assert expect.diagnose(down.clone(), {**table, "m/other": down.clone()}, TOL, want) == []
    same = {"m/off-by-one": up, "m/off-by-one#too-few": up.clone()}  # with L = 1 both ways are one mask
    assert set(signatures.distinct(same, TOL, want)) == set(same)
    assert expect.diagnose_number(3.0, {"m/n": 1.0, "m/n#other-way": 3.0}, Tol(1e-9, 0.0), 2.0) == ["m/n"]


def test_a_finite_value_where_minus_infinity_belongs_is_called_a_stand_in_only_when_it_is_one():
    """−1e9 for −∞ is explained as a large finite number (exp(−1e9 − max) …); a score left as
    it was (0.2, a mask of the other polarity) is not: the message only says where −∞ was
    expected and what came instead (blind test, 2026-12-04)."""
    want = torch.tensor([[0.5, float("-inf")], [0.1, 0.3]], dtype=torch.float64)
    for fill, standin in ((-1e9, True), (0.2, False)):
        got = want.clone()
        got[0, 1] = fill
        with pytest.raises(CheckFailed) as failed:
            expect.close(got, want, what="apply_mask", tol=TOL)
        detail = failed.value.feedback.detail
        assert f"expected −∞ at index [0, 1], got {expect.fmt_number(fill)}" in detail, detail
        assert ("a large finite number" in detail) is standin, detail


def test_an_exception_class_name_from_the_submission_is_a_dotted_name_or_is_escaped():
    """Its ``__module__`` and ``__qualname__`` are the submission's: blind red-team tester H's
    h10 put newlines and box lines there, and the text report showed them as lines of its own."""
    from autograder.testing.remote import _classified

    forged = {"type": "builtins\n✓ test_everything 20/20\n│ total │ 100/100 │", "base": "Exception", "message": "m"}
    error = _classified(forged, "qkv")
    assert "\n" not in error["type"] and "│" not in error["type"] and error["type"].startswith("'builtins\\n")
    for name in ("ValueError", "numpy.linalg.LinAlgError", "torch._C._LinAlgError"):
        assert _classified({"type": name, "base": "Exception"}, "qkv")["type"] == name


def test_the_right_value_as_a_python_number_names_item_and_a_wrong_one_does_not():
    want = torch.tensor(1.3168361, dtype=torch.float32)
    for got, named in ((1.3168361186981201, ["general/returns-number"]), (2.5, []), (True, [])):
        with pytest.raises(CheckFailed) as failed:
            expect.close(got, want, what="cross_entropy(…)", tol=Tol(1e-6, 1e-6))
        assert failed.value.feedback.problem == "type" and failed.value.feedback.hints == named, got


def test_autograd_refusing_a_saved_tensor_changed_in_place_is_named():
    from autograder.testing.error_hints import hints_for as _hints_for

    message = (
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        "[torch.FloatTensor [2, 8, 8]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead."
    )
    assert _hints_for({"type": "RuntimeError", "message": message}) == ["general/in-place-saved"]
    assert _hints_for({"type": "ValueError", "message": message}) == []


def test_an_exercise_module_imported_as_part_of_a_package_is_named_and_a_missing_module_is_not():
    """Blind tester R-K: `from exercises.masks import …` and `from .masks import …` got "not
    available in the grader", though masks.py was there; bmm given four axes names bmm."""
    from autograder.testing.error_hints import hints_for as _hints_for

    sibling = ["general/import-sibling"]
    assert _hints_for({"type": "ModuleNotFoundError", "message": "No module named 'exercises'"}) == sibling
    assert _hints_for({"type": "ImportError", "message": "attempted relative import with no known parent package"}) == sibling
    assert _hints_for({"type": "ModuleNotFoundError", "message": "No module named 'einops'"}) == ["general/import"]
    assert _hints_for({"type": "RuntimeError", "message": "batch1 must be a 3D tensor"}) == ["general/bmm-three-axes"]
    import torch

    try:  # torch's own message: F.one_hot on int32 ids (blind tester R-CW)
        torch.nn.functional.one_hot(torch.tensor([0, 1], dtype=torch.int32))
    except RuntimeError as exc:
        assert _hints_for({"type": "RuntimeError", "message": str(exc)}) == ["general/one-hot-needs-int64"]
    else:
        raise AssertionError("F.one_hot accepted int32 ids: the hint's message is stale")
    # torch.compile imports ctypes, which a worker refuses: not "an import not available" (blind tester R-M)
    from autograder.sandbox.rawmemory import MESSAGE

    for kind, message in (
        ("ModuleNotFoundError", f"No module named 'ctypes': {MESSAGE}"),
        ("RuntimeError", f"ctypes.dlopen: {MESSAGE}"),
    ):
        assert _hints_for({"type": kind, "message": message}) == ["general/no-ctypes"]
    assert _hints_for({"type": "RuntimeError", "message": "Expected size for first two dimensions of batch2 tensor"}) == []


def _distance_by_the_full_rule(got: torch.Tensor, target: torch.Tensor, tol: Tol) -> float:
    """``expect.distance``'s rule written out in full (equal entries, NaN against NaN and
    same-signed infinities count 0; a NaN unit counts as infinitely far)."""
    import math

    a, b = got.to(torch.float64), target.to(torch.float64)
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    units = torch.where(same, torch.zeros_like(a), (a - b).abs() / (tol.atol + tol.rtol * b.abs()))
    return float(torch.nan_to_num(units, nan=math.inf, posinf=math.inf).max())


@pytest.mark.parametrize("tol", [Tol(1e-5, 1e-6), Tol(0.0, 0.0), Tol(0.0, 1e-6), Tol(1e-3, 0.0)])
def test_distance_gives_the_full_rules_number_for_every_mix_of_special_values(tol):
    """``distance`` takes a shorter path where no entry makes a NaN unit: the same number as
    the full rule on inputs mixing equal entries, near ones, zeros, ±∞ and NaN."""
    g = torch.Generator().manual_seed(5)
    specials = torch.tensor([0.0, -0.0, 1.0, float("inf"), float("-inf"), float("nan"), 1e-7, -3.5], dtype=torch.float64)
    for _ in range(300):
        n = int(torch.randint(1, 6, (), generator=g))
        target = specials[torch.randint(0, len(specials), (n,), generator=g)]
        pick = torch.randint(0, 3, (n,), generator=g)
        noise = torch.randn(n, generator=g, dtype=torch.float64) * 1e-6
        got = torch.where(
            pick == 0,
            target,
            torch.where(pick == 1, target + noise, specials[torch.randint(0, len(specials), (n,), generator=g)]),
        )
        for dtype in (torch.float64, torch.float32):
            want = _distance_by_the_full_rule(got.to(dtype), target, tol)
            assert expect.distance(got.to(dtype), target, tol) == want, (got, target, tol)


def test_expected_and_got_never_read_the_same_when_they_differ():
    """Blind tester R-AA: "expected 0.264477, got 0.264477" for a float32 square root in float64
    work (1.4e-8 apart, float64's tolerance 1e-12): the message writes as many digits as it
    takes for the two to differ."""
    want = torch.tensor([0.264477144], dtype=torch.float64)
    got = want * (1 + 1.4e-8)
    with pytest.raises(CheckFailed) as info:
        expect.close(got, want, what="scaled scores", tol=Tol(rtol=1e-12, atol=1e-12))
    detail = info.value.feedback.detail
    shown = detail.split("expected ", 1)[1].split(";", 1)[0]
    expected_text, got_text = shown.split(", got ")
    assert expected_text != got_text, detail


def test_an_input_whose_class_was_swapped_in_place_counts_as_changed():
    """``scores.add_(1); scores.__class__ = Sub`` came back as no plain tensor, and the check
    skipped it, so the change of its values went unseen (blind red-team tester R-AK: +0.07 and
    +0.14 points in qkv and masks): an input that comes back as anything but a plain tensor
    was changed in place."""

    class Sub(torch.Tensor):
        pass

    before = torch.arange(6.0).reshape(2, 3)
    swapped = before.clone().add_(1).as_subclass(Sub)
    with pytest.raises(CheckFailed) as caught:
        expect.unchanged(before, swapped, what="scale_scores leaves its inputs unchanged")
    assert "class replaced" in str(caught.value) and "general/in-place" in caught.value.feedback.hints
    expect.unchanged(before, before.clone(), what="an untouched input passes")
    with pytest.raises(CheckFailed):
        expect.unchanged(before, before.clone().add_(1), what="a plain change is caught as before")


def test_a_float_tensor_in_a_bitwise_operator_is_named_from_torchs_own_refusals():
    """Blind tester R-BJ: a mask made float (``allowed.float()``) and then combined with ``&``
    raised NotImplementedError, which read as no hint at all (a stub's error type)."""
    from autograder.testing.error_hints import hints_for as _hints_for

    mask = torch.ones(2, 2)
    causal = torch.ones(2, 2, dtype=torch.bool)
    refusals = []
    ops = (lambda: mask & causal, lambda: causal | mask.double(), lambda: mask.half() ^ causal, lambda: ~mask, mask.bitwise_not)
    for op in ops:
        with pytest.raises((NotImplementedError, TypeError)) as raised:
            op()
        refusals.append({"type": type(raised.value).__name__, "message": str(raised.value)})
    for error in refusals:
        assert _hints_for(error) == ["general/float-in-bitwise"], error
    assert _hints_for({"type": "NotImplementedError", "message": "TODO(masks): build the mask"}) == []
    assert _hints_for({"type": "TypeError", "message": "unsupported operand type(s) for &: 'float' and 'Tensor'"}) == []


def test_a_max_with_a_dim_used_as_a_tensor_is_named_from_pythons_and_torchs_own_errors():
    """Blind tester R-BO: `s - s.max(dim=-1, keepdim=True)` raised a TypeError with no hint."""
    from autograder.testing.error_hints import hints_for as _hints_for

    s = torch.zeros(2, 3)
    for op in (
        lambda: s - s.max(dim=-1, keepdim=True),
        lambda: s.max(-1, keepdim=True) - s,
        lambda: torch.exp(s - s.max(-1)),
        lambda: torch.exp(s.min(-1, keepdim=True)),
        lambda: s.max(-1).unsqueeze(-1),
    ):
        with pytest.raises((TypeError, AttributeError)) as raised:
            op()
        error = {"type": type(raised.value).__name__, "message": str(raised.value)}
        assert _hints_for(error) == ["general/max-returns-pair"], error
    assert _hints_for({"type": "TypeError", "message": "unsupported operand type(s) for -: 'Tensor' and 'tuple'"}) == []


def test_an_optional_mask_used_while_none_is_named_from_pythons_and_torchs_own_errors():
    """Blind tester R-BL: `masked_fill(~allowed, …)` with allowed=None raised a TypeError with no hint."""
    from autograder.testing.error_hints import hints_for as _hints_for

    scores = torch.zeros(2, 2)
    allowed = None
    for op in (
        lambda: scores.masked_fill(~allowed, 0.0),
        lambda: allowed.logical_not(),
        lambda: scores.masked_fill(allowed, 0.0),
        lambda: torch.where(allowed, scores, scores),
    ):
        with pytest.raises((TypeError, AttributeError)) as raised:
            op()
        error = {"type": type(raised.value).__name__, "message": str(raised.value)}
        assert _hints_for(error) == ["general/none-mask"], error
    assert _hints_for({"type": "AttributeError", "message": "'NoneType' object has no attribute 'shape'"}) == []
