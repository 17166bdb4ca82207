"""grading.toml validation: every mistake is caught before grading, with the line or key
and the fix, and the command line exits 2 with one line (no traceback).

The cases are driven by the declaration of every key, ``autograder.config.KEYS``: one case
per kind of rule (a value of the wrong kind, a range, an unknown key with the nearest name,
a missing required key, a choice, a name pattern) covers every key declared with that rule,
and each key's own rule has its case below. They call the parser in this process; a few
cases at the end go through the command line."""

from __future__ import annotations

import os
import re
from dataclasses import fields

import pytest
from conftest import ROOT, TOTAL_POINTS, grade, write_config

from autograder.config import (
    KEPT,
    KEY,
    KEYS,
    NUMBER,
    REQUIRED,
    TABLE,
    TABLES,
    VISIBLE_SUITES,
    VISIBLE_SUM,
    VISIBLE_TESTS,
    WHOLE,
    ConfigError,
    GradescopeRelease,
    Limits,
    NbgraderRelease,
    SandboxSettings,
    keys_markdown,
    keys_under,
    load,
)


def _config(tmp_path, edits=None, **limits):
    return write_config(tmp_path / "grading.toml", edits, **limits)


# --------------------------------------------------------------------------- editing a key by its declaration
#: the repository grading.toml's instance of each ``<…>`` name of a declared path
INSTANCE = {"<id>": "qkv", "<test>": "test_project_qkv_reproduces_week7_q_k_v", "<name>": "week7", "<skill>": "row_softmax"}
HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _concrete(path: str) -> tuple[str, str]:
    """A declared path as the repository's grading.toml has it: (the TOML name, the dotted path
    the messages print), e.g. ``skills.<id>.suites[].file`` → (skills.qkv.suites.file, skills.qkv.suites[0].file)."""
    parts = [INSTANCE.get(p, p) for p in path.split(".")] if path else []
    return ".".join(p.removesuffix("[]") for p in parts), ".".join(parts).replace("[].", "[0].").replace("[]", "[0]")


