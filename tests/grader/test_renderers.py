"""Every output is rendered from the same Results: Gradescope's results.json (validated
against its schema), our JSON (validated against ours), markdown, GitHub workflow
commands and the terminal. Text that came from a submission cannot inject markup,
workflow commands or terminal escapes."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace

import jsonschema
import pytest
from conftest import ROOT, SOLUTIONS, grade, make_submission

from autograder.config import load
from autograder.core import escape
from autograder.renderers import Style, github, gradescope, markdown, render
from autograder.renderers.common import points, visible_only
from autograder.runner import scoring
from autograder.runner.manifest import RunManifest

SCHEMAS = ROOT / "autograder" / "schemas"
GRADESCOPE_SCHEMA = json.loads((SCHEMAS / "gradescope-results.schema.json").read_text())
RESULTS_SCHEMA = json.loads((SCHEMAS / "results.schema.json").read_text())
HOSTILE = "line1\n::error file=evil.py,line=1::fake\n| cell | <script>alert(1)</script> [red]markup[/red] \x1b[31mred\x1b[0m %0A"


@pytest.fixture(scope="module")
def config():
    return load(ROOT / "grading.toml").select(["qkv"])


@pytest.fixture(scope="module")
def hostile_results(config):
    tests = config.tests
    feedback = {
        "check": "qkv.project_qkv(…)",
        "problem": "raised",
        "detail": HOSTILE,
        "hints": [{"id": "general/todo", "text": "t", "section": "s"}],
        "grids": [
            {
                "title": HOSTILE,
                "rows": "query",
                "cols": "key",
                "expected": [["1", "0"], ["0.5", "0.5"]],
                "got": [["1", "0"], ["0.45|", "0.55"]],
                "bad": [[False, False], [True, True]],
            }
        ],
        "frames": [{"file": "qkv.py", "line": 3, "function": "project_qkv"}],
        "error": {"type": "ValueError", "message": HOSTILE, "frames": []},
    }
    report = {
        "tests": [
            {
                "nodeid": t.node_id,
                "outcome": "failed",
                "metadata": {
                    "result": {"kind": "submission", "feedback": feedback},
                    "printed": [{"call": "c", "text": HOSTILE, "dropped": 5}],
                },
            }
            for t in tests
        ]
    }
    return scoring.build(RunManifest.plan(config), report, {"path": HOSTILE, "modules": {}, "ignored": [HOSTILE]})


def test_gradescope_output_of_a_real_run_is_schema_valid(solutions_graded):
    graded = solutions_graded  # the reference's one run (conftest): JSON results and Gradescope output
    assert graded.rc == 0, graded.stderr
    data = json.loads(graded.output.read_text())
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    config = load(ROOT / "grading.toml")
    assert data["score"] == pytest.approx(config.total_points)
    assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
    assert sum(t["max_score"] for t in data["tests"]) == pytest.approx(config.total_points)
    summary, *graded_tests = data["tests"]
    assert summary["tags"][0] == gradescope.SUMMARY_TAG and summary["max_score"] == 0  # informational: adds no points
    assert len(graded_tests) == len(config.tests)
    skills = set(config.skills)
    for test in graded_tests:
        assert set(test["tags"]) & skills, test["tags"]
        assert test["visibility"] in ("visible", "after_due_date")


def test_gradescope_output_of_stubs_is_schema_valid_and_zero(stubs_graded):
    data = json.loads(stubs_graded.output.read_text())  # the stubs' one run (conftest)
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    assert data["score"] == 0
    scored = [t for t in data["tests"] if t["max_score"] > 0]  # rule gates carry no points and pass for stubs
    assert all(t["status"] == "failed" and t["score"] == 0 for t in scored)
    assert all("TODO(" in t["output"] for t in scored), [t["output"] for t in scored if "TODO(" not in t["output"]][:2]


def test_our_json_output_is_schema_valid(solutions_graded):
    jsonschema.validate(solutions_graded.data, RESULTS_SCHEMA)
    assert solutions_graded.data["seed"] is not None and solutions_graded.data["suite_hash"]
    assert solutions_graded.data["versions"]["torch"].startswith("2.13")


def test_hidden_visibility_maps_to_the_configured_gradescope_value(hostile_results):
    data = gradescope.to_dict(hostile_results, {"visible": "visible", "hidden": "after_published"})
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    kinds = {t["visibility"] for t in data["tests"]}
    assert kinds == {"visible", "after_published"}
    assert data["tests"][0]["name"] == gradescope.SUMMARY_NAME and data["tests"][0]["visibility"] == "after_published"
    assert_nothing_hidden_before_the_due_date(data)


# --------------------------------------------------------------------------- hidden stays hidden
#: every field of results.json (Gradescope's spec), so that a new one must be classified here
TOP_FIELDS = {
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
}
TEST_FIELDS = {
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
}


def _leaves(path: str, value) -> list[tuple[str, object]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(f"{path}.{key}", item)]
    if isinstance(value, list):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(f"{path}[{i}]", item)]
    return [(path, value)]


def shown_before_the_due_date(data: dict) -> list[tuple[str, object]]:
    """Every leaf of results.json a student can see before the due date, by Gradescope's
    rules: the top level (``score`` only while no test is hidden, since Gradescope hides the
    total then; ``extra_data`` is stored, not shown, and is checked all the same) and every
    field of each test whose visibility is ``visible``. ``stdout`` must be instructors' only."""
    assert set(data) <= TOP_FIELDS, set(data) - TOP_FIELDS
    assert data["stdout_visibility"] == "hidden"
    default = data.get("visibility", "visible")
    later = any(t.get("visibility", default) != "visible" for t in data["tests"])
    shown: list[tuple[str, object]] = []
    for key, value in data.items():
        if key == "tests":
            for i, test in enumerate(value):
                assert set(test) <= TEST_FIELDS, set(test) - TEST_FIELDS
                if test.get("visibility", default) == "visible":
                    shown += _leaves(f"tests[{i}]", test)
        elif not (key == "score" and later):
            shown += _leaves(key, value)
    return shown


