"""An exercise module that imports one handed in with another assignment works in a local
grade (every exercise module is copied) but fails in that assignment's own upload, which
holds its files only (blind tester E: sdpa_masks.py importing masks.py scored 100 locally
and 0 in sdpa_masks on Gradescope's day1). The local report says so, before the upload."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograder.config import load
from autograder.core import exercise_api
from autograder.core.results import Results
from autograder.renderers.common import footer_notes
from autograder.runner import submission

ROOT = Path(__file__).resolve().parents[2]
CONFIG = load(ROOT / "grading.toml")


def _home(module: str) -> str:
    return next(name for name, skills in CONFIG.assignments.items() for s in skills if CONFIG.skills[s].module == module)


def test_imported_modules_reads_every_spelling_of_an_import_without_running_anything():
    source = (
        "import a.b as ab\n"
        "from c.d import e\n"
        "from . import f, g\n"
        "from .h import i\n"
        "def k():\n"
        "    import j\n"
        "    importlib.import_module('l.m')\n"
        "    __import__('n')\n"
        "    getattr(x, 'not_an_import')('o')\n"
    )
    assert exercise_api.imported_modules(source) == {"a", "c", "f", "g", "h", "j", "l", "n"}
    assert exercise_api.imported_modules("def broken(:\n") == set()


@pytest.fixture
def folder(tmp_path):
    out = tmp_path / "sub"
    out.mkdir()
    for module in CONFIG.exercise_modules:
        shutil.copyfile(ROOT / "solutions" / module, out / module)
    return out


def _prepared(folder: Path, config, tmp_path: Path) -> submission.PreparedSubmission:
    run = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    run.mkdir()
    return submission.prepare(folder, config, run, world_readable=False)


@pytest.mark.skipif(len(CONFIG.assignments) < 2, reason="the course is one assignment")
@pytest.mark.parametrize(
    "line", ["from masks import causal_mask", "import masks as _m", "from . import masks", "    from masks import causal_mask"]
)
def test_an_import_of_another_assignments_module_is_named_in_the_local_report(folder, tmp_path, line):
    importer, imported = "sdpa_masks.py", "masks.py"
    assert _home(importer) != _home(imported)
    text = (folder / importer).read_text(encoding="utf-8")
    body = f"def _helper():\n{line}\n" if line.startswith(" ") else f"{line}\n"
    (folder / importer).write_text(text + "\n\n" + body, encoding="utf-8")

    prepared = _prepared(folder, CONFIG, tmp_path)
    assert prepared.cross_imports == [
        {"file": importer, "assignment": _home(importer), "imports": imported, "imports_assignment": _home(imported)}
    ]
    # a --skill run keeps the note: the files are the same
    assert _prepared(folder, CONFIG.select(["sdpa_masks"]), tmp_path).cross_imports == prepared.cross_imports
    # graded `--assignment` as its bundle grades (its skills only), the note stays: the folder
    # still holds the other assignment's file (blind tester R-BM: no note under --assignment).
    # The bundle's own grading.toml has no [release.assignments]: nothing known to warn about there
    assert _prepared(folder, CONFIG.for_assignment(_home(importer)), tmp_path).cross_imports == prepared.cross_imports

    notes = dict(footer_notes(Results("complete", "", 0, 100, [], submission=prepared.to_dict())))
    note = " ".join(notes["Imports across assignments"].split())
    assert f"{importer} ({_home(importer)}) imports {imported}" in note and _home(imported) in note
    assert "upload" in note


@pytest.mark.skipif(len(CONFIG.assignments) < 2, reason="the course is one assignment")
def test_a_module_imported_through_another_is_named_too_with_what_it_comes_through(folder, tmp_path):
    """mha_reshape.py imported qkv.py, which imported row_softmax.py: the note named qkv.py
    only, and an upload that followed it failed on row_softmax (blind tester R-M)."""
    importer = "sdpa_masks.py"
    middle, last = sorted(m for m in CONFIG.exercise_modules if _home(m) != _home(importer))[:2]
    for module, line in ((importer, f"import {middle[:-3]}"), (middle, f"from {last[:-3]} import *")):
        text = (folder / module).read_text(encoding="utf-8")
        (folder / module).write_text(f"{text}\n\n{line}\n", encoding="utf-8")
    prepared = _prepared(folder, CONFIG, tmp_path)
    mine = _home(importer)
    assert prepared.cross_imports == [
        {"file": importer, "assignment": mine, "imports": middle, "imports_assignment": _home(middle)},
        {"file": importer, "assignment": mine, "imports": last, "imports_assignment": _home(last), "through": middle},
    ]  # and none for middle.py where its import stays within its own assignment
    notes = [text for label, text in footer_notes(Results("complete", "", 0, 100, [], submission=prepared.to_dict()))]
    assert any(
        f"imports {last} (through {middle})" in " ".join(n.split()) and f"upload {last}" in " ".join(n.split()) for n in notes
    )


@pytest.mark.skipif(len(CONFIG.assignments) < 2, reason="the course is one assignment")
def test_imports_within_one_assignment_and_of_libraries_are_not_named(folder, tmp_path):
    importer = "mha_reshape.py"
    same = next(CONFIG.skills[s].module for s in CONFIG.assignments[_home(importer)] if CONFIG.skills[s].module != importer)
    text = (folder / importer).read_text(encoding="utf-8")
    (folder / importer).write_text(f"{text}\n\nimport {same[:-3]}\nimport numpy\nimport math\n", encoding="utf-8")
    prepared = _prepared(folder, CONFIG, tmp_path)
    assert prepared.cross_imports == []
    assert "Imports across assignments" not in dict(
        footer_notes(Results("complete", "", 0, 100, [], submission=prepared.to_dict()))
    )


def _outcome(sid: str, score: float, visibility: str = "visible"):
    """The skill with one test of ``visibility`` carrying every point it lost."""
    from autograder.core.results import SkillOutcome, TestOutcome

    skill = CONFIG.skills[sid]
    lost = skill.points - score
    test = TestOutcome(f"{sid}::t", "t", sid, visibility, 1.0, 1.0 - min(lost, 1.0), "failed" if lost else "passed")
    return SkillOutcome(sid, skill.title, skill.module, [], skill.points, score, 0, 1, [test])


def test_a_module_that_imports_a_sibling_that_lost_points_is_told_its_failures_may_come_from_there(folder, tmp_path):
    """Blind tester R-L: qkv.py taking causal_mask from masks.py, with a masks mistake, lost points
    in qkv too (its tests run the student's masks code), with hints that read as qkv's own. The
    report says where to start: only where both skills lost points."""
    (folder / "qkv.py").write_text((folder / "qkv.py").read_text(encoding="utf-8") + "\n\nfrom masks import causal_mask\n")
    prepared = _prepared(folder, CONFIG, tmp_path)
    assert {"file": "qkv.py", "skill": "qkv", "imports": "masks.py", "imports_skill": "masks"} in prepared.exercise_imports
    sub = prepared.to_dict()

    def notes(qkv: float, masks: float, masks_visibility: str = "visible") -> str:
        skills = [_outcome("qkv", qkv), _outcome("masks", masks, masks_visibility)]
        found = dict(footer_notes(Results("complete", "", 0, 100, skills, submission=sub)))
        return " ".join(found.get("Imports between exercises", "").split())

    full_qkv, full_masks = CONFIG.skills["qkv"].points, CONFIG.skills["masks"].points
    assert "qkv.py imports masks.py, which lost points in masks" in notes(full_qkv - 2, full_masks - 3)
    assert "Fix masks first" in notes(full_qkv - 2, full_masks - 3)
    assert notes(full_qkv - 2, full_masks) == notes(full_qkv, full_masks - 3) == ""
    # masks lost points in a hidden test only: nothing said (Gradescope shows these notes before the due date)
    assert notes(full_qkv - 2, full_masks - 3, "hidden") == ""

    # and at the skill itself, where its failures are read (blind tester R-BY missed the footer)
    from autograder.renderers.common import imports_note

    def at_skill(qkv: float, masks: float, masks_visibility: str = "visible") -> str:
        skills = [_outcome("qkv", qkv), _outcome("masks", masks, masks_visibility)]
        return imports_note(Results("complete", "", 0, 100, skills, submission=sub), skills[0])

    assert (
        at_skill(full_qkv - 2, full_masks - 3)
        == "qkv.py imports masks.py, which lost points too: fix that first (see the note below)."
    )
    assert at_skill(full_qkv - 2, full_masks) == at_skill(full_qkv, full_masks - 3) == ""
    assert at_skill(full_qkv - 2, full_masks - 3, "hidden") == ""


def test_the_not_selected_note_lists_only_modules_the_folder_has(folder, tmp_path):
    """The footer said row_softmax.py was importable beside the graded modules when the folder
    had no row_softmax.py (blind tester R-M): a missing module is not listed."""
    graded, gone = "qkv.py", "row_softmax.py"
    (folder / gone).unlink()
    prepared = _prepared(folder, CONFIG.select([s for s, k in CONFIG.skills.items() if k.module == graded]), tmp_path)
    notes = dict(footer_notes(Results("complete", "", 0, 100, [], submission=prepared.to_dict())))
    listed = notes["Not selected (importable by your code, not graded in this run)"]
    assert gone not in listed and "masks.py" in listed, listed
