"""`make check`: the suites are right. The reference solutions score full marks, the stubs
score zero with a TODO message on every test, stubs and solutions expose the same API,
and the suites only use what they are allowed to."""

from __future__ import annotations

import ast
import re
import tomllib

import pytest
from conftest import CONFIG, EXERCISES, MODULES, ROOT, SKILLS, SOLUTIONS

from autograder.config import load
from autograder.core.feedback.hints import load_catalogue

SUITES = ROOT / "tests" / "suites"
TEXTS = load(ROOT / "grading.toml").texts  # [course.texts]: how the course names its lessons


def test_reference_solutions_score_full_marks(solutions_graded):
    assert solutions_graded.rc == 0, solutions_graded.stderr
    data = solutions_graded.data
    failing = [(t["name"], t["summary"][:200]) for t in solutions_graded.tests() if t["status"] != "passed"]
    assert not failing, failing
    assert data["score"] == data["max_score"] == pytest.approx(sum(s["points"] for s in CONFIG["skills"].values()))


def test_stubs_score_zero_and_every_test_names_its_todo(stubs_graded):
    assert stubs_graded.rc == 0, stubs_graded.stderr
    assert stubs_graded.data["score"] == 0
    for test in stubs_graded.tests():
        if test["max_score"] == 0:  # a rule gate: a stub breaks no rule
            assert test["status"] == "passed", test["name"]
            continue
        assert test["status"] == "failed", test["name"]
        text = test["summary"] + " " + (test["detail"] or "")
        assert re.search(r"TODO\(\w+\)", text), (test["name"], text[:200])
        assert any(h["id"] == "general/todo" for h in test["hints"]), test["name"]
        assert not test.get("error") or "Traceback" not in str(test["error"]), test["name"]