def _appears(secret: str, text: str) -> bool:
    """``secret`` in ``text``; a figure ("0 / 1", "3/4") only as a whole one: "0 / 1" is not in
    a visible test's "0 / 1.5 points"."""
    if not (secret[:1].isdigit() and secret[-1:].isdigit()):
        return secret in text
    return re.search(rf"(?<![\d.]){re.escape(secret)}(?!\.?\d)", text) is not None


def test_the_leak_check_finds_a_hidden_figure_only_as_a_whole_figure():
    """A visible test failed at "0 / 1.5 points" while a hidden one scored 0 / 1: the check
    once read that as the hidden score shown (found grading a one-mistake qkv by hand)."""
    assert _appears("0 / 1", "scored 0 / 1 points") and _appears("0 / 1", "(0 / 1).")
    assert not _appears("0 / 1", "0 / 1.5 points") and not _appears("0 / 1", "10 / 1") and not _appears("3/4", "13/45")
    assert _appears("test_hidden_name", "see test_hidden_name_more")  # names: any occurrence


def assert_nothing_hidden_before_the_due_date(data: dict) -> None:
    """No field shown before the due date names a hidden test, gives its score, or gives a
    figure that includes hidden tests (a skill's score, pass count or total, the overall
    score); visible tests are numbered without gaps; the figures with hidden tests are in
    the summary test, which adds no points."""
    graded = [t for t in data["tests"] if t["tags"][0] != gradescope.SUMMARY_TAG]
    hidden = [t for t in graded if t["visibility"] != "visible"]
    assert hidden, "nothing to check: no test is hidden"
    shown = shown_before_the_due_date(data)
    text = "\n".join(str(value) for _, value in shown)
    secrets: dict[str, str] = {}
    for test in hidden:
        secrets[test["name"]] = f"the name of a hidden test ({test['name']})"
        secrets[test["name"].split(": ", 1)[1]] = f"the name of a hidden test ({test['name']})"
    visible_scores = {f"{points(t['score'])} / {points(t['max_score'])}" for t in graded if t["visibility"] == "visible"}
    for test in hidden:
        figure = f"{points(test['score'])} / {points(test['max_score'])}"
        if figure not in visible_scores:
            secrets[figure] = f"a hidden test's score ({test['name']})"
    by_skill: dict[str, list[dict]] = {}
    for test in graded:
        by_skill.setdefault(test["tags"][0], []).append(test)
    for skill, tests in by_skill.items():
        shown_tests = [t for t in tests if t["visibility"] == "visible"]
        numbers = [t["number"].split(".")[1] for t in shown_tests]
        assert numbers == [str(i) for i in range(1, len(shown_tests) + 1)], (
            skill,
            numbers,
        )  # no gap tells where a hidden test sits
        for group, label in ((tests, "with hidden tests"), (shown_tests, "visible")):
            weighted = [t for t in group if t["max_score"] > 0]
            figures = (
                f"{points(sum(t['score'] for t in group))} / {points(sum(t['max_score'] for t in group))}",
                f"{sum(t['status'] == 'passed' for t in weighted)}/{len(weighted)}",
            )
            if label == "visible":
                for figure in figures:
                    secrets.pop(figure, None)
            else:
                secrets.update({figure: f"{skill}'s score or pass count with hidden tests" for figure in figures})
    overall = f"{points(data['score'])} / {points(sum(t['max_score'] for t in graded))}"
    visible_overall = (
        f"{points(sum(t['score'] for t in graded if t['visibility'] == 'visible'))} / "
        f"{points(sum(t['max_score'] for t in graded if t['visibility'] == 'visible'))}"
    )
    if overall != visible_overall:
        secrets[overall] = "the total score"
    leaks = [(why, path) for secret, why in secrets.items() for path, value in shown if _appears(secret, str(value))]
    assert not leaks, leaks[:5]
    assert text  # something is shown: the visible tests and the top-level output
    if any(t["visibility"] == "visible" for t in graded) and data.get("execution_time"):
        raise AssertionError("the run's wall time includes the hidden tests'")
    summaries = [t for t in data["tests"] if t["tags"][0] == gradescope.SUMMARY_TAG]
    assert len(summaries) == 1 and summaries[0]["visibility"] != "visible"
    assert summaries[0]["score"] == summaries[0]["max_score"] == 0
    assert data["score"] == pytest.approx(sum(t["score"] for t in graded))


