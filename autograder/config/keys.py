"""Every key of ``grading.toml``, declared once (:data:`KEYS`), and the messages that name one."""

from __future__ import annotations

import difflib
import os
import pwd
import re
from collections.abc import Callable
from dataclasses import dataclass
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
    Key(
        "course.texts",
        TABLES,
        "the course's texts that hints cite ([[course.texts]]: name, file, label); docs/EXERCISES.md is always known",
        [],
    ),
    Key("course.texts[].name", TEXT, 'how citations name the text, e.g. "Week 7" ("Week 7 §11" resolves to §11\'s heading)'),
    Key("course.texts[].file", TEXT, 'the text\'s file under docs/, e.g. "lessons/week07-attention.txt"'),
    Key(
        "course.texts[].label",
        TEXT,
        'the prefix of the text\'s numbered printed results, e.g. "W7" (W7-43: its 43rd), explained under a report '
        "that shows one",
        None,
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
    Key(
        "grader.warm_idle_s",
        NUMBER,
        "an interactive `grade` leaves a warm grading server behind (torch imported once; the next `grade` forks "
        "from it: runner/process/warm.py), which leaves after this many seconds without a grade; 0: never one "
        "($AUTOGRADER_WARM=0/1 overrides, for one shell)",
        600.0,
        minimum=0,
        maximum=86400,
    ),
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
        "a call of a function (class, probe) may use this × the worker CPU time of that function's costliest call "
        "in the reference and slow_solutions (tests/suites/<skill>/snapshots/reference_cpu.toml, "
        "autograder/runner/cpu_limits.py); 0: no CPU limits, the wall-clock ones alone",
        above=False,
    ),
    _limit(
        "skill_cpu_factor",
        NUMBER,
        12.0,
        1000,
        "one skill's calls may use this × the worker CPU time of all the skill's calls in the reference (or the "
        "costliest of slow_solutions)",
    ),
    _limit("call_cpu_floor_s", NUMBER, 1.0, 3600, "a call's CPU-time limit is never below this (worker CPU seconds)"),
    _limit(
        "skill_cpu_floor_s",
        NUMBER,
        6.0,
        86400,
        "the CPU time one skill's calls may use in all is never below this (worker CPU seconds)",
    ),
    Key(
        "limits.slow_solutions",
        LIST,
        "correct submissions written slowly on purpose (Python loops, float64), folders relative to the repository: "
        "`reference-cpu` measures them beside solutions/ and each figure of the CPU tables is the costliest of them "
        "all, so the CPU limits leave every correct style its margin, however much slower than the reference",
        (),
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
        "rule tests (their weight may be 0, and usually is): if one fails, the whole skill scores 0",
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
    # loading.py reads it with above=False for a test listed in the skill's gates: a gate may be 0
    Key(
        "skills.<id>.suites[].weights.<test>",
        NUMBER,
        "the test's points; a test listed in the skill's `gates` may also be 0 (≥ 0), as a rule test usually is",
        minimum=0,
        above=True,
    ),
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


def _unknown(kind: str, name: str, known: list[str], where: str) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    suggestion = f" — did you mean {close[0]!r}?" if close else ""
    return f"{where}: unknown {kind} {name!r}{suggestion} (known: {', '.join(known) or 'none'})"


def _dotted(keypath: list[str]) -> str:
    return "".join(k if k.startswith("[") else f".{k}" for k in keypath).lstrip(".")


def _near(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" — did you mean {close[0]!r}?" if close else ""
