"""What the student reads besides the feedback (issue 30 §5): the exercise contract speaks to the
student's copy, the lessons' folder says what the release does and does not include, and the
Classroom 50 section says how to get `gh student` and whether a submission there is required."""

from __future__ import annotations

import re

from conftest import CONFIG, ROOT

DOCS = ROOT / "docs"


def test_the_exercise_contract_opens_with_what_the_student_has():
    text = (DOCS / "EXERCISES.md").read_text(encoding="utf-8")
    opening = text.split("Conventions that hold everywhere:")[0]
    assert "`exercises/`" in opening
    # the student tree has no solutions/: the opening must not present it as something to look at
    assert "`solutions/` implements" not in opening and "that `solutions/`" not in opening
    assert "not part of\nyour copy" in opening or "not part of your copy" in opening.replace("\n", " ")


def test_the_lessons_folder_says_what_the_release_leaves_out():
    readme = (DOCS / "lessons" / "README.md").read_text(encoding="utf-8")
    lessons = "\n".join(p.read_text(encoding="utf-8") for p in sorted((DOCS / "lessons").glob("*.txt")))
    # every program a lesson tells the student to run, and the earlier weeks it relies on, is accounted for
    programs = set(re.findall(r"[\w/]+\.py\b", lessons))
    assert programs, "the lessons name no program: this test would check nothing"
    shipped = {p for p in programs if (ROOT / p).exists() or (ROOT / "exercises" / p).exists()}
    missing = sorted(p for p in programs - shipped if p not in readme)
    assert not missing, f"docs/lessons/README.md does not say these are not in the release: {missing}"
    assert "Week 0" in lessons and "Week 0" in readme
    assert "Not** part of it" in readme and "What is part of this release" in readme
    for lesson in (DOCS / "lessons").glob("*.txt"):
        assert f"`{lesson.name}`" in readme, lesson.name
    assert any(d.startswith("docs/lessons") for d in CONFIG["release"]["docs"]), "the README must ship with the lessons"


def _classroom50_section(platforms: tuple[str, ...]) -> str:
    from test_release import _readme_for

    readme, _ = _readme_for(*platforms)
    start = readme.index("### Classroom 50")
    end = readme.find("\n### ", start + 1)
    return readme[start : end if end > 0 else None]


def test_the_classroom50_section_says_how_to_install_gh_student_and_whether_it_is_required():
    with_gradescope = _classroom50_section(("gradescope", "classroom50"))
    assert "`gh student submit`" in with_gradescope
    assert "gh extension install" in with_gradescope and "foundation50/classroom50" in with_gradescope
    assert "gh student login" in with_gradescope
    assert "Is a Classroom 50 submission required?" in with_gradescope and "Gradescope" in with_gradescope
    alone = _classroom50_section(("classroom50",))
    assert "Is a Classroom 50 submission required? Yes" in alone