def test_gradescope_shows_no_hidden_result_before_the_due_date(tmp_path):
    """The case of issue 17: a softmax over the wrong axis fails hidden tests too. Before the
    due date the student learns the visible tests' results and that hidden tests exist;
    the skill's score and pass count with hidden tests are in the after-due-date summary."""
    source = (SOLUTIONS / "row_softmax.py").read_text(encoding="utf-8")
    right = (
        "row_max = scores.amax(dim=dim, keepdim=True)  # [...,L,1] for dim=-1\n"
        "    exps = torch.exp(scores - row_max)  # every entry in [0, 1]; −∞ → 0\n"
        "    return exps / exps.sum(dim=dim, keepdim=True)"
    )
    assert right in source
    wrong = source.replace(
        right,
        "row_max = scores.amax(dim=0, keepdim=True)\n    exps = torch.exp(scores - row_max)\n"
        "    return exps / exps.sum(dim=0, keepdim=True)",
    )
    sub = make_submission(tmp_path / "sub", {"row_softmax.py": wrong})
    out = tmp_path / "results.json"
    graded = grade(sub, "--skill", "row_softmax", fmt="gradescope", output=out, seed=1)
    assert graded.rc == 0, graded.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    tests = [t for t in data["tests"] if t["tags"][0] == "row_softmax"]
    hidden = [t for t in tests if t["visibility"] == "after_due_date"]
    assert hidden and any(t["score"] < t["max_score"] for t in hidden)  # hidden tests lose points too
    assert_nothing_hidden_before_the_due_date(data)
    assert "Hidden tests of row\\_softmax also count toward your grade" in data["output"]
    summary = next(t for t in data["tests"] if t["tags"][0] == gradescope.SUMMARY_TAG)
    assert summary["visibility"] == "after_due_date"
    full = f"{points(sum(t['score'] for t in tests))} / {points(sum(t['max_score'] for t in tests))} points"
    passed = (
        f"{sum(t['status'] == 'passed' for t in tests if t['max_score'] > 0)} of "
        f"{sum(t['max_score'] > 0 for t in tests)} tests passed"
    )
    assert f"row_softmax: {full}, {passed}" in summary["output"]


