"""``grading.toml``: the one place for skills, points, visibility, limits and release settings.

Every key is declared once, in :data:`KEYS` (its type, default, range, own rule, help text and
what the student copy of ``make release`` does with it): the parser, the dataclasses' defaults,
the release's student-copy filter and the key list in docs/CONFIG.md (:func:`keys_markdown`,
``python -m autograder config-keys``) all read that declaration.

Loading validates everything before a single test runs, and every problem is reported as
``grading.toml:LINE: key.path: what is wrong — how to fix it``. The test files named in
the config are parsed (never imported) to check that every test has a weight and every
weight has a test.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import math
import os
import pwd
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VISIBILITIES = ("visible", "hidden")
GRADESCOPE_VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
#: ``[release] platforms``: where the course's students submit and get feedback (the student
#: README says how for each; ``classroom50`` also makes ``make release`` write dist/classroom50)
PLATFORMS = ("gradescope", "github-actions", "classroom50")
DEFAULT_PLATFORMS = ("gradescope", "github-actions")
SKILL_ID = re.compile(r"^[a-z][a-z0-9_]*$")
USER_NAME = re.compile(r"^[a-z_][a-z0-9_.-]*\$?$", re.IGNORECASE)
#: a worker's address space must hold torch (~620 MiB mapped); the reference grades in full at 680
MIN_MEMORY_MIB = 768
SANDBOX_MODES = ("auto", "require", "off")


class ConfigError(Exception):
    """A problem in grading.toml; ``str()`` is the one-line message for the user."""


# --------------------------------------------------------------------------- the declaration
#: the kinds of value a key takes (each has its own wrong-type message, :data:`WRONG`)
NUMBER, WHOLE, TEXT, LIST, TABLE, TABLES, SEED = "number", "whole number", "string", "list", "table", "array of tables", "seed"
#: what the student copy of ``make release`` (release/files.py ``filtered_grading_toml``) does with a key
KEPT = "kept"
VISIBLE_SUM = "the sum of the visible tests' weights"
VISIBLE_TESTS = "visible tests only (the key goes when none is left)"
VISIBLE_SUITES = "visible suites only"
REQUIRED: Any = type("Required", (), {"__repr__": lambda self: "REQUIRED"})()
#: the message for a value of the wrong kind; ``{value}``, ``{type}`` and ``{path}`` are filled in
WRONG = {
    NUMBER: "must be a number, got {value!r}",
    WHOLE: "must be a number, got {value!r}",
    TEXT: "must be a non-empty string, got {value!r}",
    LIST: "must be a list of strings",
    TABLE: "must be a table, got {type}",
    TABLES: "must be an array of tables ([[{path}]])",
    SEED: 'must be "content", "fresh" or a non-negative integer, got {value!r}',
}


@dataclass(frozen=True)
class Key:
    """One key (or table) of grading.toml. In ``path``, ``<id>``, ``<name>``, ``<test>`` and
    ``<skill>`` stand for any name the course chooses, and ``[]`` for each table of an array."""

    path: str
    kind: str
    help: str
    default: Any = REQUIRED  # REQUIRED: the key must be given; None: optional, no value
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    above: bool = False  # the minimum itself is not allowed (``> minimum``, not ``>= minimum``)
    maximum: float | None = None
    item: str | None = None  # LIST: a regular expression each element must match in full
    wrong: str = ""  # the message for a value of the wrong kind (default: WRONG[kind])
    empty: str = ""  # LIST, TABLE, TABLES: the message when it is empty (default: empty is allowed)
    low: str = ""  # the message below the minimum (default: "must be greater than 0" / "must be 0 or more")
    names: str | None = None  # a ``<…>`` key: the regular expression its name must match in full
    bad_name: str = ""  # … and the message when it does not
    #: the key's own rule, after its kind and range: the value → the message, or None when fine
    check: Callable[[Any], str | None] | None = None
    student: str = KEPT  # what the student copy of ``make release`` does with it
    #: a TABLE whose keys are those declared under another table (``[release.gradescope.limits]``)
    same_as: str | None = None

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def table(self) -> str:
        return self.path.rpartition(".")[0]

    def wrong_message(self, value: Any, where: str) -> str:
        return (self.wrong or WRONG[self.kind]).format(value=value, type=type(value).__name__, path=where)


def _module_file(value: str) -> str | None:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\.py", value):
        return f"must be a Python file name like 'qkv.py', got {value!r}"
    return None


def _at_least_min_memory(value: int) -> str | None:
    if value < MIN_MEMORY_MIB:
        return f"must be at least {MIN_MEMORY_MIB} (torch alone maps ~620 MiB), got {value}"
    return None


def _nbgrader_name(value: str) -> str | None:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", value):
        return f"must be letters, digits, - or _ (nbgrader uses it as a folder and an id), got {value!r}"
    return None


def _course_id(value: str) -> str | None:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", value):
        return f"must be 1-64 letters, digits, ., - or _ (it names the course key's file), got {value!r}"
    return None


def _sandbox_user(user: str) -> str | None:
    """The user submission code runs as when grading as root. It must exist there; on a
    machine where the grader is not root the setting is not used, so only its form is checked."""
    if not USER_NAME.match(user):
        return f"must be a user name like 'nobody', got {user!r}"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(user)
        except KeyError:
            return (
                f"user {user!r} does not exist on this machine — create it or name an existing unprivileged user (e.g. 'nobody')"
            )
    return None


def _platforms(names: list[str]) -> str | None:
    for name in names:
        if name in ("github-classroom", "classroom"):
            return (
                f'{name!r}: GitHub Classroom was discontinued (2026) — list "classroom50" (its open-source successor) '
                'and/or "github-actions" (the feedback workflow) instead'
            )
        if name not in PLATFORMS:
            return f"unknown platform {name!r}" + _near(name, list(PLATFORMS)) + f" (known: {', '.join(PLATFORMS)})"
        if names.count(name) > 1:
            return f"{name!r} is listed twice"
    return None


_PLATFORMS_WRONG = f"must be a non-empty list of platforms, e.g. {list(DEFAULT_PLATFORMS)!r} (known: {', '.join(PLATFORMS)})"
_ASSIGNMENT_WRONG = 'must be a non-empty list of skill ids, e.g. ["qkv", "masks"]'
_TEST_NAMES = "must be a list of test function names"


def _limit(name: str, kind: str, default: float, maximum: float, help: str, **more: Any) -> Key:
    return Key(f"limits.{name}", kind, help, default, minimum=0, above=more.pop("above", True), maximum=maximum, **more)


#: every key of grading.toml, in the order the parser reads them (the order of the "allowed:"
#: lists in its messages)
KEYS: tuple[Key, ...] = (
    Key("course", TABLE, "the course", {}),
    Key("course.name", TEXT, "the course's name, in the reports and the student README", "Attention exercises"),
    Key(
        "course.id",
        TEXT,
        'what identifies the course on an instructor\'s machine, e.g. "llm-attention-2026s": the course seed key is '
        "~/.config/attention-autograder/<id>.seed.key (without it, the course's name: two courses of one name would "
        "share a key)",
        None,
        check=_course_id,
    ),
    Key("grader", TABLE, "where the grader finds things, and how it seeds the random test inputs", {}),
    Key("grader.root", TEXT, "the repository, relative to this file, for a config kept elsewhere (tests, CI)", None),
    Key(
        "grader.seed",
        SEED,
        '"content": an HMAC of the submission\'s files (same files → same inputs; key: '
        '$AUTOGRADER_SEED_KEY_FILE, else a public default); "fresh": a new seed per run; or a fixed non-negative integer',
        "content",
    ),
    Key("grader.solutions_dir", TEXT, "the reference solutions (instructors)", "solutions"),
    Key("grader.exercises_dir", TEXT, "the exercise modules (what `grade` grades without a SUBMISSION)", "exercises"),
    Key("grader.suites_dir", TEXT, "the grading suites", "tests/suites"),
    Key("limits", TABLE, "the limits of one grading run (each must be above 0 unless said otherwise)", {}),
    _limit(
        "call_timeout_s",
        NUMBER,
        10.0,
        3600,
        "wall-clock backstop per call into the submission (a killed worker is replaced); the CPU limits below stop "
        "endless loops first",
    ),
    _limit(
        "cpu_factor",
        NUMBER,
        10.0,
        1000,
        "a call may use this × the worker CPU time of the reference's costliest call of its skill "
        "(tests/suites/<skill>/snapshots/reference_cpu.toml, autograder/runner/cpu_limits.py); 0: no CPU limits, the "
        "wall-clock ones alone",
        above=False,
    ),
    _limit(
        "skill_cpu_factor",
        NUMBER,
        12.0,
        1000,
        "one skill's calls may use this × the worker CPU time of all the reference's calls of the skill",
    ),
    _limit("call_cpu_floor_s", NUMBER, 1.0, 3600, "a call's CPU-time limit is never below this (worker CPU seconds)"),
    _limit(
        "skill_cpu_floor_s",
        NUMBER,
        6.0,
        86400,
        "the CPU time one skill's calls may use in all is never below this (worker CPU seconds)",
    ),
    _limit(
        "skill_timeouts",
        WHOLE,
        3,
        1000,
        "once this many of a skill's functions have run past a call's time limit, its remaining calls fail fast "
        "(what endless loops cost, apart from the CPU budget that slow correct code needs); 0: no such cap",
        above=False,
    ),
    _limit(
        "memory_mib",
        WHOLE,
        4096,
        1 << 20,
        f"address-space limit of a worker (at least {MIN_MEMORY_MIB}: torch maps ~620 MiB)",
        check=_at_least_min_memory,
    ),
    _limit("output_kib", WHOLE, 64, 1 << 14, "what a submission prints is kept up to this, per call"),
    _limit("worker_start_timeout_s", NUMBER, 30.0, 3600, "how long a worker may take to start"),
    _limit("run_timeout_s", NUMBER, 900.0, 86400, "soft budget for the whole run; calls after it fail fast"),
    _limit(
        "skill_time_s",
        NUMBER,
        15.0,
        86400,
        "wall-clock backstop for one skill's calls into the submission in all (at least call_timeout_s); then they fail fast",
    ),
    _limit("max_module_kib", WHOLE, 512, 1 << 16, "larger exercise modules are not graded"),
    _limit("max_result_mib", WHOLE, 256, 1 << 12, "largest reply a worker may send"),
    _limit("file_write_mib", WHOLE, 16, 1 << 16, "largest file a worker may write (in its scratch folder)"),
    _limit(
        "max_helper_modules",
        WHOLE,
        16,
        256,
        "the submission's other top-level .py files its code may import (0: none)",
        above=False,
    ),
    _limit(
        "trusted_processes",
        WHOLE,
        2,
        2,
        "trusted pytest processes one run may use (runner/process/split.py: 2 on a machine with two "
        "cores to spare; 1 never splits — Gradescope's half a CPU gains nothing from a second, and two hostile workers at "
        "once would need twice the memory)",
    ),
    Key("sandbox", TABLE, "how submission code is confined", {}),
    Key(
        "sandbox.user",
        TEXT,
        "when grading as root: the unprivileged user submission code runs as (it must exist there)",
        "nobody",
        check=_sandbox_user,
    ),
    Key(
        "sandbox.landlock",
        TEXT,
        "Landlock file-system rules: used when the kernel has them (auto), demanded, or not used",
        "auto",
        choices=SANDBOX_MODES,
    ),
    Key(
        "sandbox.seccomp",
        TEXT,
        "the seccomp system-call filter: used when available (auto), demanded, or not used",
        "auto",
        choices=SANDBOX_MODES,
    ),
    Key("gradescope", TABLE, "Gradescope's visibility of the tests' results", {}),
    Key("gradescope.visible", TEXT, "when Gradescope shows the visible tests", "visible", choices=GRADESCOPE_VISIBILITIES),
    Key("gradescope.hidden", TEXT, "when Gradescope shows the hidden tests", "after_due_date", choices=GRADESCOPE_VISIBILITIES),
    Key(
        "skills",
        TABLE,
        "the skills, one table each; their points add up to the course's total",
        {},
        empty="no skills are defined — add a [skills.<id>] table",
    ),
    Key(
        "skills.<id>",
        TABLE,
        "one skill: its exercise module, its points and its test suites",
        names=SKILL_ID.pattern[1:-1],
        bad_name="skill ids are lower_snake_case identifiers",
    ),
    Key("skills.<id>.title", TEXT, "the skill's title in the reports"),
    Key(
        "skills.<id>.points",
        NUMBER,
        "the skill's points: the weights of its tests add up to them",
        minimum=0,
        above=True,
        student=VISIBLE_SUM,
    ),
    Key("skills.<id>.module", TEXT, 'the exercise module, e.g. "qkv.py" (one skill per module)', check=_module_file),
    Key("skills.<id>.sections", LIST, "the lesson sections the skill covers (the hints cite them)", ()),
    Key(
        "skills.<id>.suites",
        TABLES,
        "the skill's test files",
        (),
        wrong="needs at least one [[{path}]] entry",
        empty="needs at least one [[{path}]] entry",
        student=VISIBLE_SUITES,
    ),
    Key(
        "skills.<id>.gates",
        LIST,
        "rule tests (weight 0): if one fails, the whole skill scores 0",
        (),
        wrong=_TEST_NAMES,
        student=VISIBLE_TESTS,
    ),
    Key(
        "skills.<id>.preload",
        LIST,
        "modules the sandbox's fork server imports before forking this skill's workers (expensive "
        "first-use imports, e.g. the sympy behind gradcheck)",
        (),
        item=r"[A-Za-z_][\w.]*",
        wrong='must be a list of module names, e.g. ["torch.fx.experimental.symbolic_shapes"]',
    ),
    Key(
        "skills.<id>.properties",
        LIST,
        "property tests (dtype kept, inputs unchanged, errors raised, …): each checks only "
        "what its name says; they count once the skill's other tests earn points",
        (),
        wrong=_TEST_NAMES,
        student=VISIBLE_TESTS,
    ),
    Key("skills.<id>.suites[].file", TEXT, "the test file, relative to the repository (in one skill only)"),
    Key("skills.<id>.suites[].visibility", TEXT, "whether students see the file's tests", choices=VISIBILITIES),
    Key(
        "skills.<id>.suites[].weights",
        TABLE,
        "one weight per test function of the file",
        {},
        empty="lists no tests — add `test_name = weight` lines",
    ),
    Key("skills.<id>.suites[].weights.<test>", NUMBER, "the test's points (0 only for a gate)", minimum=0, above=True),
    Key("release", TABLE, "`make release`: the student tree, the Gradescope bundle, the nbgrader course", {}),
    Key(
        "release.docs",
        LIST,
        "files and folders shipped to students and in the bundle (the exercise contract, the lessons the hints cite)",
        (),
        item=r"(?s).*\S.*",
        wrong='must be a list of repository paths, e.g. ["docs/EXERCISES.md"]',
    ),
    Key(
        "release.platforms",
        LIST,
        f"where students submit and get feedback: any of {', '.join(PLATFORMS)}",
        DEFAULT_PLATFORMS,
        wrong=_PLATFORMS_WRONG,
        empty=_PLATFORMS_WRONG,
        check=_platforms,
    ),
    Key(
        "release.gradescope",
        TABLE,
        "how dist/autograder.zip fits Gradescope's container (default 10 min, 768 MB, half a CPU)",
        {},
    ),
    Key(
        "release.gradescope.time_budget_s",
        NUMBER,
        "run_autograder stops the whole run after this and still writes results.json (at least 30 s below platform_timeout_s)",
        480.0,
        minimum=0,
        above=True,
    ),
    Key(
        "release.gradescope.platform_timeout_s",
        NUMBER,
        "Gradescope's own timeout for the assignment (10 min unless raised in its settings)",
        600.0,
        minimum=0,
        above=True,
    ),
    Key(
        "release.gradescope.limits",
        TABLE,
        "[limits] keys that replace the repository's inside the bundle (run_timeout_s below time_budget_s)",
        {},
        same_as="limits",
    ),
    Key("release.nbgrader", TABLE, "the nbgrader course in dist/nbgrader", {}),
    Key("release.nbgrader.course_id", TEXT, "nbgrader's course id", "attention", check=_nbgrader_name),
    Key(
        "release.nbgrader.assignment",
        TEXT,
        "the assignment's name: source/<assignment>/<skill>.ipynb",
        "attention",
        check=_nbgrader_name,
    ),
    Key(
        "release.nbgrader.cell_timeout_s",
        NUMBER,
        "nbgrader's per-cell timeout: a loop that never ends costs one cell",
        60.0,
        minimum=0,
        above=True,
    ),
    Key(
        "release.assignments",
        TABLE,
        "what is handed out together: one Gradescope bundle and one nbgrader assignment each "
        "(empty: the course is one assignment)",
        {},
    ),
    Key(
        "release.assignments.<name>",
        LIST,
        "the assignment's skills (a skill is in one assignment at most)",
        wrong=_ASSIGNMENT_WRONG,
        empty=_ASSIGNMENT_WRONG,
        names=r"[A-Za-z0-9_-]+",
        bad_name="an assignment name is letters, digits, - or _ (it names a folder and an nbgrader assignment)",
    ),
    Key("release.rules", TABLE, "each exercise's rules, printed in the student README", {}),
    Key("release.rules.<skill>", TEXT, "the skill's rule text", wrong="must be the rule's text (a non-empty string)"),
    Key("ci", TABLE, "CI (`--format github`)", {}),
    Key(
        "ci.fail_below",
        NUMBER,
        "the run exits 3 when the total is below this many points (0: red only when grading broke)",
        0.0,
        minimum=0,
        low="must be 0 (never fail for the score) or a number of points, got {value!r}",
    ),
)
KEY = {key.path: key for key in KEYS}


def keys_under(table: str) -> list[Key]:
    """The keys declared directly under ``table`` ("" for the top level), in declaration order."""
    table = KEY[table].same_as or table if table in KEY else table
    return [key for key in KEYS if key.table == table]


def student_copy(policy: str, table: str = "skills.<id>") -> list[str]:
    """The names of the keys of ``table`` that the student copy treats with ``policy``."""
    return [key.name for key in keys_under(table) if key.student == policy]


def _default(path: str) -> Any:
    return KEY[path].default


# --------------------------------------------------------------------------- what loading gives
@dataclass(frozen=True)
class Limits:
    """``[limits]``: the fields and defaults of the ``limits.*`` keys of :data:`KEYS`."""

    call_timeout_s: float = _default("limits.call_timeout_s")
    cpu_factor: float = _default("limits.cpu_factor")
    skill_cpu_factor: float = _default("limits.skill_cpu_factor")
    call_cpu_floor_s: float = _default("limits.call_cpu_floor_s")
    skill_cpu_floor_s: float = _default("limits.skill_cpu_floor_s")
    skill_timeouts: int = _default("limits.skill_timeouts")
    memory_mib: int = _default("limits.memory_mib")
    output_kib: int = _default("limits.output_kib")
    worker_start_timeout_s: float = _default("limits.worker_start_timeout_s")
    run_timeout_s: float = _default("limits.run_timeout_s")
    skill_time_s: float = _default("limits.skill_time_s")
    max_module_kib: int = _default("limits.max_module_kib")
    max_result_mib: int = _default("limits.max_result_mib")
    file_write_mib: int = _default("limits.file_write_mib")
    max_helper_modules: int = _default("limits.max_helper_modules")
    trusted_processes: int = _default("limits.trusted_processes")


@dataclass(frozen=True)
class SandboxSettings:
    user: str = _default("sandbox.user")
    landlock: str = _default("sandbox.landlock")
    seccomp: str = _default("sandbox.seccomp")


@dataclass(frozen=True)
class GradescopeRelease:
    """``[release.gradescope]``: how ``dist/autograder.zip`` fits Gradescope's container."""

    time_budget_s: float = _default("release.gradescope.time_budget_s")
    platform_timeout_s: float = _default("release.gradescope.platform_timeout_s")
    #: ``[limits]`` as the bundle's grading.toml has them (``[release.gradescope.limits]``
    #: overrides the repository's ``[limits]`` key by key)
    limits: Limits = field(default_factory=Limits)

    #: what the bundle needs after the budget: stop the run, write results.json
    CLEANUP_S = 30.0


