"""One suite identity on every path (runner/identity.py): the instructors' repository, the
student tree and the Gradescope bundle name the same release's suites with the same two
hashes, whatever their copies of grading.toml say about limits; and the course seed key
(release/seedkey.py) is random, made once, outside the repository, the same every release."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ROOT

from autograder.config import load
from autograder.instructor.release import gradescope, seedkey, student
from autograder.instructor.release.context import ReleaseContext
from autograder.instructor.release.files import write_tree
from autograder.runner import identity, seeding

CONFIG = load(ROOT / "grading.toml")
KEY = b"0123456789abcdef0123456789abcdef"


def _ctx(out: Path) -> ReleaseContext:
    ident = identity.identify(CONFIG)
    return ReleaseContext(
        repo=ROOT,
        config=CONFIG,
        out=out,
        version="1.0.0",
        commit="0" * 40,
        suite_hash=ident.suite,
        visible_suite_hash=ident.visible,
        seed_key=KEY,
    )


def test_repository_knows_both_hashes_and_they_differ():
    ident = identity.identify(CONFIG)
    assert len(ident.suite) == 64 and len(ident.visible) == 64 and ident.suite != ident.visible


def test_student_tree_and_bundle_name_the_same_suites_as_the_repository(tmp_path):
    repo = identity.identify(CONFIG)
    ctx = _ctx(tmp_path / "dist")
    write_tree(tmp_path / "student", student.student_files(ctx))
    write_tree(tmp_path / "bundle", gradescope.bundle_files(ctx))
    in_student = identity.identify(load(tmp_path / "student" / "grading.toml"))
    in_bundle = identity.identify(load(tmp_path / "bundle" / "grading.toml"))
    assert in_student == repo  # the full hash read from release.json, the visible part computed
    assert in_bundle == repo  # computed: the bundle's other [limits] do not change it
    assert json.loads((tmp_path / "student" / "release.json").read_text())["visible_suite_hash"] == repo.visible


def test_a_student_grade_of_one_assignment_names_the_suites_of_that_assignments_bundle(tmp_path):
    assert CONFIG.assignments, "the course's grading.toml hands out assignments: this test needs them"
    ctx = _ctx(tmp_path / "dist")
    write_tree(tmp_path / "student", student.student_files(ctx))
    tree = load(tmp_path / "student" / "grading.toml")
    for name in CONFIG.assignments:
        repo = identity.identify(CONFIG.for_assignment(name))
        bundle = gradescope.assignment_context(ctx, name)
        assert identity.identify(tree.for_assignment(name)) == repo  # was: suite None ("suite unknown")
        assert (repo.suite, repo.visible) == (bundle.suite_hash, bundle.visible_suite_hash)
        assert repo.suite != identity.identify(CONFIG).suite
    # a record is believed only for the visible part it names
    record = json.loads((tmp_path / "student" / "release.json").read_text())
    name = next(iter(CONFIG.assignments))
    assert identity.recorded_suite(record, "0" * 64) is None
    record["assignments"][name]["suite_hash"] = 7  # not a hash: never shown as one
    assert identity.recorded_suite(record, record["assignments"][name]["visible_suite_hash"]) is None


def test_a_changed_student_tree_no_longer_claims_the_release_suite(tmp_path):
    ctx = _ctx(tmp_path / "dist")
    write_tree(tmp_path / "student", student.student_files(ctx))
    visible = tmp_path / "student" / "tests" / "suites" / "qkv" / "test_qkv_visible.py"
    visible.write_text(visible.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    changed = identity.identify(load(tmp_path / "student" / "grading.toml"))
    assert changed.suite is None and changed.visible != identity.identify(CONFIG).visible


def test_limits_do_not_change_the_identity_but_a_weight_does(tmp_path):
    text = CONFIG.path.read_text(encoding="utf-8").replace("[grader]\n", f'[grader]\nroot = "{ROOT}"\n', 1)
    limits = tmp_path / "limits" / "grading.toml"
    limits.parent.mkdir()
    limits.write_text(text.replace("call_timeout_s = ", "call_timeout_s = 3  # was ", 1), encoding="utf-8")
    assert identity.identify(load(limits)) == identity.identify(CONFIG)
    items = [(n, w) for suite in CONFIG.skills["qkv"].suites for n, w in suite.weights.items()]
    (a, wa), (b, wb) = next((x, y) for x in items for y in items if x[1] != y[1] and x[0] != y[0])
    assert f"{a} = {wa:g}\n" in text and f"{b} = {wb:g}\n" in text
    swapped = (
        text.replace(f"{a} = {wa:g}\n", "@A@", 1)
        .replace(f"{b} = {wb:g}\n", f"{b} = {wa:g}\n", 1)
        .replace("@A@", f"{a} = {wb:g}\n")
    )
    weights = tmp_path / "weights" / "grading.toml"
    weights.parent.mkdir()
    weights.write_text(swapped, encoding="utf-8")  # the same points, two tests' weights swapped
    assert identity.identify(load(weights)).suite != identity.identify(CONFIG).suite


# --------------------------------------------------------------------------- the course seed key
@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv(seeding.ENV_KEY_FILE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path


def test_first_release_creates_a_random_private_key_outside_the_repository_and_later_ones_reuse_it(home):
    said = []
    key, path = seedkey.ensure("Attention exercises", ROOT, home / "dist", said.append)
    assert path == home / "config" / "attention-autograder" / "attention-exercises.seed.key"
    assert len(key) == 64 and key != seeding.DEFAULT_KEY and "created the course seed key" in said[0]
    assert (path.stat().st_mode & 0o777) == 0o600 and (path.parent.stat().st_mode & 0o777) == 0o700
    again, _ = seedkey.ensure("Attention exercises", ROOT, home / "dist", said.append)
    assert again == key and len(said) == 1  # the same key for every release of the course
    other, _ = seedkey.ensure("Another course", ROOT, home / "dist", said.append)
    assert other != key  # random, not derived from anything


def test_a_key_inside_the_repository_or_too_short_stops_the_release(home, monkeypatch):
    monkeypatch.setenv(seeding.ENV_KEY_FILE, str(ROOT / "seed.key"))
    with pytest.raises(seedkey.SeedKeyProblem, match="inside the repository"):
        seedkey.ensure("c", ROOT, home / "dist", print)
    short = home / "short.key"
    short.write_text("abc\n")
    monkeypatch.setenv(seeding.ENV_KEY_FILE, str(short))
    with pytest.raises(seedkey.SeedKeyProblem, match="at least 16"):
        seedkey.ensure("c", ROOT, home / "dist", print)
    assert not (ROOT / "seed.key").exists()


def test_key_id_names_the_key_without_revealing_it(tmp_path):
    path = tmp_path / "k"
    path.write_bytes(KEY)
    kid = seeding.key_id(path)
    assert len(kid) == 16 and kid.encode() not in KEY and kid == seeding.key_id(path)
    assert seeding.key_id(None) == "public-default" or os.environ.get(seeding.ENV_KEY_FILE)


def test_code_the_shipped_lessons_print_is_public_for_the_leak_audit():
    """Week 7 §13 prints `self.query = nn.Linear(embed_dim, head_size, bias=False)`, a line of
    the reference too: shipping the lessons leaks nothing, so the audit does not flag it."""
    from autograder.instructor.release import audit

    line = audit._squash("self.query = nn.Linear(embed_dim, head_size, bias=False)")
    assert line in audit.public_lines(CONFIG)
    assert line not in audit.solution_lines(CONFIG)
    assert len(audit.solution_lines(CONFIG)) > 50  # the rest of the reference is still guarded


def _copy_repo(dest: Path) -> Path:
    import shutil

    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    for rel in ("tests/suites", "solutions", "exercises"):
        shutil.copytree(ROOT / rel, dest / rel, ignore=ignore)
    shutil.copy2(ROOT / "grading.toml", dest / "grading.toml")
    return dest / "grading.toml"


def test_a_docstring_or_comment_edit_of_a_solution_keeps_the_suite_identity_a_code_edit_changes_it(tmp_path):
    """A reworded docstring or comment in the reference cannot change a score, so a batch
    must not regrade the class for it; any change to the code (a constant) must."""
    config = _copy_repo(tmp_path / "repo")
    before = identity.identify(load(config))
    solution = tmp_path / "repo" / "solutions" / "qkv.py"
    text = solution.read_text(encoding="utf-8")
    first_def = text.index("\ndef ")
    doc_start = text.index('"""', first_def)
    edited = text[: doc_start + 3] + "Reworded: " + text[doc_start + 3 :]
    edited = edited.replace("\ndef ", "\n# a comment added above\ndef ", 1)
    solution.write_text(edited, encoding="utf-8")
    assert identity.identify(load(config)) == before
    assert "math.sqrt(d_k)" in edited
    solution.write_text(edited.replace("math.sqrt(d_k)", "math.sqrt(d_k + 0)", 1), encoding="utf-8")
    assert identity.identify(load(config)).suite != before.suite