@pytest.mark.parametrize("hidden_as", ["after_due_date", "hidden"])
def test_gradescope_keeps_hidden_results_out_of_what_is_shown_for_any_visibility(hostile_results, hidden_as):
    data = gradescope.to_dict(hostile_results.public(), {"visible": "visible", "hidden": hidden_as})
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    assert_nothing_hidden_before_the_due_date(data)
    assert data["tests"][0]["visibility"] == hidden_as


def test_gradescope_shows_every_total_when_no_test_is_hidden(hostile_results):
    data = gradescope.to_dict(hostile_results.public(), {"visible": "visible", "hidden": "visible"})
    assert gradescope.SUMMARY_TAG not in {t["tags"][0] for t in data["tests"]}
    assert data["output"] == markdown.render(hostile_results.public(), details=False)


def _markdown_tokens(text: str):
    from markdown_it import MarkdownIt

    for token in MarkdownIt("commonmark").enable("table").parse(text):
        yield token
        yield from token.children or []


def assert_markdown_is_inert(text: str) -> None:
    """Parsed as markdown: no link, image or HTML but our own marker and <sub>, and no
    mention, issue reference or bare link in any rendered text outside code."""
    tokens = list(_markdown_tokens(text))
    assert not [t for t in tokens if t.type in ("link_open", "image")]
    html = {t.content.strip() for t in tokens if t.type in ("html_inline", "html_block")}
    assert html <= {markdown.MARKER, "<sub>", "</sub>"}, html
    prose = " ".join(t.content for t in tokens if t.type == "text")
    for bad in ("@team", "@course-staff", "@octocat", "http://", "https://", "www.evil", "#1 ", "\x1b"[:0] + "\x1b"):
        assert bad not in prose, (bad, prose[:300])
    assert not any(ch in text for ch in "\x1b\x9b\u202e\x00\r")


def test_markdown_printed_to_a_job_log_holds_no_workflow_command(hostile_results, config):
    """``--format markdown`` prints to stdout too: a student's ``⏎::error …`` in a code block
    begins a line the runner reads (after trimming the indent) as a command."""
    text = render(hostile_results, "markdown", config)
    assert "::error file=evil.py" not in "\n".join(line.strip() for line in text.splitlines() if line.strip().startswith("::"))
    assert not [line for line in text.splitlines() if escape.is_workflow_command(line)]
    assert "error file=evil.py" in text  # still shown


def test_markdown_escapes_submission_text(hostile_results):
    text = markdown.render(hostile_results.public())
    assert_markdown_is_inert(text)
    assert "| Skill | Score |" in text and markdown.MARKER in text
    for line in text.splitlines():
        if line.startswith("|") and "0\\.45" in line:
            assert line.count("|") == line.count("\\|") + 2 * 2 + 1 + 1  # only the table's own pipes are bare
    assert "⚠" in text  # wrong grid cells are marked


def test_markdown_code_spans_carry_no_backslash_escapes(hostile_results):
    """Test names sit in code spans, where a backslash would show literally
    (`mha\\_reshape/...`); hint ids are for instructors (JSON) and not in the student's view."""
    text = markdown.render(hostile_results.public())
    spans = [t.content for t in _markdown_tokens(text) if t.type == "code_inline"]
    assert spans and not [s for s in spans if "\\" in s], spans
    assert "general/todo" not in text


def test_github_commands_cannot_be_injected(hostile_results):
    out = github.render(hostile_results.public())
    ours = ("::error ", "::notice ", "::group::", "::endgroup::")
    for line in out.splitlines():
        assert not escape.is_workflow_command(line) or line.startswith(ours), line
    assert not any(line.startswith("::error file=evil.py") for line in out.splitlines())