class Toml:
    """grading.toml (as write_config writes it) as lines, edited key by key."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def headers(self) -> list[tuple[int, str]]:
        return [(i, m.group(2)) for i, line in enumerate(self.lines) if (m := HEADER.match(line))]

    def block(self, table: str) -> tuple[int, int]:
        """The first block of a table: (its header's index, the index after its last line); the
        top level for ""."""
        heads = self.headers()
        if not table:
            return -1, heads[0][0]
        name = _concrete(table)[0]
        for k, (i, head) in enumerate(heads):
            if head == name:
                return i, heads[k + 1][0] if k + 1 < len(heads) else len(self.lines)
        raise LookupError(table)

    def set(self, table: str, name: str, value: str) -> int:
        """``name = value`` in the table (replacing its line there, if any); its line number."""
        start, end = self.block(table)
        for i in range(start + 1, end):
            if re.match(rf"^\s*{re.escape(name)}\s*=", self.lines[i]):
                self.lines[i] = f"{name} = {value}"
                return i + 1
        self.lines.insert(start + 1, f"{name} = {value}")
        return start + 2

    def remove(self, table: str, name: str) -> int:
        """Removes the key's line; the line number of its table's header."""
        start, end = self.block(table)
        for i in range(start + 1, end):
            if re.match(rf"^\s*{re.escape(name)}\s*=", self.lines[i]):
                self.lines[i] = ""
                return start + 1
        raise LookupError(name)

    def replace_table(self, path: str, value: str) -> int:
        """The table removed with its sub-tables (for an array of tables: all its tables), and
        ``name = value`` written in its parent instead; that line's number."""
        key, name, heads = KEY[path], _concrete(path)[0], self.headers()
        own = [i for i, head in heads if head == name]
        gone = [i for i, head in heads if head.startswith(name + ".") or (head == name and (key.kind == TABLES or i == own[0]))]
        assert gone, path
        ends = {i: next((j for j, _ in heads if j > i), len(self.lines)) for i in gone}
        for i in sorted(gone, reverse=True):  # from the end, so the indexes stay right
            del self.lines[i : ends[i]]
        entry = INSTANCE.get(key.name, key.name)
        try:
            return self.set(key.table, entry, value)
        except LookupError:  # a parent written only as its sub-tables' prefix ([skills.qkv], no [skills]): give it a header
            self.lines[0:0] = [f"[{_concrete(key.table)[0]}]", f"{entry} = {value}"]
            return 2

    def write(self, tmp_path):
        path = tmp_path / "grading.toml"
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path


@pytest.fixture
def toml(tmp_path) -> Toml:
    return Toml(write_config(tmp_path / "base.toml").read_text(encoding="utf-8").splitlines())


def _load(path):
    """The parser alone: the suite files are not read (their rules have their cases in UNIQUE)."""
    return load(path, check_files=False)


def _error(tmp_path, toml: Toml) -> str:
    with pytest.raises(ConfigError) as info:
        _load(toml.write(tmp_path))
    return str(info.value)


def _table_and_name(key) -> tuple[str, str]:
    return key.table, INSTANCE.get(key.name, key.name)


def _keys(*kinds: str, where=lambda key: True) -> list:
    return [key for key in KEYS if key.kind in kinds and where(key)]


# --------------------------------------------------------------------------- the repository's config
def test_repository_config_is_valid_and_points_add_up():
    config = load(ROOT / "grading.toml")
    assert set(config.skills) >= {"qkv"}
    for skill in config.skills.values():
        assert sum(w for s in skill.suites for w in s.weights.values()) == pytest.approx(skill.points)
    assert len({t.node_id for t in config.tests}) == len(config.tests)


def _declared(table: str, key: str) -> str:
    """The declared path of a ``key = value`` line under the header ``table`` of grading.toml."""
    table = re.sub(r"^skills\.[a-z][a-z0-9_]*", "skills.<id>", table)
    table = table.replace("skills.<id>.suites", "skills.<id>.suites[]").replace("release.gradescope.limits", "limits")
    table = table.replace("course.texts", "course.texts[]")
    wildcard = {"skills.<id>.suites[].weights": "<test>", "release.assignments": "<name>", "release.rules": "<skill>"}
    return f"{table}.{wildcard.get(table, key)}" if table else key


def _key_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, table header, key) of every `key = value` line of a TOML file."""
    out, table = [], ""
    for number, line in enumerate(text.splitlines(), start=1):
        if header := HEADER.match(line):
            table = header.group(2)
        elif key := re.match(r"^\s*([A-Za-z0-9_]+)\s*=", line):
            out.append((number, table, key.group(1)))
    return out


def test_every_line_of_grading_toml_with_a_value_of_the_wrong_kind_is_named_by_its_line(tmp_path, toml):
    """Each `key = value` line of the repository's grading.toml (every weight, every limit, …),
    given a value of the wrong kind: the message names the file, that line, the key, and says
    what the key takes — in the parser, key by key (the command line's handling of any such
    error is test_cli_config_error_of_a_key_is_one_line_exit_2_and_a_results_file)."""
    base = list(toml.lines)
    checked = 0
    for number, table, name in _key_lines("\n".join(base)):
        key = KEY[_declared(table, name)]  # every key of the repository's file is declared
        toml.lines = list(base)
        toml.lines[number - 1] = f"{name} = {{ bad = true }}"
        message = _error(tmp_path, toml)
        dotted = message.split(": ")[1]
        assert message.startswith(f"grading.toml:{number}: ") and dotted.endswith(f".{name}"), message
        assert message.endswith(": " + key.wrong_message({"bad": True}, dotted)), message
        checked += 1
    assert checked > 150


# --------------------------------------------------------------------------- one case per kind of rule
KINDS = sorted({key.kind for key in KEYS})


@pytest.mark.parametrize("kind", KINDS)
def test_every_declared_key_rejects_a_value_of_the_wrong_kind(tmp_path, toml, kind):
    """For each key of the kind (a table too): file:line, the dotted key, and the declared message."""
    base = list(toml.lines)
    keys = _keys(kind)
    for key in keys:
        toml.lines = list(base)
        value = "3" if kind in (TABLE, TABLES) else "{ bad = true }"
        if kind in (TABLE, TABLES):
            line = toml.replace_table(key.path, value)
        else:
            line = toml.set(*_table_and_name(key), value)
        dotted = _concrete(key.path)[1]
        if kind == TABLES:
            dotted = dotted.removesuffix("[0]")
        wanted = f"grading.toml:{line}: {dotted}: {key.wrong_message(3 if kind in (TABLE, TABLES) else {'bad': True}, dotted)}"
        assert _error(tmp_path, toml) == wanted, (key.path, toml.lines[line - 1])
    assert keys


def _tables() -> list[str]:
    """Every declared table whose keys are fixed (not one of named entries), "" the top level."""
    tables = [""] + [key.path for key in KEYS if key.kind in (TABLE, TABLES)] + ["skills.<id>.suites[]"]
    return [
        t
        for t in tables
        if keys_under(t) and not any(k.name.startswith("<") for k in keys_under(t)) and t != "skills.<id>.suites"
    ]


@pytest.mark.parametrize("near", [True, False], ids=["near-name", "far-name"])
def test_every_table_rejects_an_unknown_key(tmp_path, toml, near):
    """A key no table declares: the nearest declared name, or the list of them."""
    base = list(toml.lines)
    for table in _tables():
        toml.lines = list(base)
        allowed = [key.name for key in keys_under(table)]
        name = allowed[0] + "x" if near else "zzqq"
        if not table:  # the top level: before the first table
            toml.lines.insert(0, f"{name} = 1")
            line = 1
        else:
            line = toml.set(table, name, "1")
        dotted = ".".join(filter(None, [_concrete(table)[1], name]))
        hint = f" — did you mean {allowed[0]!r}?" if near else f" (allowed: {', '.join(allowed)})"
        assert _error(tmp_path, toml) == f"grading.toml:{line}: {dotted}: unknown key{hint}", table


def test_every_required_key_is_required(tmp_path, toml):
    base = list(toml.lines)
    keys = [key for key in KEYS if key.default is REQUIRED and "<" not in key.name]
    for key in keys:
        toml.lines = list(base)
        line = toml.remove(key.table, key.name)
        assert _error(tmp_path, toml) == f"grading.toml:{line}: {_concrete(key.path)[1]}: is required", key.path
    assert {key.name for key in keys} == {"name", "title", "points", "module", "file", "visibility"}


def _bounds(key) -> list[tuple[str, str]]:
    """(a value out of the key's range, the message it gets)."""
    out = []
    if key.minimum is not None:
        value = key.minimum if key.above else key.minimum - 1
        low = key.low or (
            "must be greater than {minimum:g}, got {value!r}" if key.above else "must be {minimum:g} or more, got {value!r}"
        )
        out.append((str(value), low.format(minimum=key.minimum, value=value)))
    if key.maximum is not None:
        out.append((f"{key.maximum + 1}", f"must be at most {key.maximum}, got {key.maximum + 1}"))
    if key.kind == WHOLE:
        out.append(("2.5", "must be a whole number, got 2.5"))
    return out


def test_every_number_is_range_checked(tmp_path, toml):
    """Below its minimum, above its maximum, not whole: each number key, with its line."""
    base = list(toml.lines)
    keys = _keys(NUMBER, WHOLE)
    for key in keys:
        for value, message in _bounds(key):
            toml.lines = list(base)
            line = toml.set(*_table_and_name(key), value)
            assert _error(tmp_path, toml) == f"grading.toml:{line}: {_concrete(key.path)[1]}: {message}", (key.path, value)
    assert all(_bounds(key) for key in keys)


def test_every_number_takes_its_extreme_values(tmp_path, toml):
    """A key's maximum (or, without one, its minimum where allowed) is not refused by its range:
    what may still be refused is another key's rule (skill_time_s ≥ call_timeout_s, points = weights)."""
    base = list(toml.lines)
    for key in _keys(NUMBER, WHOLE):
        value = key.maximum if key.maximum is not None else (key.minimum if not key.above else None)
        if value is None:
            continue
        toml.lines = list(base)
        line = toml.set(*_table_and_name(key), str(value))
        try:
            _load(toml.write(tmp_path))
        except ConfigError as exc:
            assert f"grading.toml:{line}: {_concrete(key.path)[1]}: must" not in str(exc) or "at least call_timeout_s" in str(
                exc
            ), str(exc)


def test_every_choice_is_taken_and_nothing_else(tmp_path, toml):
    base = list(toml.lines)
    keys = [key for key in KEYS if key.choices]
    for key in keys:
        for choice in key.choices:
            toml.lines = list(base)
            toml.set(*_table_and_name(key), f'"{choice}"')
            _load(toml.write(tmp_path))
        toml.lines = list(base)
        line = toml.set(*_table_and_name(key), '"nope"')
        wanted = f"grading.toml:{line}: {_concrete(key.path)[1]}: must be one of {', '.join(key.choices)}; got 'nope'"
        assert _error(tmp_path, toml) == wanted
    assert len(keys) == 5


def test_every_named_entry_has_its_name_checked(tmp_path, toml):
    """``[skills.<id>]`` and ``[release.assignments] <name>``: a name outside the declared pattern."""
    base = list(toml.lines)
    keys = [key for key in KEYS if key.names]
    for key in keys:
        toml.lines = list(base)
        parent = _concrete(key.table)[0]
        if key.kind == TABLE:  # [skills.qkv] and its suites renamed
            own = re.compile(rf"^(\[+){re.escape(parent)}\.{INSTANCE[key.name]}\b")
            toml.lines = [own.sub(rf'\1{parent}."Bad Name"', line) for line in toml.lines]
            line = toml.lines.index(f'[{parent}."Bad Name"]') + 1
        else:
            line = toml.set(key.table, '"Bad Name"', '["qkv"]')
        assert _error(tmp_path, toml) == f"grading.toml:{line}: {parent}.Bad Name: {key.bad_name}", key.path
    assert len(keys) == 2


def test_the_dataclasses_take_their_fields_and_defaults_from_the_declaration():
    for cls, table in (
        (Limits, "limits"),
        (SandboxSettings, "sandbox"),
        (NbgraderRelease, "release.nbgrader"),
        (GradescopeRelease, "release.gradescope"),
    ):
        declared = keys_under(table)
        assert [f.name for f in fields(cls)] == [key.name for key in declared], cls
        made = cls()
        for key in declared:
            if key.kind != TABLE:
                assert getattr(made, key.name) == key.default and type(getattr(made, key.name)) is type(key.default), key.path
    assert keys_under("release.gradescope.limits") == keys_under("limits")


def test_optional_tables_left_out_take_the_declared_defaults(tmp_path, toml):
    """Without [course], [limits], [sandbox], [gradescope], [ci], the [grader] keys but root, and
    [release]: every default is the declared one, and the bundle's run_timeout_s, inherited from
    [limits] (900 s), is cut below the default time_budget_s instead of refusing the file."""
    for table in (
        "release.gradescope",
        "release.nbgrader",
        "release.assignments",
        "release.rules",
        "release",
        "course",
        "limits",
        "sandbox",
        "gradescope",
        "ci",
    ):
        toml.replace_table(table, "{}")
    toml.lines = [line for line in toml.lines if not re.match(r"^(course|limits|sandbox|gradescope|ci|release) = \{\}$", line)]
    toml.lines = [line for line in toml.lines if not re.match(r"^(seed|solutions_dir|exercises_dir|suites_dir) = ", line)]
    config = _load(toml.write(tmp_path))
    default = {key.path: key.default for key in KEYS}
    assert config.course == default["course.name"]
    assert (config.seed, config.seed_mode) == (None, default["grader.seed"])
    assert [config.solutions_dir, config.exercises_dir, config.suites_dir] == [
        ROOT / default[f"grader.{d}"] for d in ("solutions_dir", "exercises_dir", "suites_dir")
    ]
    assert config.limits == Limits() and config.sandbox == SandboxSettings() and config.nbgrader_release == NbgraderRelease()
    assert config.gradescope_visibility == {"visible": default["gradescope.visible"], "hidden": default["gradescope.hidden"]}
    budget = default["release.gradescope.time_budget_s"]
    assert config.gradescope_release == GradescopeRelease(limits=Limits(run_timeout_s=round(0.9 * budget, 3)))
    assert config.gradescope_release.limits.run_timeout_s < budget < Limits().run_timeout_s
    assert (
        config.platforms == default["release.platforms"]
        and config.ci_fail_below == default["ci.fail_below"]
        and config.assignments == {}
    )


# --------------------------------------------------------------------------- each key's own rule
UNIQUE = [
    # the declared checks (Key.check, Key.item, Key.low)
    ({'module = "qkv.py"': 'module = "qkv"'}, "skills.qkv.module: must be a Python file name like 'qkv.py', got 'qkv'"),
    (
        {'seed = "content"': 'seed = "sometimes"'},
        'grader.seed: must be "content", "fresh" or a non-negative integer, got \'sometimes\'',
    ),
    ({'seed = "content"': "seed = -1"}, 'grader.seed: must be "content", "fresh" or a non-negative integer, got -1'),
    ({"memory_mib = 4096": "memory_mib = 512"}, "limits.memory_mib: must be at least 768 (torch alone maps ~620 MiB), got 512"),
    ({"memory_mib = 800 ": "memory_mib = 700 "}, "release.gradescope.limits.memory_mib: must be at least 768"),
    ({'user = "nobody"': 'user = "no body; rm"'}, "sandbox.user: must be a user name like 'nobody', got 'no body; rm'"),
    (
        {'course_id = "attention"': 'course_id = "a b"'},
        "release.nbgrader.course_id: must be letters, digits, - or _ (nbgrader uses it",
    ),
    ({'assignment = "attention"': 'assignment = "x/y"'}, "release.nbgrader.assignment: must be letters, digits, - or _"),
    (
        {'preload = ["torch.fx.experimental.symbolic_shapes"]': 'preload = ["torch fx"]'},
        "skills.custom_backward.preload: must be a list of module names",
    ),
    (
        {'docs = ["docs/EXERCISES.md", "docs/lessons"]': 'docs = ["docs/EXERCISES.md", " "]'},
        "release.docs: must be a list of repository paths",
    ),
    ({"fail_below = 0": "fail_below = -1"}, "ci.fail_below: must be 0 (never fail for the score) or a number of points, got -1"),
    (
        {'week7 = ["qkv", "masks", "row_softmax"]': "week7 = []"},
        'release.assignments.week7: must be a non-empty list of skill ids, e.g. ["qkv", "masks"]',
    ),
    ({"[release.rules]": '[release.rules]\nqkv = " "'}, "release.rules.qkv: must be the rule's text (a non-empty string)"),
    # the rules that tie keys together
    (
        {'points = 20\nmodule = "qkv.py"': 'points = 21\nmodule = "qkv.py"'},
        "skills.qkv.points: is 21 but the weights of its tests add up to 20",
    ),
    (
        {'file = "tests/suites/qkv/test_qkv_hidden.py"': 'file = "tests/suites/qkv/test_qkv_visible.py"'},
        "already listed under skill 'qkv'; each test belongs to exactly one skill",
    ),
    ({'module = "masks.py"': 'module = "qkv.py"'}, "skills.qkv.module: qkv.py is used by more than one skill"),
    (
        {"test_rule_backward_uses_no_autograd = 0": "test_rule_backward_uses_no_autograd = -1"},
        "test_rule_backward_uses_no_autograd: must be 0 or more, got -1",
    ),
    (
        {'module = "qkv.py"': 'module = "qkv.py"\ngates = ["test_scale_scores_divides_by_sqrt_dkk"]'},
        "skills.qkv.gates: 'test_scale_scores_divides_by_sqrt_dkk' is not a test of skill qkv — did you mean "
        "'test_scale_scores_divides_by_sqrt_dk'?",
    ),
    (
        {"test_scale_scores_divides_by_sqrt_dk = 1": "test_scale_scores_divides_by_sqrt_dk = 0"},
        "test_scale_scores_divides_by_sqrt_dk: must be greater than 0, got 0",
    ),
    (
        {
            (
                'properties = ["test_custom_backward_keeps_dtype_and_leaves_inputs_unchanged"'
            ): 'properties = ["test_rule_backward_uses_no_autograd"'
        },
        "'test_rule_backward_uses_no_autograd' is a gate (a rule of the exercise), not a property test",
    ),
    ({"skill_time_s = 30": "skill_time_s = 5"}, "limits.skill_time_s: must be at least call_timeout_s (10), got 5"),
    (
        {"fail_below = 0": "fail_below = 1000"},
        f"ci.fail_below: is 1000 but the skills give only {TOTAL_POINTS:g} points; lower it",
    ),
    (
        {"platform_timeout_s = 600": "platform_timeout_s = 500"},
        "release.gradescope.time_budget_s: is 480 s, but Gradescope stops the container at platform_timeout_s = 500 s",
    ),
    (
        {"run_timeout_s = 360 ": "run_timeout_s = 500 "},
        "release.gradescope.limits.run_timeout_s: is 500 s but must be below time_budget_s",
    ),
    (
        {'day1 = ["custom_backward"': 'day1 = ["qkvv", "custom_backward"'},
        "release.assignments.day1: 'qkvv' is not a skill — did you mean 'qkv'?",
    ),
    (
        {'day1 = ["custom_backward"': 'day1 = ["qkv", "custom_backward"'},
        "release.assignments.day1: skill 'qkv' is already in assignment 'week7'; a skill belongs to one assignment",
    ),
    ({'root = "': 'root = "/nonexistent/x" #'}, "grader.root: /nonexistent/x is not a directory"),
    ({'id = "llm-attention"': 'id = "../keys"'}, "course.id: must be 1-64 letters, digits, ., - or _"),
]


#: the rules that read the suite files (load with check_files)
SUITE_FILES = [
    (
        {'file = "tests/suites/qkv/test_qkv_visible.py"': 'file = "tests/suites/qkv/test_qkv_visibel.py"'},
        "does not exist — fix the path",
    ),
    (
        {"test_attention_scores_reproduce_week7_raw_scores = 1\n": "test_attention_scores_reproduce_week7_raw_score = 1\n"},
        "no test function test_attention_scores_reproduce_week7_raw_score in tests/suites/qkv/test_qkv_visible.py — "
        "did you mean 'test_attention_scores_reproduce_week7_raw_scores'",
    ),
    ({"test_scale_scores_divides_by_sqrt_dk = 1\n": ""}, "defines test_scale_scores_divides_by_sqrt_dk but it has no weight"),
]


@pytest.mark.parametrize(
    "edit, message, check_files",
    [(*case, False) for case in UNIQUE] + [(*case, True) for case in SUITE_FILES],
    ids=lambda v: v[:60] if isinstance(v, str) else "",
)
def test_each_keys_own_rule_names_the_key_its_line_and_the_fix(tmp_path, edit, message, check_files):
    path = _config(tmp_path, edit)
    with pytest.raises(ConfigError) as info:
        load(path, check_files=check_files)
    text = str(info.value)
    assert message in text
    line = int(text.split(":")[1])
    key = text.split(": ")[1].split(".")[-1].split("[")[0]
    assert text.startswith("grading.toml:") and key in path.read_text(encoding="utf-8").splitlines()[line - 1], text


def test_every_declared_own_rule_has_its_case():
    """A key with a rule of its own (a check, an element pattern, a message below its minimum)
    has a case in UNIQUE (or, for [release] platforms, its own test): a new rule cannot go untested."""
    messages = [message for _, message in UNIQUE] + ["release.platforms: unknown platform"]
    ruled = [key for key in KEYS if key.check or key.item or key.low]
    for key in ruled:
        assert any(f".{key.name}: " in message for message in messages), key.path
    assert len(ruled) == 10


def test_config_error_carries_a_line_number(tmp_path):
    path = _config(tmp_path, {'points = 20\nmodule = "qkv.py"': 'points = 21\nmodule = "qkv.py"'})
    with pytest.raises(ConfigError) as info:
        _load(path)
    line = int(str(info.value).split(":")[1])
    assert "points = 21" in path.read_text().splitlines()[line - 1]


def test_invalid_toml_reports_line(tmp_path):
    path = _config(tmp_path, {'name = "LLM course · attention exercises"': 'name = "unterminated'})
    with pytest.raises(ConfigError) as info:
        _load(path)
    assert str(info.value).startswith("grading.toml:") and "invalid TOML" in str(info.value)


def test_config_errors_in_a_second_suite_table_name_that_tables_line(tmp_path):
    path = _config(
        tmp_path,
        {
            (
                'file = "tests/suites/qkv/test_qkv_hidden.py"\nvisibility = "hidden"'
            ): 'file = "tests/suites/qkv/test_qkv_hidden.py"\nvisibility = "secret"'
        },
    )
    with pytest.raises(ConfigError) as info:
        _load(path)
    line = int(str(info.value).split(":")[1])
    assert 'visibility = "secret"' in path.read_text().splitlines()[line - 1], str(info.value)
    assert "skills.qkv.suites[1].visibility" in str(info.value)


def test_a_suite_entry_that_is_not_a_table(tmp_path, toml):
    line = toml.replace_table("skills.<id>.suites", "[1]")
    assert _error(tmp_path, toml) == f"grading.toml:{line}: skills.qkv.suites[0]: must be a table, got int"


@pytest.mark.skipif(os.geteuid() != 0, reason="the user is only used (and checked) when grading as root")
def test_an_unknown_sandbox_user_is_a_config_error_when_grading_as_root(tmp_path):
    path = _config(tmp_path, {'user = "nobody"': 'user = "no-such-user-here"'})
    with pytest.raises(ConfigError, match=r"sandbox\.user: user 'no-such-user-here' does not exist on this machine"):
        _load(path)


@pytest.mark.parametrize(
    "value, message",
    [
        ('["gradescope", "moodle"]', "release.platforms: unknown platform 'moodle'"),
        ('["gradescop"]', "did you mean 'gradescope'?"),
        ('["github-classroom"]', 'GitHub Classroom was discontinued (2026) — list "classroom50"'),
        ('["gradescope", "gradescope"]', "'gradescope' is listed twice"),
        ("[]", "release.platforms: must be a non-empty list of platforms"),
        ('"gradescope"', "release.platforms: must be a non-empty list of platforms"),
    ],
)
def test_release_platforms_are_checked_with_their_line(tmp_path, value, message):
    """`[release] platforms` (where students submit: the README's "How to submit", dist/classroom50)."""
    path = _config(tmp_path, {'platforms = ["gradescope", "github-actions", "classroom50"]': f"platforms = {value}"})
    with pytest.raises(ConfigError) as info:
        _load(path)
    assert message in str(info.value)
    line = int(str(info.value).split(":")[1])
    assert path.read_text().splitlines()[line - 1].startswith("platforms = ")


def test_release_platforms_default_to_gradescope_and_actions(tmp_path):
    assert _load(ROOT / "grading.toml").platforms == ("gradescope", "github-actions", "classroom50")
    path = _config(tmp_path, {'platforms = ["gradescope", "github-actions", "classroom50"]\n': ""})
    assert _load(path).platforms == ("gradescope", "github-actions")


# --------------------------------------------------------------------------- the declaration's other readers
def test_config_doc_lists_every_key_as_declared():
    """docs/CONFIG.md's key list is the declaration's (``python -m autograder config-keys --write docs/CONFIG.md``)."""
    from autograder.config import DOC_BEGIN, DOC_END

    text = (ROOT / "docs" / "CONFIG.md").read_text(encoding="utf-8")
    section = text[text.index(DOC_BEGIN) + len(DOC_BEGIN) : text.index(DOC_END)]
    assert section.strip() == keys_markdown().strip(), (
        "docs/CONFIG.md's grading.toml keys are stale: run `python -m autograder config-keys --write docs/CONFIG.md`"
    )
    assert all(f"`{key.path}`" in section or f"[{key.path}]" in section for key in KEYS)


def test_the_student_copy_treats_each_key_as_declared():
    """release/files.py's student grading.toml: each skill key is kept, summed over visible tests,
    or cut to visible tests or suites, as its declaration says (the repository's file: the
    hidden suites hold gates and properties, so every policy is exercised)."""
    import tomllib

    from autograder.instructor.release.files import filtered_grading_toml

    assert {key.student for key in KEYS} == {KEPT, VISIBLE_SUM, VISIBLE_TESTS, VISIBLE_SUITES}
    full = tomllib.loads((ROOT / "grading.toml").read_text(encoding="utf-8"))
    student = tomllib.loads(filtered_grading_toml((ROOT / "grading.toml").read_text(encoding="utf-8"), include_hidden=False))
    emptied = 0
    for sid, skill in full["skills"].items():
        visible = [s for s in skill["suites"] if s["visibility"] == "visible"]
        tests = {name for s in visible for name in s["weights"]}
        for key in keys_under("skills.<id>"):
            if key.name not in skill:
                continue
            got = student["skills"][sid].get(key.name)
            if key.student == KEPT:
                assert got == skill[key.name], (sid, key.name)
            elif key.student == VISIBLE_SUM:
                assert got == pytest.approx(sum(sum(s["weights"].values()) for s in visible)) and got < skill[key.name], (
                    sid,
                    key.name,
                )
            elif key.student == VISIBLE_TESTS:
                kept = [name for name in skill[key.name] if name in tests]
                assert got == (kept or None), (sid, key.name)
                emptied += not kept
            else:
                assert got == visible, (sid, key.name)
    assert emptied, "no gate or property list went away: the repository's file no longer exercises that policy"
    for table in ("course", "grader", "limits", "sandbox", "gradescope", "ci", "release"):
        assert student.get(table) == full.get(table), table


def test_config_keys_command_prints_the_declaration(capsys):
    from autograder import cli

    assert cli.main(["config-keys"]) == 0
    assert capsys.readouterr().out == keys_markdown()


# --------------------------------------------------------------------------- end to end: the command line
def test_cli_config_error_is_one_line_and_exit_2(tmp_path):
    path = _config(tmp_path, {'points = 20\nmodule = "qkv.py"': 'points = 19\nmodule = "qkv.py"'})
    result = grade(ROOT / "solutions", config=path, output=tmp_path / "r.json")
    assert result.rc == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and "skills.qkv.points" in result.stderr


def test_cli_config_error_of_a_key_is_one_line_exit_2_and_a_results_file(tmp_path, capsys, toml):
    """A value of the wrong kind (any key: the parser's cases above): exit 2, one line on stderr
    naming the file, the key's line and the key, and a results file all the same."""
    import json

    from autograder import cli

    line = toml.set("limits", "call_timeout_s", "{ bad = true }")
    path = toml.write(tmp_path)
    out = tmp_path / "r.json"
    rc = cli.main(
        ["grade", str(ROOT / "solutions"), "--config", str(path), "--output", str(out), "--format", "json", "--no-progress"]
    )
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"autograder: grading.toml:{line}: limits.call_timeout_s: must be a number"), err
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["status"] == "error" and data["score"] == 0 and "configuration error" in data["message"]


def test_unknown_skill_flag_suggests_the_right_one(tmp_path):
    result = grade(ROOT / "solutions", "--skill", "qvk", output=tmp_path / "r.json")
    assert result.rc == 2
    assert "unknown skill 'qvk'" in result.stderr and "did you mean 'qkv'" in result.stderr


def test_unknown_format_is_a_usage_error():
    result = grade(ROOT / "solutions", fmt="yaml", seed=None)
    assert result.rc == 2 and "invalid choice" in result.stderr and "Traceback" not in result.stderr
