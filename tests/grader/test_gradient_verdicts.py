"""custom_backward's gradient verdicts are reached on the trusted side (issue 8 A2) and a
gradcheck failure is summarised, not dumped (issue 9 §6).

The attacks themselves (patched gradcheck, attention() on plain autograd, gradients computed
by autograd in forward) are graded by test_red_team.py; here: a wrong backward fails
gradcheck with a one-line summary naming the input, the worst entry, expected vs got, and
the mistake whose Jacobian it matches."""

from __future__ import annotations

from conftest import SOLUTIONS, grade


def test_gradcheck_failure_names_input_worst_entry_and_the_mistake(tmp_path):
    source = (SOLUTIONS / "custom_backward.py").read_text(encoding="utf-8")
    # A mistake that runs on every shape (the gradcheck inputs include L ≠ S, where a missing
    # transpose raises before any gradient is compared): dQ divided by the scale.
    # Q̄ and K̄ both divided by the scale: the whole of the scale-inverted mistake (a hint names a
    # mistake only when its whole signature matches — test_dq_alone_divided_… below).
    right = "dq = scale * (d_scores @ k)"
    wrong = "dq = (d_scores @ k) / scale"
    right_k = "dk = scale * (d_scores.transpose(-2, -1) @ q)"
    wrong_k = "dk = (d_scores.transpose(-2, -1) @ q) / scale"
    assert source.count(right) == 1 and source.count(right_k) == 1
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "custom_backward.py").write_text(source.replace(right, wrong).replace(right_k, wrong_k), encoding="utf-8")
    graded = grade(folder, "--skill", "custom_backward", output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr
    test = next(t for t in graded.tests("custom_backward") if t["name"] == "test_attention_function_passes_gradcheck_in_float64")
    assert test["status"] == "failed"
    detail = test["detail"] or ""
    assert "∂out/∂q" in detail and "worst" in detail and "by finite differences, your backward gives" in detail, detail
    assert len(detail) < 600, detail  # a summary, not a Jacobian
    assert [h["id"] for h in test["hints"]] == ["custom_backward/scale-inverted"], test["hints"]


def test_dq_alone_divided_by_the_scale_is_not_hinted_as_both_gradients_inverted(tmp_path):
    """Issue 30: the scale-inverted hint says Q̄ *and* K̄ were multiplied by √d_k; with only Q̄
    wrong its signature does not match as a whole, so the gradcheck says what differed and
    names no mistake the code does not have."""
    source = (SOLUTIONS / "custom_backward.py").read_text(encoding="utf-8")
    right = "dq = scale * (d_scores @ k)"
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "custom_backward.py").write_text(source.replace(right, "dq = (d_scores @ k) / scale"), encoding="utf-8")
    graded = grade(folder, "--skill", "custom_backward", output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr
    test = next(t for t in graded.tests("custom_backward") if t["name"] == "test_attention_function_passes_gradcheck_in_float64")
    assert test["status"] == "failed" and "∂out/∂q" in (test["detail"] or "")
    assert "custom_backward/scale-inverted" not in [h["id"] for h in test["hints"]], test["hints"]