def test_github_annotation_points_at_the_students_function(tmp_path):
    sub = tmp_path / "exercises"
    sub.mkdir()
    source = (SOLUTIONS / "qkv.py").read_text().replace("return scores / math.sqrt(d_k)", "return scores / d_k")
    (sub / "qkv.py").write_text(source)
    graded = grade(sub, "--skill", "qkv", fmt="github", cwd=tmp_path)
    assert graded.rc == 0, graded.stderr
    line = next(i + 1 for i, text in enumerate(source.splitlines()) if text.startswith("def scale_scores"))
    annotations = [a for a in graded.stdout.splitlines() if a.startswith("::error ")]
    assert len(annotations) == len({a.split("::")[1] for a in annotations}), annotations  # one per place
    here = [a for a in annotations if a.startswith(f"::error file=exercises/qkv.py,line={line},title=qkv%3A ")]
    assert len(here) == 1 and "test_scale_scores_divides_by_sqrt_dk" in here[0], annotations
    assert "::notice title=Score::" in graded.stdout


@pytest.mark.parametrize("width", [40, 57, 64, 80, 97, 110])
def test_no_line_of_the_text_format_reads_as_a_workflow_command_at_any_width(config, width):
    """Student text is escaped where the text format writes it, and a wrap at the terminal's
    width can still start a line inside it: a helper named ``evil⏎::error::FILENAME.py``
    wrapped so that ``::error::…`` began a line of an 80-column log (blind red-team tester
    R-T). The format's last pass breaks such a line; the names are still shown."""
    names = ["evil\n::error::FILENAME", "x" * 30 + " ::warning::W", "##[group]G", "a ##vso[task.setvariable]b"]
    helpers = {n: {"file": f"{n}.py", "problem": f"not importable: {n}"} for n in names}
    results = scoring.build(RunManifest.plan(config), {"tests": []}, {"path": "sub", "modules": {}, "helpers": helpers})
    for color in (None, "truecolor", "markdown"):
        if color == "markdown":  # printed to stdout too, with student text in code blocks
            text = render(results, "markdown", config)
        else:
            text = render(results, "text", config, style=Style(color_system=color, width=width, terminal=color is not None))
        bad = [line for line in text.splitlines() if escape.is_workflow_command(re.sub(r"\x1b\[[0-9;]*m", "", line))]
        assert not bad, bad
        assert "FILENAME" in text and "setvariable" in text


@pytest.mark.parametrize("width", [60, 80, 120])
def test_a_footer_note_wraps_with_an_indent_so_no_student_name_starts_a_line(config, width):
    """The notes under the tables name the student's files; wrapped by rich, a line could
    begin with one of them, e.g. a file named to read like a score line (blind red-team
    tester R-BQ). Every wrapped line of a note is indented: what starts a line is ours."""
    names = [f"{'x' * (i * 7 % 23)}Score 100 of 100 total {i}.txt" for i in range(10)]
    results = scoring.build(RunManifest.plan(config), {"tests": []}, {"path": "sub", "modules": {}, "ignored": names})
    text = render(results, "text", config, style=Style(width=width))
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("Other files, not graded: "))
    rest = list(itertools.takewhile(lambda line: line.startswith("  "), lines[first + 1 :]))
    assert rest and all(len(line) <= width for line in lines[first : first + 1 + len(rest)]), lines[first:]
    assert not [line for line in lines if line.startswith(("Score 100", "x"))], lines[first:]
    shown = " ".join(" ".join(lines[first : first + 1 + len(rest)]).split())
    assert all(" ".join(name.split()) in shown for name in names), shown


def test_text_renders_grids_hints_and_no_escapes_to_a_file(hostile_results, config):
    text = render(hostile_results, "text", config)
    assert "\x1b" not in text
    assert "Hint" in text and "reread" in text
    assert "0.45|" in text  # the grid cell, shown as text