@dataclass(frozen=True)
class NbgraderRelease:
    """``[release.nbgrader]``: the nbgrader course in ``dist/nbgrader``."""

    course_id: str = _default("release.nbgrader.course_id")
    assignment: str = _default("release.nbgrader.assignment")
    cell_timeout_s: float = _default("release.nbgrader.cell_timeout_s")


@dataclass(frozen=True)
class TestSpec:
    node_id: str  # "tests/suites/qkv/test_qkv_visible.py::test_name"
    file: str  # repository-relative path
    name: str
    skill: str
    weight: float
    visibility: str


@dataclass(frozen=True)
class Suite:
    file: str
    skill: str
    visibility: str
    weights: dict[str, float]


@dataclass(frozen=True)
class Skill:
    id: str
    title: str
    points: float
    module: str  # e.g. "qkv.py"
    sections: tuple[str, ...]
    suites: tuple[Suite, ...]
    #: tests that must pass for the skill to score anything (the exercise's rules, e.g.
    #: "no torch.softmax in row_softmax.py"): a rule broken means 0 in the skill
    gates: tuple[str, ...] = ()
    #: modules the fork server imports before forking this skill's workers (expensive
    #: first-use imports, e.g. the sympy behind gradcheck), so no test pays for them
    preload: tuple[str, ...] = ()
    #: property tests (dtype kept, inputs unchanged, errors raised, state_dict keys, batch
    #: independence): they check only what their name says, whatever the values; they count
    #: once the skill's other tests earn some credit, so code that computes nothing earns none
    properties: tuple[str, ...] = ()

    @property
    def module_name(self) -> str:
        return self.module[:-3]


