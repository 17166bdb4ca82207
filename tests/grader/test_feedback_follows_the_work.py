"""CI feedback (`--format github`) follows the student's work: a skill whose module is still
all TODO stubs (a later assignment's exercise, or one not begun) is one line of the log, not
an `::error` annotation per test, and the score notice says what the started skills scored."""

from __future__ import annotations

from conftest import EXERCISES, SOLUTIONS, grade


def test_a_skill_not_started_is_one_line_not_an_annotation_per_test(tmp_path):
    sub = tmp_path / "exercises"
    sub.mkdir()
    source = (SOLUTIONS / "qkv.py").read_text().replace("return scores / math.sqrt(d_k)", "return scores / d_k")
    (sub / "qkv.py").write_text(source)
    (sub / "masks.py").write_text((EXERCISES / "masks.py").read_text())  # a later week's stub, untouched
    graded = grade(sub, "--skill", "qkv", "--skill", "masks", fmt="github", cwd=tmp_path)
    assert graded.rc == 0, graded.stderr
    annotations = [a for a in graded.stdout.splitlines() if a.startswith("::error ")]
    assert annotations and all("masks" not in a for a in annotations), annotations
    assert any("qkv%3A" in a for a in annotations)  # the started skill's mistake is still annotated
    log = graded.stdout.splitlines()
    assert "masks: not started — every function in masks.py is still the TODO stub" in log
    notice = next(line for line in log if line.startswith("::notice title=Score::"))
    assert "skills started:" in notice and "not started: masks" in notice