def test_every_format_renders_a_broken_run(config):
    broken = scoring.build(RunManifest.plan(config), None, {"path": "x"}, status="error", message="the grading run broke")
    for fmt in ("text", "json", "gradescope", "markdown", "github"):
        out = render(broken, fmt, config)
        assert "the grading run broke" in out
    jsonschema.validate(json.loads(render(broken, "gradescope", config)), GRADESCOPE_SCHEMA)
    jsonschema.validate(json.loads(render(broken, "json", config)), RESULTS_SCHEMA)


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_an_interrupted_run_says_why_once_and_shows_no_zeros_as_a_score(config, fmt):
    """No test ran: its reason once at the top (and, in the terminal, last), each skill one
    line, never the reason under each of ~100 tests, nor a score table of zeros."""
    stopped = scoring.build(
        RunManifest.plan(config), None, {"path": "x"}, status="interrupted", message="grading was interrupted (SIGTERM)"
    )
    out = render(stopped, fmt, config)
    assert out.count("grading was interrupted (SIGTERM)") <= 2, out
    assert len(re.findall(r"not graded\\?: the run did not complete", out)) == len(config.skills)  # markdown escapes ":"
    if fmt == "text":
        assert out.rstrip().endswith("Grading did not complete: grading was interrupted (SIGTERM)")
        assert "total" not in out and "0/100" not in out


def test_the_labels_note_comes_only_with_a_label_the_report_shows(config):
    """ "Labels: a label such as W7-1 names one printed result…" explains a label the reader
    can see; a skill said in one line (interrupted, not started) shows none of its tests'
    labels (blind tester L: the stubs' report explained labels it never showed)."""
    tests = config.tests
    labelled = {"check": "qkv (W7-1)", "problem": "values", "detail": "expected W7-1's numbers", "hints": []}
    report = {
        "tests": [
            {"nodeid": t.node_id, "outcome": "failed", "metadata": {"result": {"kind": "check", "feedback": labelled}}}
            for t in tests
        ]
    }
    shown = scoring.build(RunManifest.plan(config), report, {"path": "x", "modules": {}})
    assert "Labels: a label such as" in render(shown, "text", config)
    stopped = scoring.build(
        RunManifest.plan(config), None, {"path": "x"}, status="interrupted", message="grading was interrupted (W7-1)"
    )
    assert "Labels:" not in render(stopped, "text", config)


def test_a_visible_only_grade_says_the_official_grade_adds_hidden_tests(config):
    """A student's ``make grade`` at full marks is not the official grade: the report says the
    hidden tests come on top (blind tester R-BF submitted a function that failed on the
    hidden tests' shapes, reading 41.5/41.5 as done); a run with the hidden tests says nothing."""
    visible = [t for t in config.tests if t.visibility == "visible"]
    report = {"tests": [{"nodeid": t.node_id, "outcome": "passed"} for t in visible]}
    local = scoring.build(RunManifest.plan(config), report, {"path": "x", "modules": {}})
    local.suite_hash, local.visible_suite_hash = "a" * 64, "b" * 64
    local.skills = [replace(sk, tests=[t for t in sk.tests if t.visibility == "visible"]) for sk in local.skills]
    assert visible_only(local) and "Local score: the visible tests only" in render(local, "text", config)
    full = scoring.build(RunManifest.plan(config), {"tests": []}, {"path": "x", "modules": {}})
    full.suite_hash, full.visible_suite_hash = "a" * 64, "b" * 64
    assert not visible_only(full) and "Local score" not in render(full, "text", config)
    local.suite_hash = local.visible_suite_hash  # a course without hidden tests
    assert not visible_only(local)


def test_the_reread_footer_lists_the_sections_most_failures_cite_first():
    """Three sections a skill, those cited by the most failing tests first (ties in the order
    they appear), and how many more the hints above cite (blind tester R-BF: the alphabetical
    first three left out the sections of two failing tests)."""
    from types import SimpleNamespace

    from autograder.renderers.common import sections_to_reread

    def test(*sections):
        return SimpleNamespace(hints=[{"id": f"mha_reshape/{s}", "section": s} for s in sections])

    skill = SimpleNamespace(
        tests=[test("Week 7 §15", "Day 1 §4.3"), test("Day 1 §5.1"), test("Week 7 §15"), test("Day 1 §A.5", "Day 1 §5.2")]
    )
    skill.tests.append(SimpleNamespace(hints=[{"id": "general/timeout", "section": "docs/EXERCISES.md"}]))
    assert sections_to_reread(skill) == ["Week 7 §15", "Day 1 §4.3", "Day 1 §5.1", "Day 1 §A.5", "Day 1 §5.2"]


