"""Fair grading on the grader's side (issue 9 §1, §5, §6).

* Same submission → same score: the seed is an HMAC of the submission's files, so grading
  the same files twice gives identical results, and one changed byte draws new inputs.
* Imports: an exercise may import a sibling exercise module whatever ``--skill`` says, and
  the submission's own helper modules; names that would shadow the grader, pytest, torch or
  the standard library are refused with the reason.
* Output a beginner can read: an untouched stub is one line; "Still TODO" comes from the
  module's source, not from message text; one import failure is one panel per skill.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import EXERCISES, MODULES, SEED, SOLUTIONS, Graded, grade, make_submission, rendered

from autograder.core import exercise_api
from autograder.runner import seeding
from autograder.runner.submission import shadowing_reason

MISTAKE_MODULE = "masks.py"  # one known mistake, so the score depends on the random draws
# The same submission's qkv.py draws from torch's global RNG without seeding it (noise added in
# scale_scores), so the two runs below also prove that unseeded randomness repeats run to run.
MISTAKE_SKILLS = ("--skill", "masks", "--skill", "qkv", "--reveal-hidden")


def _without_timings(data: dict) -> dict:
    """Results minus wall-clock durations and the number of folders the worker's namespace
    hid: the only things allowed to differ between runs. (A grade forked from a warm server
    also hides that server's bytecode folder, which a cold grade does not have: a test run
    alone, where the first grade is cold, read ``hidden=3`` against ``hidden=4``.)"""
    data = json.loads(re.sub(r";hidden=\d+;", ";hidden=N;", json.dumps(data)))
    data.pop("duration", None)
    for skill in data["skills"]:
        for test in skill["tests"]:
            test.pop("duration", None)
    return data


@pytest.fixture(scope="module")
def mistake(tmp_path_factory) -> Path:
    source = (SOLUTIONS / MISTAKE_MODULE).read_text(encoding="utf-8")
    find = 'neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)'
    assert source.count(find) == 1
    return make_submission(
        tmp_path_factory.mktemp("mistake") / "sub",
        {
            MISTAKE_MODULE: source.replace(find, "neg_inf = torch.tensor(0.0, dtype=scores.dtype, device=scores.device)"),
            "qkv.py": _noisy_qkv(),
        },
    )


def _noisy_qkv() -> str:
    source = (SOLUTIONS / "qkv.py").read_text(encoding="utf-8")
    start = source.index("def scale_scores")
    body = source.index("return", start)
    return source[:body] + "scores = scores + 0.1 * torch.randn(scores.shape, dtype=scores.dtype)\n    " + source[body:]


@pytest.fixture(scope="module")
def mistake_graded(mistake, tmp_path_factory) -> Graded:
    """The mistake graded once (masks and qkv, hidden tests revealed, the seed from its files and
    the public local key, grading.toml's trusted_processes = 2), for every test below that needs
    that run; none of them changes it. ``output`` is the kept pytest report."""
    folder = tmp_path_factory.mktemp("graded")
    graded = grade(mistake, *MISTAKE_SKILLS, "--keep-report", str(folder / "report.json"), output=folder / "r.json", seed=None)
    graded.output = folder / "report.json"
    return graded


@pytest.fixture(scope="module")
def mistake_regraded(mistake, tmp_path_factory) -> Graded:
    """The same files graded a second time, in one trusted process (trusted_processes = 1)."""
    from conftest import write_config

    folder = tmp_path_factory.mktemp("regraded")
    config = write_config(folder / "grading.toml", trusted_processes=1)
    graded = grade(
        mistake, *MISTAKE_SKILLS, "--keep-report", str(folder / "report.json"), output=folder / "r.json", config=config, seed=None
    )
    graded.output = folder / "report.json"
    return graded


# --------------------------------------------------------------------------- seeds
def test_same_files_graded_twice_give_identical_results(mistake_graded, mistake_regraded):
    first, second = mistake_graded, mistake_regraded
    assert first.rc == second.rc == 0, first.stderr
    assert first.data["seed_source"] == "content-default-key"
    assert first.data["seed"] == second.data["seed"]
    assert 0 < first.data["score"] < first.data["max_score"], "the mistake should cost some points, not all"
    a, b = _without_timings(first.data), _without_timings(second.data)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # scores, hints, details, per-test seeds


def test_one_changed_byte_draws_new_inputs(mistake, mistake_graded, tmp_path):
    before = mistake_graded
    changed = make_submission(tmp_path / "changed", {}, base=mistake)
    (changed / MISTAKE_MODULE).write_bytes((mistake / MISTAKE_MODULE).read_bytes() + b"#")
    after = grade(changed, "--skill", "masks", "--reveal-hidden", output=tmp_path / "b.json", seed=None)
    assert before.data["seed"] != after.data["seed"]
    seeds = lambda g: [t["seed"] for t in g.tests()]  # per-test seeds: the inputs each test drew
    assert all(s is not None for s in seeds(before))
    assert not set(seeds(before)) & set(seeds(after))


def test_a_skill_alone_draws_the_same_inputs_as_the_full_run(mistake, mistake_graded, tmp_path):
    """Every exercise module enters the seed whatever --skill selects, so `--skill masks`
    gives masks the same score as a run of more skills (here masks and qkv: a seed from only the
    selected modules would differ; a run of all six costs more and proves nothing more)."""
    alone = grade(mistake, "--skill", "masks", "--reveal-hidden", output=tmp_path / "b.json", seed=None)
    full = mistake_graded
    assert alone.data["seed"] == full.data["seed"]
    strip = lambda skill: [{k: v for k, v in t.items() if k != "duration"} for t in skill["tests"]]
    assert strip(alone.skill("masks")) == strip(full.skill("masks"))


def test_course_key_changes_the_seed_and_is_recorded(mistake, mistake_graded, tmp_path):
    key = tmp_path / "seed.key"
    key.write_text("0123456789abcdef0123456789abcdef\n")
    env = dict(os.environ, **{seeding.ENV_KEY_FILE: str(key)})
    # one keyed run: its text on stdout, its JSON results (--results), the Gradescope output rendered from them
    keyed = grade(mistake, "--skill", "qkv", fmt="text", results=tmp_path / "a.json", seed=None, env=env)
    plain = mistake_graded  # the same files without the key (the seed does not depend on --skill)
    assert keyed.data["seed_source"] == "content" and plain.data["seed_source"] == "content-default-key"
    assert keyed.data["seed"] != plain.data["seed"]
    gs = json.loads(rendered(keyed, "gradescope"))
    assert gs["extra_data"]["seed"] == keyed.data["seed"] and gs["extra_data"]["seed_source"] == "content"
    assert f"Seed: {keyed.data['seed']}" in gs["output"]
    assert f"Seed: {keyed.data['seed']} (derived from your files and the course key)" in " ".join(keyed.stdout.split())


def test_an_unusable_course_key_is_refused_with_a_results_file(mistake, tmp_path):
    env = dict(os.environ, **{seeding.ENV_KEY_FILE: str(tmp_path / "missing.key")})
    graded = grade(mistake, "--skill", "qkv", output=tmp_path / "r.json", seed=None, env=env)
    assert graded.rc == 1 and graded.data["status"] == "error" and graded.data["score"] == 0
    assert seeding.ENV_KEY_FILE in graded.data["message"] and "cannot be read" in graded.data["message"]
    (tmp_path / "short.key").write_text("abc")
    with pytest.raises(seeding.SeedKeyError, match="at least 16"):
        seeding.load_key({seeding.ENV_KEY_FILE: str(tmp_path / "short.key")})


def test_seed_options_override_content(solutions_graded):
    graded = solutions_graded  # conftest's one run of the reference, graded with --seed SEED
    assert (graded.data["seed"], graded.data["seed_source"]) == (SEED, "option")
    assert all(t["seed"] is not None for t in graded.tests())  # each test draws from a seed derived from it
    assert seeding.choose(None, "fixed", 7, []).source == "config"
    fresh = {seeding.choose(None, "fresh", None, []).seed for _ in range(5)}
    assert len(fresh) > 1


def test_content_seed_is_order_independent_and_fits_json_numbers():
    files = [("qkv.py", "a" * 64), ("masks.py", None), ("utils.py", "b" * 64)]
    seed = seeding.content_seed(b"k" * 16, files)
    assert seed == seeding.content_seed(b"k" * 16, list(reversed(files)))
    assert 0 <= seed < 2**53
    assert seed != seeding.content_seed(b"k" * 16, files[:2] + [("utils.py", "c" * 64)])
    assert seed != seeding.content_seed(b"j" * 16, files)


# --------------------------------------------------------------------------- imports
def _with_imports(tmp_path: Path, helper: str | None = "utils.py") -> Path:
    folder = make_submission(tmp_path / "sub", {})
    source = (SOLUTIONS / "qkv.py").read_text(encoding="utf-8")
    lines = ["from masks import causal_mask  # a sibling exercise module"]
    if helper:
        lines.append(f"from {helper[:-3]} import twice  # the student's own helper")
        (folder / helper).write_text("def twice(x):\n    return 2 * x\n", encoding="utf-8")
    assert "\nimport torch\n" in source
    (folder / "qkv.py").write_text(
        source.replace("\nimport torch\n", "\nimport torch\n" + "\n".join(lines) + "\n", 1), encoding="utf-8"
    )
    return folder


def test_sibling_and_helper_modules_import_whatever_skill_is_selected(tmp_path):
    """Also: the folder the user names may itself be a link (an instructor's layout; below it,
    only real files count), and --skill's footer lists the modules not selected."""
    folder = _with_imports(tmp_path)
    (tmp_path / "link").symlink_to(folder)
    # the text on stdout, the JSON in a.json
    alone = grade(tmp_path / "link", "--skill", "qkv", fmt="text", results=tmp_path / "a.json")
    assert alone.rc == 0 and alone.score("qkv") == 20, [t["summary"] for t in alone.tests() if t["score"] < t["max_score"]][:3]
    sub = alone.data["submission"]
    assert sub["helpers"]["utils"]["problem"] is None and sub["helpers"]["utils"]["display_path"].endswith("utils.py")
    assert "masks" in sub["not_selected"] and "masks" not in sub["modules"]
    full = grade(folder, "--skill", "qkv", "--skill", "masks", output=tmp_path / "b.json")  # the sibling graded too
    assert full.data["score"] == full.data["max_score"]
    flat = " ".join(alone.stdout.split())
    assert "Helper modules available to your code (never graded):" in flat and "utils.py" in flat
    assert "Not selected" in flat and "Not graded (only the exercise modules are)" not in flat
    assert re.search(r"Not selected \(importable by your code, not graded in this run\): .*masks\.py", flat)


SHADOWING = ["conftest.py", "sitecustomize.py", "torch.py", "pytest.py", "autograder_x.py", "json.py", "numpy.py"]


@pytest.fixture(scope="module")
def shadowing_graded(tmp_path_factory) -> Graded:
    """Every shadowing name in one submission, qkv importing its helper from one of them
    (torch.py): each is refused from the folder's listing, on its own name, so one run
    proves it for all seven (each used to be a run of its own). The same folder holds too many
    helpers and a hard link for test_helper_limits (a refused name is never counted)."""
    root = tmp_path_factory.mktemp("shadowing")
    folder = _with_imports(root, helper="torch.py")
    for name in SHADOWING:
        (folder / name).write_text(
            "import os\nos.system('touch /tmp/pwned')\ndef twice(x):\n    return 3 * x\n", encoding="utf-8"
        )
    for i in range(20):
        (folder / f"h{i:02d}.py").write_text("X = 1\n")
    os.link(folder / "h00.py", folder / "h_link.py")
    return grade(folder, "--skill", "qkv", output=root / "r.json")


@pytest.mark.parametrize("name", SHADOWING)
def test_helpers_that_would_shadow_the_grader_or_libraries_are_refused(shadowing_graded, name):
    assert shadowing_reason(name[:-3])
    info = shadowing_graded.data["submission"]["helpers"][name[:-3]]
    assert info["problem"].startswith("not importable: the name would shadow"), info
    assert name in shadowing_graded.data["submission"]["ignored"]  # never copied anywhere


def test_a_file_name_that_is_not_utf8_is_named_and_the_seed_from_the_files_still_works(tmp_path):
    """A helper named in another encoding (a checkout or an archive made under a non-UTF-8
    locale) is listed as not importable, and the seed drawn from the files' names and
    contents takes its bytes as they are (blind red-team tester R-T: the run failed as a
    grader error, 0 points, wherever no --seed was given: `make grade`, Gradescope, CI)."""
    folder = make_submission(tmp_path / "sub", {})
    with open(os.path.join(os.fsencode(folder), b"notes\xff.py"), "wb") as fh:
        fh.write(b"X = 1\n")
    graded = grade(folder, "--skill", "qkv", seed=None, output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr[-2000:]
    assert graded.data["seed_source"].startswith("content"), graded.data["seed_source"]
    assert graded.data["score"] == graded.data["max_score"]
    info = graded.data["submission"]["helpers"]["notes\udcff"]
    assert info["problem"] == "not importable: the name is not valid UTF-8 — rename it with letters, digits and _ only"


HALF_DONE = ("split_heads", "merge_heads")  # mha_reshape's functions taken from the reference, the rest left as the stub


def _half_done_mha_reshape() -> str:
    import ast

    stub = (EXERCISES / "mha_reshape.py").read_text(encoding="utf-8")
    done = (SOLUTIONS / "mha_reshape.py").read_text(encoding="utf-8")
    ref = {n.name: ast.get_source_segment(done, n) for n in ast.parse(done).body if isinstance(n, ast.FunctionDef)}
    mixed = stub
    for name in HALF_DONE:
        node = next(n for n in ast.parse(mixed).body if isinstance(n, ast.FunctionDef) and n.name == name)
        mixed = mixed.replace(ast.get_source_segment(mixed, node), ref[name])
    return mixed


@pytest.fixture(scope="module")
def broken_graded(tmp_path_factory) -> Graded:
    """One run, three skills broken three ways (the suites call only their own skill's module,
    and none of these modules imports another): qkv imports a module that does not exist,
    masks has a syntax error, mha_reshape is half done. Text on stdout, the JSON results in
    ``data`` (the other formats are rendered from them)."""
    root = tmp_path_factory.mktemp("broken")
    qkv = (SOLUTIONS / "qkv.py").read_text(encoding="utf-8")
    masks = (SOLUTIONS / "masks.py").read_text(encoding="utf-8")
    folder = make_submission(
        root / "sub",
        {
            "qkv.py": qkv.replace("\nimport torch\n", "\nimport torch\nimport not_a_module_anywhere\n", 1),
            "masks.py": masks + "\ndef broken(:\n",
            "mha_reshape.py": _half_done_mha_reshape(),
        },
    )
    skills = ("--skill", "qkv", "--skill", "masks", "--skill", "mha_reshape")
    return grade(folder, *skills, fmt="text", results=root / "r.json", env={**os.environ, "COLUMNS": "200"})


def test_one_import_failure_is_one_panel_per_skill(broken_graded):
    graded = broken_graded
    text = " ".join(graded.stdout.split())
    assert text.count("No module named") == 1, text
    tests = graded.tests("qkv")  # the suite grows: count, don't hard-code
    assert len(tests) > 2 and all(t["status"] != "passed" for t in tests)
    assert f"The same problem fails {len(tests) - 1} more tests of this skill" in text
    assert rendered(graded, "markdown").count("No module named") == 1
    errors = [line for line in rendered(graded, "github").splitlines() if line.startswith("::error")]
    assert len([line for line in errors if "qkv.py" in line.split("::")[1]]) == 1, errors


def test_helper_limits(shadowing_graded):
    helpers = shadowing_graded.data["submission"]["helpers"]
    usable = [n for n, h in helpers.items() if not h["problem"]]
    assert len(usable) == 16
    assert "hard link" in helpers["h00"]["problem"] and "hard link" in helpers["h_link"]["problem"]
    assert any("max_helper_modules" in (h["problem"] or "") for h in helpers.values())


# --------------------------------------------------------------------------- output
def test_untouched_stubs_print_one_line_per_skill_and_where_to_start(stubs_graded):
    text = rendered(stubs_graded, "text")  # the text format of conftest's one stubs run (a pure function of its results)
    lines = text.splitlines()
    assert len(lines) < 40, len(lines)
    flat = " ".join(text.split())
    assert "qkv 0/20 not started — begin with `project_qkv`, Week 7 §1–§9" in flat
    assert "Where to start: open exercises/qkv.py, write `project_qkv`" in flat
    assert "What to fix" not in flat


def test_still_todo_lists_the_modules_real_functions(broken_graded):
    """A half-done mha_reshape: Still TODO names exactly the functions whose body is still
    the stub — no words picked out of messages, none missed."""
    stub = (EXERCISES / "mha_reshape.py").read_text(encoding="utf-8")
    stub_funcs = exercise_api.functions(stub)
    assert stub_funcs == exercise_api.still_todo(stub)
    graded = broken_graded  # split_heads and merge_heads from the reference, the rest the stub
    todo = graded.data["submission"]["modules"]["mha_reshape"]["todo"]
    assert todo == [f for f in stub_funcs if f not in HALF_DONE]
    assert {
        "mha_flops",
        "attention_flop_fraction",
        "attention_matrix_gib",
        "mha_param_count",
        "MultiHeadAttention.forward",
    } <= set(todo)
    text = " ".join(graded.stdout.split())
    assert "Still TODO: " + ", ".join(todo) in text
    assert "not started" not in text
    assert graded.data["submission"]["modules"]["mha_reshape"]["functions"] == stub_funcs


def test_exercise_api_reads_stubs_from_the_source():
    source = '''
import torch
def a(x):
    """doc"""
    # TODO(s): a
    raise NotImplementedError("TODO(s): a")
def b(x):
    y = x + 1
    raise NotImplementedError("TODO(s): b")
def c(x):
    if x:
        raise NotImplementedError("TODO(s): c")
    return x
def d(x):
    raise NotImplementedError("not a stub")
def _private(x):
    raise NotImplementedError("TODO(s): _private")
class K:
    def __init__(self):
        raise NotImplementedError("TODO(s): K.__init__")
    def forward(self, x):
        return x
'''
    assert exercise_api.functions(source) == ["a", "b", "c", "d", "K.__init__", "K.forward"]
    assert exercise_api.still_todo(source) == ["a", "b", "K.__init__"]
    assert exercise_api.still_todo(source, known=["a", "K.__init__"]) == ["a", "K.__init__"]
    assert exercise_api.still_todo("def (:") == []
    for module in MODULES.values():
        known = exercise_api.known_functions(module, SOLUTIONS, EXERCISES)
        assert known == exercise_api.functions((EXERCISES / module).read_text()), module
        assert exercise_api.still_todo((SOLUTIONS / module).read_text(), known) == []


def test_rule_scans_can_reach_every_importable_file(tmp_path):
    """A module under a rule can import its siblings and helpers, so the suites can read them
    all (autograder.testing.remote.Submission.importable_sources)."""
    from autograder.testing.remote import Submission
    from autograder.testing.runtime import ModuleInfo, Runtime

    (tmp_path / "row_softmax.py").write_text("from utils import f\n")
    (tmp_path / "utils.py").write_text("import torch\nf = torch.softmax\n")
    no_sandbox = SimpleNamespace(spec=SimpleNamespace(output_bytes=0))  # nothing is called: only sources are read
    runtime = Runtime(
        sandbox=no_sandbox,
        modules={"row_softmax": ModuleInfo("row_softmax", "row_softmax.py", tmp_path / "row_softmax.py")},
        call_timeout=1,
        budget_deadline=0,
        importable={"utils": tmp_path / "utils.py"},
    )
    assert Submission(runtime).importable_sources() == {
        "row_softmax": "from utils import f\n",
        "utils": "import torch\nf = torch.softmax\n",
    }


def test_one_or_two_trusted_processes_give_the_same_result(mistake_graded, mistake_regraded):
    """runner/process/split.py runs half of the skills in a second trusted process when the machine
    has two cores and [limits] trusted_processes allows it: the mistake's two runs (masks and
    qkv; grading.toml's 2, then 1) give every test the same score, status, hints and message."""
    from autograder.runner.process.split import usable_cpus

    seen = {}
    for processes, graded in ((2, mistake_graded), (1, mistake_regraded)):
        assert graded.data["status"] == "complete", graded.stderr
        used = json.loads(graded.output.read_text())["autograder"]["trusted_processes"]
        assert used == (2 if processes == 2 and usable_cpus() >= 2 else 1)
        seen[processes] = [
            (s["id"], t["name"], t["score"], t["status"], t.get("summary"), [h["id"] for h in t["hints"]])
            for s in graded.data["skills"]
            for t in s["tests"]
        ]
    assert seen[1] == seen[2]
    assert any(hints for *_, hints in seen[1])  # the mistakes were seen and named


@pytest.mark.slow  # two full runs of three skills; the fast set compares the mistake's two runs (two skills) above
def test_one_or_two_trusted_processes_give_the_same_result_for_three_skills(tmp_path):
    """runner/process/split.py runs half of the skills in a second trusted process when the machine
    has two cores and [limits] trusted_processes allows it (Gradescope's bundle does not):
    every test's score, status, hints and message are the same either way."""
    import sys

    from conftest import SUBMISSIONS, write_config

    from autograder.runner.process.split import usable_cpus

    sys.path.insert(0, str(SUBMISSIONS))
    import variants

    picked = [variants.mistakes(skill)[0] for skill in ("qkv", "row_softmax", "mha_reshape")]
    folder = variants.build(tmp_path / "sub", picked)
    seen = {}
    for processes in (1, 2):
        config = write_config(tmp_path / f"grading{processes}.toml", trusted_processes=processes)
        report = tmp_path / f"report{processes}.json"
        graded = grade(
            folder, "--reveal-hidden", "--keep-report", str(report), output=tmp_path / f"r{processes}.json", config=config, seed=7
        )
        assert graded.data["status"] == "complete", graded.stderr
        used = json.loads(report.read_text())["autograder"]["trusted_processes"]
        assert used == (2 if processes == 2 and usable_cpus() >= 2 else 1)
        seen[processes] = [
            (s["id"], t["name"], t["score"], t["status"], t.get("summary"), [h["id"] for h in t["hints"]])
            for s in graded.data["skills"]
            for t in s["tests"]
        ]
    assert seen[1] == seen[2]
    assert any(hints for *_, hints in seen[1])  # the mistakes were seen and named


COUNTS_ITS_IMPORTS = """

# --- counts the imports of this module in its worker, where the worker's reset does not look
torch.__dict__["_imports_here"] = torch.__dict__.get("_imports_here", 0) + 1
_right_project_qkv = project_qkv


def project_qkv(x, w_q, w_k, w_v):
    q, k, v = _right_project_qkv(x, w_q, w_k, w_v)
    return (q, k, v) if torch.__dict__["_imports_here"] == 1 else (q, k, v * 2)
"""


def test_a_skill_scores_the_same_alone_and_in_the_full_run_whatever_its_worker_remembers(tmp_path):
    """Code can tell a fresh worker from one reset after an earlier test (an attribute of a
    library module survives the reset: here a count of its own imports in torch's namespace,
    right only on a fresh worker). Each skill's visible tests and its hidden tests start on a
    fresh worker whatever ran between, so such code scores the same in a run of its skill
    alone as in the full run — where other skills' visible tests run between the two (blind
    red-team tester R-DC: 19 against 17.5)."""
    folder = tmp_path / "sub"
    shutil.copytree(SOLUTIONS, folder)
    (folder / "qkv.py").write_text((SOLUTIONS / "qkv.py").read_text() + COUNTS_ITS_IMPORTS)
    alone = grade(folder, "--skill", "qkv", "--reveal-hidden", output=tmp_path / "alone.json")
    full = grade(folder, "--reveal-hidden", output=tmp_path / "full.json")
    assert alone.rc == 0 and full.rc == 0, alone.stderr[-2000:] + full.stderr[-2000:]

    def qkv_tests(graded):
        return [(t["name"], t["score"], t["status"]) for t in graded.tests("qkv")]

    assert qkv_tests(alone) == qkv_tests(full)
    assert 0 < alone.score("qkv") < 20  # the code did tell the two kinds of worker apart


def test_unseeded_randomness_in_the_submission_repeats_run_to_run(mistake_graded, mistake_regraded):
    """Code that draws from torch's global RNG without seeding it (here: the mistake's qkv.py adds
    noise in scale_scores) gets the same numbers in every run, so the same score and the same
    feedback, word for word (sandbox/zygote.py fixes the global RNGs every worker starts from)."""
    runs = [mistake_graded, mistake_regraded]
    seen = [[(t["name"], t["score"], t.get("summary"), t.get("detail")) for t in graded.tests("qkv")] for graded in runs]
    assert 0 < runs[0].score("qkv") < 20
    assert seen[0] == seen[1]


def test_a_near_name_is_the_first_line_and_says_how_to_rename(tmp_path):
    """What browsers and macOS make of a download (`masks (1).py`, `Qkv.py`) is never graded
    as the module, but the skill's one line says which file to rename."""
    folder = make_submission(tmp_path / "sub", {})
    (folder / "qkv.py").rename(folder / "Qkv.py")
    (folder / "masks.py").rename(folder / "masks (1).py")
    graded = grade(folder, "--skill", "qkv", "--skill", "masks", fmt="text", env={**os.environ, "COLUMNS": "200"})
    lines = [line for line in graded.stdout.splitlines() if line.strip()]
    assert "qkv.py is missing — your folder has Qkv.py: rename it to qkv.py" in lines[1], lines[:3]
    assert "masks.py is missing — your folder has masks (1).py: rename it to masks.py" in lines[2], lines[:3]


def test_gradescope_where_to_start_names_the_repository_file_not_the_server_path(stubs_graded):
    text = json.loads(stubs_graded.output.read_text(encoding="utf-8"))[
        "output"
    ]  # the stubs' Gradescope output (conftest's one run)
    plain = text.replace("\\", "")  # markdown escapes
    assert "Where to start: in your repository, open exercises/qkv.py" in plain and "then upload again" in plain
    assert str(EXERCISES) not in text


def test_a_syntax_error_is_said_once_for_its_skill(broken_graded):
    graded = broken_graded  # the syntax error is in masks.py
    assert graded.stdout.count("SyntaxError") == 1, graded.stdout[:2000]
    assert "required part" not in graded.stdout
    assert all(t["status"] != "passed" for t in graded.tests("masks"))


def test_a_tests_sizes_are_the_same_on_every_seed_and_its_values_are_not():
    """A test's ``rng`` draws its sizes (``randint``, ``choice``) from the test id alone and
    its values from the run's seed (testing/inputs.py ``CaseGenerator``)."""
    import torch

    from autograder.testing import choice, randint, randn
    from autograder.testing.inputs import CaseGenerator

    def draw(seed: int, test_id: str):
        rng = CaseGenerator.for_test(seed, test_id)
        sizes = [randint(rng, 2, 64) for _ in range(8)] + [choice(rng, "abcdef") for _ in range(4)]
        return sizes, randn(rng, 4)

    sizes_1, values_1 = draw(1, "t.py::test_a")
    sizes_2, values_2 = draw(2, "t.py::test_a")
    assert sizes_1 == sizes_2 and not torch.equal(values_1, values_2)
    assert draw(1, "t.py::test_b")[0] != sizes_1  # another test, other sizes
    assert torch.equal(draw(1, "t.py::test_a")[1], values_1)  # and reruns repeat
    plain = torch.Generator().manual_seed(5)  # snapshot cases and other seeded draws: one stream, as before
    assert randint(plain, 0, 10**6) == int(torch.randint(0, 10**6 + 1, (1,), generator=torch.Generator().manual_seed(5)))


def test_a_mistake_that_depends_on_a_size_costs_the_same_on_every_seed(tmp_path):
    """Positions from a fixed ``arange(40)`` are right while T ≤ 40: drawn with the values,
    T made that mistake cost 0.6, 0.3, 0 or 0.45 points by seed (blind tester R-BS, m46); the
    sizes are the test's own now, and so is the price."""
    source = (SOLUTIONS / "masks.py").read_text(encoding="utf-8")
    right = "i = torch.arange(T).unsqueeze(1)  # [T,1] query positions\n    j = torch.arange(T).unsqueeze(0)"
    assert source.count(right) == 1
    wrong = make_submission(
        tmp_path / "sub",
        {"masks.py": source.replace(right, "i = torch.arange(40)[:T].unsqueeze(1)\n    j = torch.arange(40)[:T].unsqueeze(0)")},
    )
    lost = []
    for seed in (1, 2, 3):
        graded = grade(wrong, "--skill", "masks", "--reveal-hidden", output=tmp_path / f"{seed}.json", seed=seed)
        tests = graded.skill("masks")["tests"]
        lost.append({t["name"]: t["max_score"] - t["score"] for t in tests if t["score"] < t["max_score"]})
    assert lost[0] and lost[0] == lost[1] == lost[2], lost
    assert set(lost[0]) == {"test_prefix_lm_mask_matches_reference"}


def test_layers_of_a_class_derived_from_nn_linear_are_linear_layers(tmp_path):
    """The contract asks for submodules that are ``nn.Linear(…)``; a subclass that adds nothing
    is one. The structure tests matched the exact class and said "found no nn.Linear" (blind
    tester R-BW: 0.94 points in mha_reshape, 0.42 in qkv)."""
    derived = '\n\nclass Projection(nn.Linear):\n    """An nn.Linear with a name of its own."""\n'
    files = {}
    for module, names in (("qkv.py", ("query", "key", "value")), ("mha_reshape.py", ("w_q", "w_k", "w_v", "w_o"))):
        source = (SOLUTIONS / module).read_text(encoding="utf-8")
        for name in names:
            assert source.count(f"self.{name} = nn.Linear(") == 1, (module, name)
            source = source.replace(f"self.{name} = nn.Linear(", f"self.{name} = Projection(")
        files[module] = source + derived
    graded = grade(
        make_submission(tmp_path / "sub", files),
        "--skill",
        "qkv",
        "--skill",
        "mha_reshape",
        "--reveal-hidden",
        output=tmp_path / "r.json",
        seed=1,
    )
    lost = {t["name"]: t["detail"] for s in graded.data["skills"] for t in s["tests"] if t["score"] < t["max_score"]}
    assert not lost, lost