def test_code_text_cuts_docstrings_and_comments_but_keeps_every_other_string():
    source = 'def f():\n    """doc"""\n    x = "not a doc"  # note\n    return x\n'
    assert identity.code_text(source.encode()) == b'def f():\n    x = "not a doc"\n    return x\n'
    assert identity.code_text(b"def broken(:\n") == b"def broken(:\n"  # not Python: its bytes


def test_the_course_key_is_named_by_the_course_id_and_a_key_kept_under_the_name_is_never_replaced(home):
    """Two courses of one name keep two keys once each has an [course] id; a key made before the
    id (under the name) stops the release with the two ways on, never a silent new key."""
    config = load(ROOT / "grading.toml")
    assert config.course_id and seeding.key_name(config) == config.course_id
    by_id = seeding.course_key_path(config.course_id)
    assert by_id.name == f"{config.course_id}.seed.key"
    old_key, old_path = seedkey.ensure(config.course, ROOT, home / "dist", print)  # made before ids existed
    with pytest.raises(seedkey.SeedKeyProblem, match=r"\[course\] id names the course key .* move it: `mv "):
        seedkey.ensure(config.course_id, ROOT, home / "dist", print, legacy=config.course)
    old_path.rename(by_id)
    key, path = seedkey.ensure(config.course_id, ROOT, home / "dist", print, legacy=config.course)
    assert (key, path) == (old_key, by_id)
    other, _ = seedkey.ensure("another-course", ROOT, home / "dist", print, legacy=config.course)
    assert other != key