# --------------------------------------------------------------------------- the property rule before the due date
def _qkv_report(config, hidden_value_tests_pass: bool) -> dict:
    """A qkv run whose visible value tests all fail while its property tests pass (right
    shapes and dtypes, wrong values on float32), and whose hidden value tests pass or fail
    (float64 done right or not: only hidden tests use float64)."""
    properties = set(config.skills["qkv"].properties)
    failed = {"kind": "check", "feedback": {"check": "qkv.project_qkv(…)", "problem": "values", "detail": "wrong values"}}
    tests = []
    for t in config.tests:
        passes = t.name in properties or (t.visibility == "hidden" and hidden_value_tests_pass)
        tests.append({"nodeid": t.node_id, "outcome": "passed" if passes else "failed", "metadata": {"result": failed}})
    return {"tests": tests}


def test_what_is_shown_before_the_due_date_depends_on_the_visible_tests_alone(config):
    """Issue 28 C: property tests count once another test of the skill scores. Two uploads
    whose visible tests do the same but whose float64 behaviour differs (hidden tests only)
    once showed "Visible tests: 1.25 / 8.5" vs "0 / 8.5": the hidden tests decided whether
    the visible property tests counted. Before the due date the rule is applied over the
    visible tests alone; the final score applies it over all, and the points the hidden
    tests release come in an entry shown with them, so the tests still add up."""
    assert any(config.skills["qkv"].properties), "qkv has no property test to check"
    shown, finals = [], []
    for hidden_pass in (True, False):
        results = scoring.build(RunManifest.plan(config), _qkv_report(config, hidden_pass), {"path": "sub", "modules": {}})
        data = gradescope.to_dict(results.public(), {"visible": "visible", "hidden": "after_due_date"})
        jsonschema.validate(data, GRADESCOPE_SCHEMA)
        jsonschema.validate(results.to_dict(), RESULTS_SCHEMA)
        assert_nothing_hidden_before_the_due_date(data)
        shown.append(shown_before_the_due_date(data))
        finals.append(data["score"])
    assert shown[0] == shown[1], [(a, b) for a, b in zip(*shown) if a != b][:3]
    zeroed = [v for k, v in shown[0] if k.endswith(".output") and gradescope.BEFORE_DUE_PROPERTY in str(v)]
    assert zeroed, "a visible property test at 0 points does not say why"
    assert "Visible tests\\: 0 / " in dict(shown[0])["output"]  # markdown-escaped
    properties = set(config.skills["qkv"].properties)
    visible_properties = sum(t.weight for t in config.tests if t.name in properties and t.visibility == "visible")
    hidden_points = sum(t.weight for t in config.tests if t.visibility == "hidden" and t.name not in properties)
    assert visible_properties > 0
    # the final score still counts the visible property tests once a hidden test scored
    hidden_properties = sum(t.weight for t in config.tests if t.name in properties and t.visibility == "hidden")
    assert finals[0] == pytest.approx(visible_properties + hidden_points + hidden_properties)
    assert finals[1] == 0


def _gated_report(config, skill: str, gate_breaks: bool) -> dict:
    """A run of ``skill`` whose every test passes but its (hidden) rule test, which fails with a
    proven violation or passes."""
    gates = set(config.skills[skill].gates)
    broken = {
        "kind": "check",
        "feedback": {"check": "rule", "problem": "constraint", "detail": "aten::_softmax recorded in hidden_secret_call"},
    }
    tests = []
    for t in config.tests:
        if t.skill != skill:
            continue
        fails = t.name in gates and gate_breaks
        tests.append({"nodeid": t.node_id, "outcome": "failed" if fails else "passed", "metadata": {"result": broken}})
    return {"tests": tests}


