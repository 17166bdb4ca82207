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
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import EXERCISES, SOLUTIONS, Graded, grade, make_submission, rendered

from autograder.core import exercise_api
from autograder.runner import seeding
from autograder.runner.submission import shadowing_reason

MISTAKE_MODULE = "masks.py"  # one known mistake, so the score depends on the random draws


def _without_timings(data: dict) -> dict:
    """Results minus wall-clock durations (the only thing allowed to differ between runs)."""
    data = json.loads(json.dumps(data))
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
        {MISTAKE_MODULE: source.replace(find, "neg_inf = torch.tensor(0.0, dtype=scores.dtype, device=scores.device)")},
    )


@pytest.fixture(scope="module")
def mistake_graded(mistake, tmp_path_factory) -> Graded:
    """The mistake graded once (masks, hidden tests revealed, the seed from its files and the
    public local key), for every test below that needs that run; none of them changes it."""
    return grade(mistake, "--skill", "masks", "--reveal-hidden", output=tmp_path_factory.mktemp("graded") / "r.json", seed=None)


# --------------------------------------------------------------------------- seeds
def test_same_files_graded_twice_give_identical_results(mistake, mistake_graded, tmp_path):
    first = mistake_graded
    second = grade(mistake, "--skill", "masks", "--reveal-hidden", output=tmp_path / "b.json", seed=None)
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
    seeds = lambda g: [t["seed"] for t in g.tests()]  # noqa: E731 - per-test seeds: the inputs each test drew
    assert all(s is not None for s in seeds(before))
    assert not set(seeds(before)) & set(seeds(after))


def test_a_skill_alone_draws_the_same_inputs_as_the_full_run(mistake, mistake_graded, tmp_path):
    """Every exercise module enters the seed whatever --skill selects, so `--skill masks`
    gives masks the same score as a full grade."""
    alone = mistake_graded
    full = grade(mistake, "--reveal-hidden", output=tmp_path / "b.json", seed=None)
    assert alone.data["seed"] == full.data["seed"]
    strip = lambda skill: [{k: v for k, v in t.items() if k != "duration"} for t in skill["tests"]]  # noqa: E731
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


def test_seed_options_override_content(mistake, tmp_path):
    graded = grade(mistake, "--skill", "qkv", output=tmp_path / "r.json", seed=1234)
    assert (graded.data["seed"], graded.data["seed_source"]) == (1234, "option")
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
    folder = _with_imports(tmp_path)
    alone = grade(folder, "--skill", "qkv", fmt="text", results=tmp_path / "a.json")  # the text on stdout, the JSON in a.json
    assert alone.rc == 0 and alone.score("qkv") == 20, [t["summary"] for t in alone.tests() if t["score"] < t["max_score"]][:3]
    sub = alone.data["submission"]
    assert sub["helpers"]["utils"]["problem"] is None and sub["helpers"]["utils"]["display_path"].endswith("utils.py")
    assert "masks" in sub["not_selected"] and "masks" not in sub["modules"]
    full = grade(folder, output=tmp_path / "b.json")
    assert full.data["score"] == full.data["max_score"]
    flat = " ".join(alone.stdout.split())
    assert "Helper modules available to your code (never graded):" in flat and "utils.py" in flat
    assert "Not selected" in flat and "Not graded (only the exercise modules are)" not in flat


SHADOWING = ["conftest.py", "sitecustomize.py", "torch.py", "pytest.py", "autograder_x.py", "json.py", "numpy.py"]


@pytest.fixture(scope="module")
def shadowing_graded(tmp_path_factory) -> Graded:
    """Every shadowing name in one submission, qkv importing its helper from one of them
    (torch.py): each is refused from the folder's listing, on its own name, so one run
    proves it for all seven (each used to be a run of its own)."""
    root = tmp_path_factory.mktemp("shadowing")
    folder = _with_imports(root, helper="torch.py")
    for name in SHADOWING:
        (folder / name).write_text(
            "import os\nos.system('touch /tmp/pwned')\ndef twice(x):\n    return 3 * x\n", encoding="utf-8"
        )
    return grade(folder, "--skill", "qkv", output=root / "r.json")


@pytest.mark.parametrize("name", SHADOWING)
def test_helpers_that_would_shadow_the_grader_or_libraries_are_refused(shadowing_graded, name):
    assert shadowing_reason(name[:-3])
    info = shadowing_graded.data["submission"]["helpers"][name[:-3]]
    assert info["problem"].startswith("not importable: the name would shadow"), info
    assert name in shadowing_graded.data["submission"]["ignored"]  # never copied anywhere


def test_one_import_failure_is_one_panel_per_skill(tmp_path):
    folder = _with_imports(tmp_path, helper=None)
    source = (SOLUTIONS / "qkv.py").read_text(encoding="utf-8")
    (folder / "qkv.py").write_text(
        source.replace("\nimport torch\n", "\nimport torch\nimport not_a_module_anywhere\n", 1), encoding="utf-8"
    )
    graded = grade(
        folder, "--skill", "qkv", fmt="text", results=tmp_path / "r.json"
    )  # one run; the other formats from its results
    text = " ".join(graded.stdout.split())
    assert text.count("No module named") == 1, text
    tests = graded.tests("qkv")  # the suite grows: count, don't hard-code
    assert len(tests) > 2 and all(t["status"] != "passed" for t in tests)
    assert f"The same problem fails {len(tests) - 1} more tests of this skill" in text
    assert rendered(graded, "markdown").count("No module named") == 1
    assert [line.startswith("::error") for line in rendered(graded, "github").splitlines()].count(True) == 1