@dataclass(frozen=True)
class Config:
    path: Path
    root: Path
    course: str
    seed: int | None  # the fixed seed of `seed = <integer>`; None for "content" and "fresh"
    solutions_dir: Path
    exercises_dir: Path
    suites_dir: Path
    skills: dict[str, Skill]
    limits: Limits
    sandbox: SandboxSettings
    gradescope_visibility: dict[str, str]
    release: dict[str, Any] = field(default_factory=dict)
    #: "content": the seed is an HMAC of the submission's files (autograder/runner/seeding.py);
    #: "fresh": a new seed per run; "fixed": ``seed``
    seed_mode: str = "content"
    #: every exercise module of the course, whatever ``--skill`` selected: all are copied
    #: (so one exercise may import another) and all enter the content-derived seed
    exercise_modules: tuple[str, ...] = ()
    gradescope_release: GradescopeRelease = field(default_factory=lambda: GradescopeRelease())
    nbgrader_release: NbgraderRelease = field(default_factory=lambda: NbgraderRelease())
    #: ``[ci] fail_below``: with ``--format github`` the run exits 3 when the total is below
    #: this many points (0: the tick is red only when grading itself broke)
    ci_fail_below: float = _default("ci.fail_below")
    #: ``[release.assignments]``: what is handed out together (name → its skills); each gets
    #: its own Gradescope bundle (and nbgrader assignment). Empty: the course is one assignment.
    assignments: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: ``[release] platforms``: a subset of PLATFORMS, in the order the course lists them
    platforms: tuple[str, ...] = _default("release.platforms")
    #: ``[course] id``: names the course's seed key file (runner/seeding.py key_name)
    course_id: str | None = None

    @property
    def tests(self) -> list[TestSpec]:
        out = []
        for skill in self.skills.values():
            for suite in skill.suites:
                for name, weight in suite.weights.items():
                    out.append(TestSpec(f"{suite.file}::{name}", suite.file, name, skill.id, weight, suite.visibility))
        return out

    @property
    def total_points(self) -> float:
        return sum(s.points for s in self.skills.values())

    def select(self, skill_ids: list[str] | None) -> Config:
        """The same config restricted to some skills (``--skill``)."""
        if not skill_ids:
            return self
        unknown = [s for s in skill_ids if s not in self.skills]
        if unknown:
            raise ConfigError(_unknown("skill", unknown[0], list(self.skills), "--skill"))
        from dataclasses import replace

        return replace(self, skills={k: v for k, v in self.skills.items() if k in skill_ids})

    def for_assignment(self, name: str | None) -> Config:
        """The config one assignment's Gradescope bundle grades with: its skills, and only their
        modules in the submission (the seed is derived from exactly those files)."""
        if not name:
            return self
        if name not in self.assignments:
            raise ConfigError(_unknown("assignment", name, list(self.assignments), "--assignment"))
        from dataclasses import replace

        selected = self.select(list(self.assignments[name]))
        return replace(selected, exercise_modules=tuple(s.module for s in selected.skills.values()), assignments={})


