"""Every output is rendered from the same Results: Gradescope's results.json (validated
against its schema), our JSON (validated against ours), markdown, GitHub workflow
commands and the terminal. Text that came from a submission cannot inject markup,
workflow commands or terminal escapes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from autograder import results as results_mod
from autograder.config import load
from autograder.renderers import escape, github, gradescope, markdown, render
from autograder.runner.manifest import RunManifest
from conftest import EXERCISES, ROOT, SOLUTIONS, grade

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
    feedback = {"check": "qkv.project_qkv(…)", "problem": "raised", "detail": HOSTILE, "hints": [{"id": "general/todo", "text": "t", "section": "s"}],
                "grids": [{"title": HOSTILE, "rows": "query", "cols": "key", "expected": [["1", "0"], ["0.5", "0.5"]], "got": [["1", "0"], ["0.45|", "0.55"]], "bad": [[False, False], [True, True]]}],
                "frames": [{"file": "qkv.py", "line": 3, "function": "project_qkv"}], "error": {"type": "ValueError", "message": HOSTILE, "frames": []}}
    report = {"tests": [{"nodeid": t.node_id, "outcome": "failed", "metadata": {"result": {"kind": "submission", "feedback": feedback}, "printed": [{"call": "c", "text": HOSTILE, "dropped": 5}]}} for t in tests]}
    return results_mod.build(RunManifest.plan(config), report, {"path": HOSTILE, "modules": {}, "ignored": [HOSTILE]})


def test_gradescope_output_of_a_real_run_is_schema_valid(tmp_path):
    out = tmp_path / "results.json"
    graded = grade(SOLUTIONS, fmt="gradescope", output=out)
    assert graded.rc == 0, graded.stderr
    data = json.loads(out.read_text())
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    config = load(ROOT / "grading.toml")
    assert data["score"] == pytest.approx(config.total_points)
    assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
    assert len(data["tests"]) == len(config.tests)
    skills = set(config.skills)
    for test in data["tests"]:
        assert set(test["tags"]) & skills, test["tags"]
        assert test["visibility"] in ("visible", "after_due_date")


def test_gradescope_output_of_stubs_is_schema_valid_and_zero(tmp_path):
    out = tmp_path / "results.json"
    graded = grade(EXERCISES, fmt="gradescope", output=out)
    data = json.loads(out.read_text())
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


def test_text_renders_grids_hints_and_no_escapes_to_a_file(hostile_results, config):
    text = render(hostile_results, "text", config)
    assert "\x1b" not in text
    assert "Hint" in text and "reread" in text
    assert "0.45|" in text  # the grid cell, shown as text


def test_every_format_renders_a_broken_run(config):
    broken = results_mod.build(RunManifest.plan(config), None, {"path": "x"}, status="error", message="the grading run broke")
    for fmt in ("text", "json", "gradescope", "markdown", "github"):
        out = render(broken, fmt, config)
        assert "the grading run broke" in out
    jsonschema.validate(json.loads(render(broken, "gradescope", config)), GRADESCOPE_SCHEMA)
    jsonschema.validate(json.loads(render(broken, "json", config)), RESULTS_SCHEMA)