def test_helper_limits(tmp_path):
    folder = make_submission(tmp_path / "sub", {})
    for i in range(20):
        (folder / f"h{i:02d}.py").write_text("X = 1\n")
    os.link(folder / "h00.py", folder / "h_link.py")
    graded = grade(folder, "--skill", "qkv", output=tmp_path / "r.json")
    helpers = graded.data["submission"]["helpers"]
    usable = [n for n, h in helpers.items() if not h["problem"]]
    assert len(usable) == 16
    assert "hard link" in helpers["h00"]["problem"] and "hard link" in helpers["h_link"]["problem"]
    assert any("max_helper_modules" in (h["problem"] or "") for h in helpers.values())


# --------------------------------------------------------------------------- output
def test_untouched_stubs_print_one_line_per_skill_and_where_to_start():
    text = grade(EXERCISES, fmt="text")
    lines = text.stdout.splitlines()
    assert len(lines) < 40, len(lines)
    flat = " ".join(text.stdout.split())
    assert "qkv 0/20 not started — begin with `project_qkv`, Week 7 §1–§9" in flat
    assert "Where to start: open exercises/qkv.py, write `project_qkv`" in flat
    assert "What to fix" not in flat


def test_still_todo_lists_the_modules_real_functions(tmp_path):
    """A half-done mha_reshape: Still TODO names exactly the functions whose body is still
    the stub — no words picked out of messages, none missed."""
    stub = (EXERCISES / "mha_reshape.py").read_text(encoding="utf-8")
    done = (SOLUTIONS / "mha_reshape.py").read_text(encoding="utf-8")
    stub_funcs = exercise_api.functions(stub)
    assert stub_funcs == exercise_api.still_todo(stub)
    # take split_heads and merge_heads from the reference, leave the rest as the stub
    import ast

    ref = {n.name: ast.get_source_segment(done, n) for n in ast.parse(done).body if isinstance(n, ast.FunctionDef)}
    mixed = stub
    for name in ("split_heads", "merge_heads"):
        node = next(n for n in ast.parse(mixed).body if isinstance(n, ast.FunctionDef) and n.name == name)
        mixed = mixed.replace(ast.get_source_segment(mixed, node), ref[name])
    folder = make_submission(tmp_path / "sub", {"mha_reshape.py": mixed}, base=EXERCISES)
    graded = grade(folder, "--skill", "mha_reshape", fmt="text", results=tmp_path / "r.json")  # the JSON and the text of one run
    todo = graded.data["submission"]["modules"]["mha_reshape"]["todo"]
    assert todo == [f for f in stub_funcs if f not in ("split_heads", "merge_heads")]
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
    for module in ("qkv.py", "masks.py", "row_softmax.py", "custom_backward.py", "mha_reshape.py", "sdpa_masks.py"):
        known = exercise_api.known_functions(module, SOLUTIONS, EXERCISES)
        assert known == exercise_api.functions((EXERCISES / module).read_text()), module
        assert exercise_api.still_todo((SOLUTIONS / module).read_text(), known) == []


def test_skill_option_footer_says_not_selected(tmp_path):
    text = " ".join(grade(SOLUTIONS, "--skill", "sdpa_masks", fmt="text").stdout.split())
    assert re.search(r"Not selected \(importable by your code, not graded in this run\): .*qkv\.py", text)


def test_a_submission_folder_given_as_a_link_is_resolved_once(tmp_path):
    """The folder the user names may itself be a link (an instructor's layout); below it,
    only real files count."""
    real = make_submission(tmp_path / "real", {})
    (tmp_path / "link").symlink_to(real)
    graded = grade(tmp_path / "link", "--skill", "qkv", output=tmp_path / "r.json")
    assert graded.score("qkv") == 20


def test_rule_scans_can_reach_every_importable_file(tmp_path):
    """A module under a rule can import its siblings and helpers, so the suites can read them
    all (autograder.testing.remote.Submission.importable_sources)."""
    from autograder.testing.remote import ModuleInfo, Runtime, Submission

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


def test_one_or_two_trusted_processes_give_the_same_result(tmp_path):
    """runner/split.py runs half of the skills in a second trusted process when the machine
    has two cores and [limits] trusted_processes allows it (Gradescope's bundle does not):
    every test's score, status, hints and message are the same either way."""
    import sys

    from conftest import SUBMISSIONS, write_config

    from autograder.runner.split import usable_cpus

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


def test_unseeded_randomness_in_the_submission_repeats_run_to_run(tmp_path):
    """Code that draws from torch's global RNG without seeding it (here: noise added in
    scale_scores) gets the same numbers in every run, so the same score and the same feedback,
    word for word (sandbox/zygote.py fixes the global RNGs every worker starts from)."""
    source = (SOLUTIONS / "qkv.py").read_text(encoding="utf-8")
    start = source.index("def scale_scores")
    body = source.index("return", start)
    noisy = source[:body] + "scores = scores + 0.1 * torch.randn(scores.shape, dtype=scores.dtype)\n    " + source[body:]
    folder = make_submission(tmp_path / "sub", {"qkv.py": noisy})
    runs = [grade(folder, "--skill", "qkv", "--reveal-hidden", output=tmp_path / f"r{i}.json") for i in (1, 2)]
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


def test_a_syntax_error_is_said_once_for_its_skill(tmp_path):
    folder = make_submission(tmp_path / "sub", {})
    (folder / "qkv.py").write_text((folder / "qkv.py").read_text(encoding="utf-8") + "\ndef broken(:\n", encoding="utf-8")
    graded = grade(folder, "--skill", "qkv", fmt="text", env={**os.environ, "COLUMNS": "200"})
    assert graded.stdout.count("SyntaxError") == 1, graded.stdout[:2000]
    assert "required part" not in graded.stdout