@pytest.mark.parametrize("skill", ["row_softmax", "custom_backward"])
def test_a_rule_broken_in_hidden_tests_alone_is_not_shown_before_the_due_date(skill):
    """A skill whose rule test is hidden: a submission that breaks the rule only where a
    hidden test looks once saw its visible tests at 0 before the due date, each naming the
    hidden rule test. What is shown then is now the same whether the hidden rule test failed
    or not; the skill still scores 0 in the end, and the deduction comes in an entry shown
    with the hidden tests, so the tests still add up to the total."""
    config = load(ROOT / "grading.toml").select([skill])
    gates = set(config.skills[skill].gates)
    assert gates and all(t.visibility == "hidden" for t in config.tests if t.name in gates), "no hidden gate to check"
    manifest = RunManifest.plan(config)
    shown, finals, datas = [], [], []
    for breaks in (False, True):
        results = scoring.build(manifest, _gated_report(config, skill, breaks), {"path": "sub", "modules": {}})
        jsonschema.validate(results.to_dict(), RESULTS_SCHEMA)
        data = gradescope.to_dict(results.public(), {"visible": "visible", "hidden": "after_due_date"})
        jsonschema.validate(data, GRADESCOPE_SCHEMA)
        assert_nothing_hidden_before_the_due_date(data)
        shown.append(shown_before_the_due_date(data))
        finals.append(data["score"])
        datas.append(data)
    assert shown[0] == shown[1], [(a, b) for a, b in zip(*shown) if a != b][:3]
    assert finals[0] == config.skills[skill].points and finals[1] == 0
    deductions = [t for t in datas[1]["tests"] if gradescope.DEDUCTION_TAG in t["tags"]]
    assert len(deductions) == 1 and deductions[0]["visibility"] == "after_due_date"
    visible = sum(t.weight for t in config.tests if t.skill == skill and t.visibility == "visible")
    assert deductions[0]["score"] == pytest.approx(-visible) and visible > 0
    assert next(iter(gates)) in deductions[0]["output"]
    assert "hidden_secret_call" not in json.dumps(datas[1])  # the worker's text about a hidden test: redacted
    assert not [t for t in datas[0]["tests"] if gradescope.DEDUCTION_TAG in t["tags"]]


def test_nbgraders_feedback_says_a_rule_is_broken_without_naming_the_hidden_test():
    """nbgrader's feedback shows the visible tests as Gradescope does before the due date, and
    the skill's score with hidden tests: a rule broken in hidden tests alone gave 0 there with
    every visible test passed and no word of why. It says so now, without the hidden test's
    name (its note promises hidden names are not shown)."""
    from traitlets.config import Config as TraitletsConfig

    config = load(ROOT / "grading.toml").select(["row_softmax"])
    results = scoring.build(RunManifest.plan(config), _gated_report(config, "row_softmax", True), {"path": "sub", "modules": {}})
    template = ROOT / "autograder" / "instructor" / "release" / "templates" / "nbgrader_score.py"
    ns = {"here": str(ROOT), "c": TraitletsConfig(), "__name__": "nbgrader_config"}
    exec(compile(template.read_text(encoding="utf-8"), str(template), "exec"), ns)  # our template, as nbgrader_config.py runs it
    ns["GRADER"] = str(ROOT)
    text = ns["feedback"](results.public().to_dict(), "row_softmax")
    assert "row_softmax scored 0 / 15" in text and "It scores 0: it breaks a rule of the exercise" in text
    gate = next(iter(config.skills["row_softmax"].gates))
    assert gate not in text and "hidden_secret_call" not in text


def test_a_line_reported_twice_in_a_row_is_shown_once_under_your_code():
    """Two facts found at one line (two operators a rule refused there) give the same frame
    twice in a row: "Your code" names it once (blind fairness tester R-AI read it twice)."""
    from autograder.core.results import TestOutcome
    from autograder.renderers.common import frame_lines

    frame = {"file": "exercises/custom_backward.py", "line": 16, "function": "softmax_backward", "code": "return _sb(d, w)"}
    other = dict(frame, line=20, function="attention_backward", code="ds = softmax_backward(g, w)")
    test = TestOutcome("t", "t", "custom_backward", "visible", 1.0, 0.0, "failed", frames=[frame, frame, other, frame])
    lines = frame_lines(test)
    assert [line for line in lines if ":16" in line] == [lines[0], lines[4]]  # not twice in a row; again after :20
    assert len(lines) == 6
