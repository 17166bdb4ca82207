"""One piece of code, one score, on every path (issue 16 §3, issue 31 §5): the Gradescope bundle
run as Gradescope runs it, ``batch`` with the course key and ``grade --seed-key-file`` give the
same score and the same status and score for every test, and name the same suites; the
nbgrader course's autograde gives each notebook exactly its skill's score.
(``tests/benchmarks/one_score_paths.py`` is the same comparison on more submissions.)"""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

import one_score_paths


# slow: builds the Gradescope bundle and the nbgrader course, grades each submission four ways
@pytest.mark.slow
def test_gradescope_batch_grade_and_nbgrader_agree_on_a_mistake_and_the_stubs(tmp_path):
    pytest.importorskip("nbgrader", reason="instructor requirements (requirements-instructor.txt) are not installed")
    folders = one_score_paths.submissions(tmp_path, ["masks/zero-fill"])
    folders.pop("correct")  # the reference's agreement is the bundle tests' business; keep this test short
    rows = one_score_paths.compare(folders, tmp_path)
    for row in rows:
        assert row["same_scores"] and row["same_tests"] and row["same_skills"], row
        assert row["nbgrader"] == row["grade"], row
        assert len(row["suites"]) == 1 and None not in row["suites"], row
    scores = {r["submission"]: r["grade"] for r in rows}
    assert scores["stubs"] == 0 and 0 < scores["masks--zero-fill"] < 100


def test_a_batch_without_the_course_key_says_its_scores_may_differ(tmp_path):
    import os
    import subprocess

    klass = tmp_path / "class"
    (klass / "ana").mkdir(parents=True)
    (klass / "ana" / "notes.txt").write_text("no modules here")
    env = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_SEED_KEY_FILE"}
    env.update(PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(tmp_path / "no-config"))
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "batch", str(klass), "--out", str(tmp_path / "out"), "--no-progress"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    summary = (tmp_path / "out" / "summary.md").read_text(encoding="utf-8")
    assert "Graded without the course key" in summary and "will not match Gradescope" in summary
    assert "Graded without the course key" in proc.stderr