# --------------------------------------------------------------------------- reading
class _Locator:
    """The line of every key and table of a TOML file, by key path, so messages can say
    ``grading.toml:42``. Arrays of tables count: the second ``[[skills.qkv.suites]]`` is
    ``skills.qkv.suites.[1]`` and its keys are found under it, not under the first."""

    HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[str, ...], int] = {}
        arrays: dict[tuple[str, ...], int] = {}
        table: tuple[str, ...] = ()
        for number, line in enumerate(text.splitlines(), start=1):
            header = self.HEADER.match(line)
            if header:
                parts = tuple(self._split(header.group(2)))
                if header.group(1) == "[[":
                    arrays[parts] = arrays.get(parts, -1) + 1
                table = self._resolve(parts, arrays)
                self.lines.setdefault(table, number)
                continue
            key = self.KEY.match(line)
            if key:
                self.lines.setdefault(table + tuple(self._split(key.group(1))), number)

    @staticmethod
    def _split(dotted: str) -> list[str]:
        return [part.strip().strip("\"'") for part in re.findall(r"""(?:"[^"]*"|'[^']*'|[^.]+)""", dotted)]

    @staticmethod
    def _resolve(parts: tuple[str, ...], arrays: dict[tuple[str, ...], int]) -> tuple[str, ...]:
        out: list[str] = []
        for k, part in enumerate(parts):
            out.append(part)
            if parts[: k + 1] in arrays:
                out.append(f"[{arrays[parts[: k + 1]]}]")
        return tuple(out)

    def line_of(self, keypath: list[str]) -> int | None:
        """The key's own line, else its nearest enclosing table's or key's line."""
        path = tuple(keypath)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