def _api(path):
    """Public functions, classes and their methods, with argument lists."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    api = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            api[node.name] = ast.unparse(node.args)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            api[node.name] = [ast.unparse(b) for b in node.bases]
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    api[f"{node.name}.{item.name}"] = ast.unparse(item.args)
    return api


@pytest.mark.parametrize("skill", SKILLS)
def test_every_solution_function_has_its_stub_and_vice_versa(skill):
    module = MODULES[skill]
    assert _api(SOLUTIONS / module) == _api(EXERCISES / module)


def _function_bodies(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            yield node


@pytest.mark.parametrize("skill", SKILLS)
def test_stub_bodies_are_one_todo_line_and_a_raise(skill):
    path = EXERCISES / MODULES[skill]
    lines = path.read_text(encoding="utf-8").splitlines()
    for fn in _function_bodies(path):
        body = [b for b in fn.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
        body = [b for b in body if ast.unparse(b) != "super().__init__()"]
        assert len(body) == 1 and isinstance(body[0], ast.Raise), (fn.name, [ast.unparse(b) for b in body])
        assert f'NotImplementedError("TODO({skill}):' in ast.unparse(body[0]).replace("'", '"'), fn.name
        todo = [line for line in lines[fn.lineno - 1 : fn.end_lineno] if line.strip().startswith(f"# TODO({skill}):")]
        assert len(todo) == 1, (fn.name, todo)


@pytest.mark.parametrize("skill", SKILLS)
def test_solution_bodies_sit_between_solution_markers(skill):
    text = (SOLUTIONS / MODULES[skill]).read_text(encoding="utf-8")
    begins = [i for i, line in enumerate(text.splitlines()) if "### BEGIN SOLUTION" in line]
    ends = [i for i, line in enumerate(text.splitlines()) if "### END SOLUTION" in line]
    assert begins and len(begins) == len(ends)
    assert all(text.splitlines()[i].startswith(" ") for i in begins), "regions must be inside function bodies"
    assert len(begins) >= len(list(_function_bodies(SOLUTIONS / MODULES[skill])))


def _suite_files():
    config = load(ROOT / "grading.toml")
    return [(skill, suite) for skill in config.skills.values() for suite in skill.suites]


@pytest.mark.parametrize("skill, suite", _suite_files(), ids=lambda v: getattr(v, "file", getattr(v, "id", str(v))))
def test_suites_call_only_their_own_module_and_visible_ones_use_no_reference(skill, suite):
    tree = ast.parse((ROOT / suite.file).read_text(encoding="utf-8"))
    modules = {m[:-3] for m in MODULES.values()}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("sub", "ref"):
            if node.attr in modules:
                assert node.attr == skill.module_name, f"{suite.file}:{node.lineno} uses {node.value.id}.{node.attr}"
    if suite.visibility == "visible":
        args = {a.arg for fn in tree.body if isinstance(fn, ast.FunctionDef) for a in fn.args.args}
        assert "ref" not in args, f"{suite.file}: visible tests ship without solutions/"


def test_a_bare_assert_in_a_suite_says_what_went_wrong():
    """The trusted process runs the suites with ``--assert=plain`` (runner/process/trusted.py:
    rewriting their asserts cost ~0.2 s of every run without .pyc, as on Gradescope), so a
    bare ``assert`` reports no values: suites check through ``autograder.testing.expect``,
    and an assert they keep (a check of the suite's own data) carries its message."""
    bare = []
    for path in sorted(SUITES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assert) and node.msg is None:
                bare.append(f"{path.relative_to(SUITES)}:{node.lineno}")
    assert not bare, f"asserts without a message in the suites: {bare}"


def test_every_hint_a_suite_names_exists():
    catalogue = load_catalogue(SUITES)
    used = set()
    named = re.compile(r'"((?:general|' + "|".join(SKILLS) + r')/[a-z0-9-]+)(?:#[a-z0-9-]+)?"')  # "skill/id#variant" too
    for path in list(SUITES.rglob("*.py")):
        used.update(named.findall(path.read_text(encoding="utf-8")))
    missing = sorted(used - set(catalogue))
    assert not missing, missing
    for skill in SKILLS:
        assert len([h for h in catalogue if h.startswith(f"{skill}/")]) >= 4, (
            f"{skill} needs at least four named mistakes in tests/suites/{skill}/hints.toml (CONTRIBUTING.md, 'A new skill')"
        )


def test_hints_cite_a_lesson_section():
    for path in SUITES.glob("*/hints.toml"):
        for key, entry in tomllib.loads(path.read_text(encoding="utf-8")).items():
            assert any(t in entry["section"] for t in TEXTS), (path.name, key, entry["section"])


def test_every_citation_resolves_to_a_line_of_a_shipped_text():
    """Hints, the exercise contract's headings and grading.toml's skill sections cite the
    lessons: each "Week 7 §11", "Day 1 §2.3", "§A.4" must be a heading in docs/ (shipped
    to students by [release] docs), so a student can open what a hint tells them to reread."""
    from autograder.config import load
    from autograder.core.feedback import citations

    docs = ROOT / "docs"
    shipped = load(ROOT / "grading.toml").release["docs"]
    for rel in citations.texts_of(TEXTS).values():
        assert any(f"docs/{rel}".startswith(d) for d in shipped), f"docs/{rel} is cited but not in [release] docs"
    cited = [
        (f"{p.parent.name}/hints.toml [{k}]", e["section"])
        for p in [*SUITES.glob("*/hints.toml"), ROOT / "autograder/core/feedback/general_hints.toml"]
        for k, e in tomllib.loads(p.read_text(encoding="utf-8")).items()
    ]
    cited += [
        (f"docs/EXERCISES.md: {line[:40]}", line)
        for line in (docs / "EXERCISES.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    ]
    cited += [
        (f"grading.toml [skills.{sid}] sections", " ".join(s.sections)) for sid, s in load(ROOT / "grading.toml").skills.items()
    ]
    unresolved = [
        f"{where}: {place}" for where, text in cited for place in citations.resolve(text, docs, texts=TEXTS) if not place.resolved
    ]
    assert not unresolved, "citations that resolve to no heading of a shipped text:\n" + "\n".join(unresolved)
    assert sum(len(citations.resolve(text, docs, texts=TEXTS)) for _, text in cited) > 200


def test_a_section_a_lesson_marks_with_its_own_sign_resolves_to_that_heading():
    """Blind tester R-CY: "Day 1 §A" landed on line 230, ``   A = softmax_row(S)`` (a letter
    section's name opens code lines too), not on "§A 注意力：API 用法与边界". Every heading a
    lesson writes as "§X …" is where "§X" resolves."""
    from autograder.core.feedback import citations

    docs = ROOT / "docs"
    checked = 0
    for name, rel in citations.texts_of(TEXTS).items():
        lines = (docs / rel).read_text(encoding="utf-8").splitlines()
        for line in lines:
            marked = re.match(r"^\s*(?:#+\s*)?§([A-Z](?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)*)\s", line)
            if not marked or not citations.is_heading(line):
                continue
            heading = re.compile(rf"^\s*(?:#+\s*)?§{re.escape(marked[1])}\s")
            first = next(n for n, other in enumerate(lines, start=1) if heading.match(other) and citations.is_heading(other))
            places = citations.resolve(f"{name} §{marked[1]}", docs, texts=TEXTS)
            assert [p.line for p in places] == [first], (name, marked[1], [p.line for p in places], first)
            checked += 1
    assert checked >= 2


def test_every_cited_section_lands_on_its_own_heading_line():
    """Issue 30 §5: "→ reread Day 1 §B" landed on the lesson's header blurb (line 9, a sentence
    that opens with §B) instead of §B's heading (line 522). Every section cited anywhere — the
    hints, EXERCISES.md's headings, grading.toml's skill sections — must resolve to a heading
    line that starts with that section's number (or, for a number with no heading of its own,
    its first subsection's)."""
    from autograder.config import load
    from autograder.core.feedback import citations

    docs = ROOT / "docs"
    texts = [
        e["section"]
        for p in [*SUITES.glob("*/hints.toml"), ROOT / "autograder/core/feedback/general_hints.toml"]
        for e in tomllib.loads(p.read_text(encoding="utf-8")).values()
    ]
    texts += [line for line in (docs / "EXERCISES.md").read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    texts += [" ".join(s.sections) for s in load(ROOT / "grading.toml").skills.values()]
    wrong, checked = [], set()
    for text in texts:
        for place in citations.resolve(text, docs, texts=TEXTS):
            if not place.section or not place.resolved or (place.path, place.section) in checked:
                continue
            checked.add((place.path, place.section))
            line = (ROOT / place.path).read_text(encoding="utf-8").splitlines()[place.line - 1]
            opens = re.match(rf"^\s*(?:#+\s*)?§?{re.escape(place.section)}(?:[.、]|\s|$|\.[0-9])", line)
            if not (opens and citations.is_heading(line)):
                wrong.append(f"{place.document} §{place.section} → {place}: {line.strip()[:70]!r}")
    assert not wrong, "citations that land on a line that is not the section's heading:\n" + "\n".join(wrong)
    assert len(checked) > 30
    assert (
        citations.where("Day 1 §B (手写注意力的 autograd.Function)", docs, texts=TEXTS)
        == "docs/lessons/week1-day1-self-attention.txt:522"
    )


def test_a_citation_of_a_missing_section_is_found():
    from autograder.core.feedback import citations

    places = citations.resolve("Week 7 §99 (no such section) and Day 1 §2.3", ROOT / "docs", texts=TEXTS)
    assert [p.resolved for p in places] == [False, True]
    assert citations.where("Day 1 §2.3 第二步", ROOT / "docs", texts=TEXTS) == "docs/lessons/week1-day1-self-attention.txt:168"


# --------------------------------------------------------------------------- the course's numbers
COURSE = SUITES / "course"
CATALOGUE = COURSE / "expected-numbers.md"  # copied from the course's shared folder: the check stays hermetic
NOT_GRADABLE = COURSE / "not_gradable.toml"
REASONS = {"random", "setup-dependent", "not-computed"}
_ID = r"(?:W7|D1|L2|A)-\d+[a-z]?"
_CITATION = re.compile(rf"\b({_ID})((?:(?:\.\.|–|/)(?:{_ID}|\d+[a-z]?|[a-z]))*)")
_TAIL = re.compile(rf"(\.\.|–|/)({_ID}|\d+[a-z]?|[a-z])")


def catalogue_ids(text: str) -> list[str]:
    """Row ids of expected-numbers.md, in their order."""
    return [m.group(1) for m in re.finditer(rf"^\| ({_ID}) \|", text, flags=re.M)]


def cited_ids(text: str, ids: list[str]) -> set[str]:
    """Ids a suite cites: ``W7-13``, ``W7-24/25``, ``W7-06..W7-11``, ``D1-27a–f``."""
    order = {i: n for n, i in enumerate(ids)}
    out: set[str] = set()
    for match in _CITATION.finditer(text):
        prev = match.group(1)
        out.add(prev)
        prefix, number = prev.split("-")[0], re.match(r"\d+", prev.split("-")[1]).group(0)
        for sep, value in _TAIL.findall(match.group(2)):
            if re.fullmatch(_ID, value):
                cur = value
            elif value.isalpha():
                cur = f"{prefix}-{number}{value}"
            else:
                cur = f"{prefix}-{value}"
            if sep in ("..", "–") and prev in order and cur in order:
                out.update(ids[order[prev] : order[cur] + 1])
            out.add(cur)
            prev = cur
    return out & set(ids)


def suite_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(SUITES.rglob("*.py")) if "__pycache__" not in p.parts)


def test_citation_forms_are_understood():
    ids = ["W7-05a", "W7-05b", "W7-05c", "W7-06", "W7-07", "W7-08", "W7-24", "W7-25", "D1-27a", "D1-27b", "D1-27c"]
    assert cited_ids("(W7-06..W7-08)", ids) == {"W7-06", "W7-07", "W7-08"}
    assert cited_ids("(W7-24/25)", ids) == {"W7-24", "W7-25"}
    assert cited_ids("# D1-27a–c: table", ids) == {"D1-27a", "D1-27b", "D1-27c"}
    assert cited_ids("W7-05a–c, W7-066, XW7-07", ids) == {"W7-05a", "W7-05b", "W7-05c"}


def test_every_course_number_is_asserted_by_a_test_or_listed_as_not_gradable():
    """Every row of expected-numbers.md is either cited by the suites (the test asserting it
    names its id) or listed in course/not_gradable.toml with the reason; never both."""
    ids = catalogue_ids(CATALOGUE.read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids)) and len(ids) > 100, "expected-numbers.md: row ids not found or not unique"
    listed = tomllib.loads(NOT_GRADABLE.read_text(encoding="utf-8"))
    cited = cited_ids(suite_text(), ids)
    unknown = sorted(set(listed) - set(ids))
    assert not unknown, f"{NOT_GRADABLE.name} lists ids that expected-numbers.md does not have: {unknown}"
    bad = sorted(i for i, row in listed.items() if row.get("reason") not in REASONS or len(row.get("why", "")) < 20)
    assert not bad, f"{NOT_GRADABLE.name}: each row needs reason = one of {sorted(REASONS)} and a `why` sentence: {bad}"
    both = sorted(set(listed) & cited, key=ids.index)
    assert not both, f"cited by a test and also listed as not gradable (remove them from {NOT_GRADABLE.name}): {both}"
    neither = [i for i in ids if i not in cited and i not in listed]
    assert not neither, (
        f"rows of expected-numbers.md no test asserts and {NOT_GRADABLE.name} does not list: {neither} — "
        "assert each in its skill's course-number test, citing the id, or list it with the reason"
    )


def test_the_copied_catalogue_and_lessons_match_the_course():
    """The catalogue (tests/suites/course/expected-numbers.md) and the lessons students get
    (docs/lessons/) are copies of the course's shared texts, refreshed by hand."""
    shared = ROOT.parent / "shared" / "course"
    if not (shared / "expected-numbers.md").is_file():
        pytest.skip(
            "the course's shared folder is not beside this repository (CI runs from a clone elsewhere): the copies "
            "are what is checked"
        )
    assert CATALOGUE.read_text(encoding="utf-8") == (shared / "expected-numbers.md").read_text(encoding="utf-8"), (
        f"refresh {CATALOGUE}"
    )
    for lesson in (ROOT / "docs" / "lessons").glob("*.txt"):
        assert lesson.read_bytes() == (shared / lesson.name).read_bytes(), f"refresh {lesson} from {shared / lesson.name}"


def test_the_docs_students_get_name_only_files_they_get():
    """``[release] docs`` ship to students and the bundle: a path they name (``docs/….md``)
    must be one of them, not an instructors' page the student tree lacks (blind tester R-BF:
    the contract pointed at docs/time-limits.md)."""
    shipped = [ROOT / doc for doc in load(ROOT / "grading.toml").release.get("docs", [])]
    files = [f for d in shipped for f in ([d] if d.is_file() else sorted(d.rglob("*")))]
    names = re.compile(r"docs/[\w./-]+\.(?:md|txt)")
    for f in files:
        if f.suffix not in (".md", ".txt"):
            continue
        for ref in names.findall(f.read_text(encoding="utf-8")):
            target = ROOT / ref
            assert any(target == d or d in target.parents for d in shipped), f"{f.relative_to(ROOT)} names {ref}"


def test_a_citation_of_a_part_of_the_contract_points_at_that_part():
    """ "docs/EXERCISES.md, Clarifications (…)" or "docs/EXERCISES.md conventions" name a part
    of the contract without a §: the hint points at its line, not at line 1 (blind tester R-A)."""
    from autograder.core.feedback import citations

    lines = (ROOT / "docs" / "EXERCISES.md").read_text(encoding="utf-8").splitlines()
    for text, holds in (
        ("docs/EXERCISES.md, Clarifications (rule-checked files)", "## Clarifications"),
        ("docs/EXERCISES.md conventions (broadcasting)", "Conventions that hold everywhere"),
        ("docs/EXERCISES.md, CPU-time limits", "Each call has a CPU-time limit"),  # the timeout hint (tester R-BF)
    ):
        (place,) = citations.resolve(text, ROOT / "docs", texts=TEXTS)
        assert place.line is not None and holds in lines[place.line - 1], (text, place)


def test_a_hidden_suites_own_probes_run_only_where_exercise_code_gets_no_trace_function():
    """A probe written in a suite is sent to the worker as source, and its frame sits under the
    exercise code it calls. Where no rule is judged (no ``WORKER_SCANNED``), exercise code may
    set a trace function (SECURITY.md, *What is not defended*), which is handed that frame
    (blind red-team tester R-CK read the requests there): so a hidden suite's own probes — its
    code, unlike the shipped course helpers' — belong only to suites whose workers refuse trace
    functions to exercise code."""
    import ast

    for path in sorted((ROOT / "tests" / "suites").glob("*/test_*_hidden.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        probes = [
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and any(getattr(d, "id", None) == "probe" for d in node.decorator_list)
        ]
        scanned = any(
            isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "WORKER_SCANNED" for t in node.targets)
            for node in tree.body
        )
        assert scanned or not probes, f"{path.relative_to(ROOT)}: probes {probes} in a suite without WORKER_SCANNED"