def test_a_course_id_that_cannot_name_a_file_is_refused_naming_the_key(tmp_path):
    from autograder.config import ConfigError

    text = (ROOT / "grading.toml").read_text(encoding="utf-8").replace("[grader]\n", f'[grader]\nroot = "{ROOT}"\n', 1)
    bad = tmp_path / "grading.toml"
    bad.write_text(text.replace('id = "llm-attention"', 'id = "../x"', 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"course\.id: must be 1-64 letters"):
        load(bad)


def test_a_single_skill_run_names_the_release_and_what_it_covers(tmp_path):
    """A ``--skill`` run in the student tree: the hashes its footer prints are the ones the
    release's release.json records (not a hash of the one skill), and it says which skills it left out."""
    from types import SimpleNamespace

    from autograder.core.results import Results
    from autograder.renderers.common import footer_notes
    from autograder.runner import grade as grade_mod
    from autograder.runner.manifest import RunManifest

    ctx = _ctx(tmp_path / "dist")
    write_tree(tmp_path / "student", student.student_files(ctx))
    recorded = json.loads((tmp_path / "student" / "release.json").read_text())
    partial = load(tmp_path / "student" / "grading.toml").select(["qkv"])
    prepared = SimpleNamespace(facts={}, siblings={}, helpers={})
    manifest = grade_mod._add_run(
        RunManifest.plan(partial), partial, prepared, None, seeding.SeedChoice(7, "fixed"), with_cpu_limits=False
    )
    assert (manifest.suite_hash, manifest.visible_suite_hash) == (recorded["suite_hash"], recorded["visible_suite_hash"])
    assert manifest.not_graded == [s for s in CONFIG.skills if s != "qkv"]
    notes = dict(
        footer_notes(
            Results(
                "complete",
                "",
                0,
                20,
                [],
                suite_hash=manifest.suite_hash,
                visible_suite_hash=manifest.visible_suite_hash,
                not_graded=manifest.not_graded,
            )
        )
    )
    assert recorded["suite_hash"][:12] in notes["Suites"] and "unknown" not in notes["Suites"]
    assert "release" in notes["Suites"] and "not graded: masks" in notes["Partial run"]
    # an assignment's bundle is whole in itself: its identity stays that of its own skills
    if CONFIG.assignments:
        name = next(iter(CONFIG.assignments))
        assert CONFIG.for_assignment(name).selected_from is None


def test_a_single_skill_run_says_where_its_hashes_come_from():
    """The footer's note on a --skill run's hashes is true where it runs: the instructors'
    repository (hidden tests ran) computes them from its suite files and has no release.json;
    a tree whose full suite is unknown says why; neither claims a release.json it has not."""
    from autograder.core.results import Results, SkillOutcome, TestOutcome
    from autograder.renderers.common import footer_notes

    hidden = TestOutcome("t", "test_x", "qkv", "hidden", 1, 1, "passed")
    skill = SkillOutcome("qkv", "QKV", "qkv.py", [], 1, 1, 1, 1, [hidden])

    def note(skills, suite):
        results = Results("complete", "", 1, 1, skills, suite_hash=suite, visible_suite_hash="b" * 64, not_graded=["masks"])
        return dict(footer_notes(results))["Suites"]

    instructors = note([skill], "a" * 64)
    assert "not only the skills graded" in instructors and "release.json" not in instructors
    unknown = note([], None)
    assert "suite unknown" in unknown and "unknown here: a student release reads it from its release.json" in unknown