def _unknown(kind: str, name: str, known: list[str], where: str) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    suggestion = f" — did you mean {close[0]!r}?" if close else ""
    return f"{where}: unknown {kind} {name!r}{suggestion} (known: {', '.join(known) or 'none'})"


_UNSET: Any = object()


def _dotted(keypath: list[str]) -> str:
    return "".join(k if k.startswith("[") else f".{k}" for k in keypath).lstrip(".")


def _wrong_kind(key: Key, value: Any) -> bool:
    """Whether ``value`` is not of the key's kind (elements of a list included)."""
    if key.kind in (NUMBER, WHOLE):
        return isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
    if key.kind == TEXT:
        return not isinstance(value, str) or not value.strip()
    if key.kind == LIST:
        return not isinstance(value, list) or not all(
            isinstance(v, str) and (key.item is None or re.fullmatch(key.item, v)) for v in value
        )
    if key.kind == TABLE:
        return not isinstance(value, dict)
    if key.kind == TABLES:
        return not isinstance(value, list)
    if key.kind == SEED:
        return not (
            value in ("content", "fresh") or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63)
        )
    raise AssertionError(f"{key.path}: unknown kind {key.kind!r}")


class _Reader:
    """Reads grading.toml's tables by their declaration (:data:`KEYS`); every problem is a
    :class:`ConfigError` naming the file, the line, the key and the fix."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.loc = _Locator(text)

    def fail(self, keypath: list[str], message: str) -> ConfigError:
        line = self.loc.line_of(keypath)
        where = f"{self.path.name}:{line}" if line else self.path.name
        return ConfigError(f"{where}: {_dotted(keypath)}: {message}")

    def table(self, data: Any, keypath: list[str]) -> dict:
        if not isinstance(data, dict):
            raise self.fail(keypath, f"must be a table, got {type(data).__name__}")
        return data

    def check_keys(self, data: dict, allowed: list[str], keypath: list[str]) -> None:
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" — did you mean {close[0]!r}?" if close else f" (allowed: {', '.join(allowed)})"
                raise self.fail(keypath + [key], f"unknown key{hint}")

    def value(
        self, data: dict, key: Key, keypath: list[str], name: str | None = None, default: Any = _UNSET, above: bool | None = None
    ) -> Any:
        """``data[name]`` (``name``: the key's own name, or the name of a ``<…>`` key), checked
        against its declaration: its name, kind, range and own rule. ``default`` and ``above``
        replace the declared ones (``[release.gradescope.limits]`` defaults to ``[limits]``; a
        gate's weight may be 0)."""
        name = name or key.name
        here = keypath + [name]
        if key.names and not re.fullmatch(key.names, name):
            raise self.fail(here, key.bad_name)
        if name not in data:
            value = key.default if default is _UNSET else default
            if value is REQUIRED:
                raise self.fail(here, "is required")
        else:
            value = data[name]
            if _wrong_kind(key, value):
                raise self.fail(here, key.wrong_message(value, _dotted(here)))
            if key.kind in (NUMBER, WHOLE):
                value = self._number(key, value, here, key.above if above is None else above)
            if key.choices and value not in key.choices:
                raise self.fail(here, f"must be one of {', '.join(key.choices)}; got {value!r}")
        problem = key.check(value) if key.check and value is not None else None
        if problem:
            raise self.fail(here, problem)
        if key.empty and not value:
            raise self.fail(here, key.empty.format(path=_dotted(here)))
        return value

    def _number(self, key: Key, value: float, here: list[str], above: bool) -> float:
        if key.minimum is not None and (value <= key.minimum if above else value < key.minimum):
            low = key.low or (
                f"must be greater than {key.minimum:g}, got {{value!r}}"
                if above
                else f"must be {key.minimum:g} or more, got {{value!r}}"
            )
            raise self.fail(here, low.format(value=value))
        if key.kind == WHOLE:
            if value != int(value):
                raise self.fail(here, f"must be a whole number, got {value!r}")
            value = int(value)
        if key.maximum is not None and value > key.maximum:
            raise self.fail(here, f"must be at most {key.maximum}, got {value!r}")
        return value

    def fields(self, raw: Any, table: str, here: list[str], defaults: Any = None) -> dict[str, Any]:
        """The declared table ``table`` at ``here``: a table with only its declared keys, each
        read (a sub-table is only checked to be one). ``defaults``: an object whose attributes
        replace the declared defaults."""
        raw = self.table(raw, here)
        keys = keys_under(table)
        self.check_keys(raw, [key.name for key in keys], here)
        return {key.name: self.value(raw, key, here, default=getattr(defaults, key.name) if defaults else _UNSET) for key in keys}

    def read(self, parent: dict, table: str, keypath: list[str], name: str | None = None) -> dict[str, Any]:
        """Table ``table`` of ``parent``: :meth:`fields`; for a table of named entries
        (``[skills]``, ``weights``, ``[release.rules]``) the table itself, for the caller to
        read each entry of."""
        raw = self.value(parent, KEY[table], keypath, name)
        if any(key.name.startswith("<") for key in keys_under(table)):
            return raw
        return self.fields(raw, table, keypath + [name or KEY[table].name])


def _build(cls: type, table: str, values: dict[str, Any], **more: Any) -> Any:
    """A settings dataclass from a table's values: numbers as float, whole numbers as int."""
    kinds = {key.name: key.kind for key in keys_under(table)}
    typed = {name: float(v) if kinds[name] == NUMBER else int(v) if kinds[name] == WHOLE else v for name, v in values.items()}
    return cls(**(typed | more))


def test_functions(path: Path) -> list[str]:
    """Top-level ``test_*`` functions of a test file, found by parsing (not importing) it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            raise ConfigError(f"{path}: test classes are not supported (class {node.name}); write test functions")
    return names


# --------------------------------------------------------------------------- loading
def load(path: str | Path, *, check_files: bool = True) -> Config:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: not found — run from the repository root or pass --config PATH") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    return loads(text, path, check_files=check_files)


def loads(text: str, path: str | Path, *, check_files: bool = True) -> Config:
    """The configuration ``text`` holds, read as if it were the file ``path`` (relative paths
    resolve from its folder; errors name it): for a grading.toml made in memory, e.g. the
    Gradescope bundle's, checked before it is written."""
    path = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        where = f"{path.name}:{match.group(1)}" if match else path.name
        raise ConfigError(f"{where}: invalid TOML: {str(exc).split(' (at line')[0]}") from None
    return _parse(path, text, data, check_files)


def _parse(path: Path, text: str, data: dict, check_files: bool) -> Config:
    r = _Reader(path, text)
    root = path.resolve().parent
    r.check_keys(data, [key.name for key in keys_under("")], [])

    course = r.read(data, "course", [])
    grader = r.read(data, "grader", [])
    if grader["root"] is not None:  # a config kept elsewhere (tests, CI) can point at the repository
        root = (path.resolve().parent / grader["root"]).resolve()
        if not root.is_dir():
            raise r.fail(["grader", "root"], f"{root} is not a directory")
    seed, seed_mode = (None, grader["seed"]) if grader["seed"] in ("content", "fresh") else (grader["seed"], "fixed")
    limits = _limits(r, data.get("limits", {}), "limits", ["limits"], Limits())
    sandbox = _build(SandboxSettings, "sandbox", r.read(data, "sandbox", []))
    gradescope_visibility = r.read(data, "gradescope", [])

    release = r.read(data, "release", [])
    for skill in release["rules"]:
        r.value(release["rules"], KEY["release.rules.<skill>"], ["release", "rules"], name=skill)
    gradescope_release = _gradescope_release(r, release["gradescope"], limits)
    nbgrader_release = _build(
        NbgraderRelease, "release.nbgrader", r.fields(release["nbgrader"], "release.nbgrader", ["release", "nbgrader"])
    )
    ci_fail_below = r.read(data, "ci", [])["fail_below"]

    skills: dict[str, Skill] = {}
    seen_files: dict[str, str] = {}
    skills_raw = r.read(data, "skills", [])
    for sid in skills_raw:
        skills[sid] = _skill(r, skills_raw, sid, seen_files, root if check_files else None)
    modules = [s.module for s in skills.values()]
    for sid, skill in skills.items():
        if modules.count(skill.module) > 1:
            raise r.fail(["skills", sid, "module"], f"{skill.module} is used by more than one skill")
    total_points = sum(s.points for s in skills.values())
    if ci_fail_below > total_points + 1e-9:
        raise r.fail(["ci", "fail_below"], f"is {ci_fail_below:g} but the skills give only {total_points:g} points; lower it")
    assignments = _assignments(r, release["assignments"], skills)
    return Config(
        path.resolve(),
        root,
        course["name"],
        seed,
        root / grader["solutions_dir"],
        root / grader["exercises_dir"],
        root / grader["suites_dir"],
        skills,
        limits,
        sandbox,
        gradescope_visibility,
        data.get("release", {}),
        seed_mode,
        tuple(modules),
        gradescope_release,
        nbgrader_release,
        float(ci_fail_below),
        assignments,
        tuple(release["platforms"]),
        course["id"],
    )


def _skill(r: _Reader, skills_raw: dict, sid: str, seen_files: dict[str, str], root: Path | None) -> Skill:
    """``[skills.<sid>]`` and its suites, with the rules that tie them together: weights add up
    to the points, gates and properties are tests of the skill, each test file in one skill.
    ``root``: where the suite files are checked (None: they are not)."""
    kp = ["skills", sid]
    raw = r.read(skills_raw, "skills.<id>", ["skills"], name=sid)
    gates = raw["gates"]
    suites = []
    for i, suite_raw in enumerate(raw["suites"]):
        skp = kp + ["suites", f"[{i}]"]
        suite = r.fields(suite_raw, "skills.<id>.suites[]", skp)
        # a gate (a rule test) may carry no points of its own; every other test must
        weight = KEY["skills.<id>.suites[].weights.<test>"]
        weights = {
            name: r.value(suite["weights"], weight, skp + ["weights"], name=name, above=name not in gates)
            for name in suite["weights"]
        }
        file = suite["file"]
        if file in seen_files:
            raise r.fail(
                skp + ["file"],
                f"{file} is already listed under skill {seen_files[file]!r}; each test belongs to exactly one skill",
            )
        seen_files[file] = sid
        if root is not None:
            _check_suite_file(r, root, file, weights, skp)
        suites.append(Suite(file, sid, suite["visibility"], weights))
    known = {name for suite in suites for name in suite.weights}
    for gate in gates:
        if gate not in known:
            raise r.fail(kp + ["gates"], f"{gate!r} is not a test of skill {sid}" + _near(gate, sorted(known)))
    total = sum(sum(s.weights.values()) for s in suites)
    if not math.isclose(total, raw["points"], rel_tol=0, abs_tol=1e-9):
        raise r.fail(kp + ["points"], f"is {raw['points']:g} but the weights of its tests add up to {total:g}; make them equal")
    for name in raw["properties"]:
        if name not in known:
            raise r.fail(kp + ["properties"], f"{name!r} is not a test of skill {sid}" + _near(name, sorted(known)))
        if name in gates:
            raise r.fail(
                kp + ["properties"],
                f"{name!r} is a gate (a rule of the exercise), not a property test: list it in one of the two",
            )
    return Skill(
        sid,
        raw["title"],
        raw["points"],
        raw["module"],
        tuple(raw["sections"]),
        tuple(suites),
        tuple(gates),
        tuple(raw["preload"]),
        tuple(raw["properties"]),
    )


def _assignments(r: _Reader, raw: dict, skills: dict[str, Skill]) -> dict[str, tuple[str, ...]]:
    """``[release.assignments]``: ``week7 = ["qkv", "masks", "row_softmax"]``; each skill in at
    most one assignment (its points count once in the course)."""
    kp = ["release", "assignments"]
    out: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for name in raw:
        listed = r.value(raw, KEY["release.assignments.<name>"], kp, name=name)
        for sid in listed:
            if sid not in skills:
                raise r.fail(kp + [name], f"{sid!r} is not a skill" + _near(sid, sorted(skills)))
            if sid in owner:
                raise r.fail(
                    kp + [name], f"skill {sid!r} is already in assignment {owner[sid]!r}; a skill belongs to one assignment"
                )
            owner[sid] = name
        out[name] = tuple(listed)
    return out


def _limits(r: _Reader, raw: Any, table: str, keypath: list[str], base: Limits) -> Limits:
    """``[limits]``, or a table of overrides on top of ``base`` (``[release.gradescope.limits]``)."""
    limits = _build(Limits, "limits", r.fields(raw, table, keypath, defaults=base))
    if limits.skill_time_s < limits.call_timeout_s:
        raise r.fail(
            keypath + ["skill_time_s"],
            f"must be at least call_timeout_s ({limits.call_timeout_s:g}), got {limits.skill_time_s:g}",
        )
    return limits


def _gradescope_release(r: _Reader, raw: dict, limits: Limits) -> GradescopeRelease:
    kp = ["release", "gradescope"]
    values = r.fields(raw, "release.gradescope", kp)
    budget, platform = values["time_budget_s"], values["platform_timeout_s"]
    if budget + GradescopeRelease.CLEANUP_S > platform:
        raise r.fail(
            kp + ["time_budget_s"],
            f"is {budget:g} s, but Gradescope stops the container at platform_timeout_s = {platform:g} s "
            f"and the bundle needs {GradescopeRelease.CLEANUP_S:g} s after the budget to write results.json — lower it",
        )
    bundle_limits = _limits(r, values["limits"], "release.gradescope.limits", kp + ["limits"], limits)
    given = isinstance(values["limits"], dict) and "run_timeout_s" in values["limits"]
    if not given and bundle_limits.run_timeout_s >= budget:
        # Inherited from [limits] (a local run may take its time): inside the bundle the run
        # must end before the budget, so an unset value is cut to the budget's 90 %, never an error.
        bundle_limits = dataclasses.replace(bundle_limits, run_timeout_s=round(0.9 * budget, 3))
    if bundle_limits.run_timeout_s >= budget:
        raise r.fail(
            kp + ["limits", "run_timeout_s"],
            f"is {bundle_limits.run_timeout_s:g} s but must be below time_budget_s = {budget:g} s, "
            "so that the grader finishes (with every test scored) before the bundle's hard stop",
        )
    return _build(GradescopeRelease, "release.gradescope", values, limits=bundle_limits)


def _check_suite_file(r: _Reader, root: Path, file: str, weights: dict[str, float], kp: list[str]) -> None:
    path = root / file
    if not path.is_file():
        raise r.fail(kp + ["file"], f"{file} does not exist — fix the path or remove this suite")
    try:
        names = test_functions(path)
    except SyntaxError as exc:
        raise ConfigError(f"{file}:{exc.lineno}: syntax error in test file: {exc.msg}") from None
    for name in weights:  # first: a misspelt weight is likelier than a forgotten one
        if name not in names:
            raise r.fail(
                kp + ["weights", name], f"no test function {name} in {file}" + _near(name, [n for n in names if n not in weights])
            )
    for name in names:
        if name not in weights:
            raise r.fail(kp + ["weights"], f"{file} defines {name} but it has no weight — add `{name} = <points>`")


def _near(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" — did you mean {close[0]!r}?" if close else ""


# --------------------------------------------------------------------------- the key list in docs/CONFIG.md
DOC_BEGIN = (
    "<!-- grading.toml keys: written by `python -m autograder config-keys --write docs/CONFIG.md` "
    "from autograder/config.py KEYS -->"
)
DOC_END = "<!-- end of grading.toml keys -->"


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _describe(key: Key) -> str:
    """The key's kind and range in words."""
    if key.kind in (NUMBER, WHOLE):
        parts = [key.kind]
        if key.minimum is not None:
            parts.append(f"{'>' if key.above else '≥'} {key.minimum:g}")
        if key.maximum is not None:
            parts.append(f"≤ {key.maximum}")
        return " ".join(parts[:2]) + (", " + parts[2] if len(parts) > 2 else "")
    if key.kind == TEXT and key.choices:
        return "one of " + ", ".join(f'"{c}"' for c in key.choices)
    if key.kind == SEED:
        return '"content", "fresh" or a whole number ≥ 0'
    if key.kind == LIST:
        return ("non-empty " if key.empty else "") + "list of strings"
    return key.kind


def keys_markdown() -> str:
    """docs/CONFIG.md's list of grading.toml's keys, from :data:`KEYS` (a test checks it is current)."""
    rows = ["| key | value | default | what it is |", "| --- | --- | --- | --- |"]
    for key in KEYS:
        if key.kind == TABLE:
            name = f"`[{key.path}]`"
        elif key.kind == TABLES:
            name = f"`[[{key.path}]]`"
        else:
            name = f"`{key.path}`"
        if key.default is REQUIRED:
            default = "required"
        elif key.default is None or key.kind in (TABLE, TABLES):
            default = ""
        else:
            default = f"`{_toml(key.default)}`"
        what = key.help
        if key.same_as:
            what += f"; the keys of `[{key.same_as}]`"
        if key.student != KEPT:
            what += f". Student copy: {key.student}"
        value = "" if key.kind == TABLE else _describe(key)
        rows.append(f"| {name} | {value} | {default} | {what.replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"


def with_keys_doc(text: str) -> str:
    """``text`` (docs/CONFIG.md) with the part between :data:`DOC_BEGIN` and :data:`DOC_END` replaced
    by :func:`keys_markdown`."""
    start, end = text.index(DOC_BEGIN) + len(DOC_BEGIN), text.index(DOC_END)
    return text[:start] + "\n" + keys_markdown() + text[end:]


def keys_main(argv: list[str]) -> int:
    """``python -m autograder config-keys [--write FILE]``: print grading.toml's keys as a
    markdown table, or rewrite that table in FILE (docs/CONFIG.md) between its markers."""
    if not argv:
        print(keys_markdown(), end="")
        return 0
    if len(argv) == 2 and argv[0] == "--write":
        path = Path(argv[1])
        text = path.read_text(encoding="utf-8")
        if DOC_BEGIN not in text or DOC_END not in text:
            print(
                f"autograder: {path} has no grading.toml keys section (the lines {DOC_BEGIN} and {DOC_END})",
                file=__import__("sys").stderr,
            )
            return 2
        path.write_text(with_keys_doc(text), encoding="utf-8")
        return 0
    print("usage: python -m autograder config-keys [--write docs/CONFIG.md]", file=__import__("sys").stderr)
    return 2
