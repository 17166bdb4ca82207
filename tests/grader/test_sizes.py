"""Small modules: no file of autograder/ over MAX_LINES (issue 33 §4). A module that grows past
it is split along its seams into a package, as config/, testing/source/ and sandbox/probes/
were, its public names still imported from where they were."""

from __future__ import annotations

from conftest import ROOT

MAX_LINES = 600


def test_no_module_of_the_grader_is_over_600_lines():
    sizes = {
        p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in (ROOT / "autograder").rglob("*.py")
    }
    over = {path: n for path, n in sizes.items() if n > MAX_LINES}
    assert not over, f"over {MAX_LINES} lines (split along the seams): {over}"
