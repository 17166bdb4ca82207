"""``grading.toml``: the one place for skills, points, visibility, limits and release settings.

Loading validates everything before a single test runs, and every problem is reported as
``grading.toml:LINE: key.path: what is wrong — how to fix it``. The test files named in
the config are parsed (never imported) to check that every test has a weight and every
weight has a test.
"""

from __future__ import annotations

import ast
import difflib
import math
import os
import pwd
import re
import tomllib
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


class ConfigError(Exception):
    """A problem in grading.toml; ``str()`` is the one-line message for the user."""


@dataclass(frozen=True)
class Limits:
    call_timeout_s: float = 10.0
    memory_mib: int = 4096
    output_kib: int = 64
    worker_start_timeout_s: float = 30.0
    run_timeout_s: float = 900.0
    skill_time_s: float = 15.0
    max_module_kib: int = 512
    max_result_mib: int = 256
    file_write_mib: int = 16
    max_helper_modules: int = 16  # the submission's other top-level .py files importable by its code (0: none)
    #: trusted pytest processes one run may use (runner/split.py: 2 on a machine with two
    #: cores to spare; 1 never splits — Gradescope's half a CPU gains nothing from a second,
    #: and two hostile workers at once would need twice the memory)
    trusted_processes: int = 2


#: the largest value each limit may take (beyond these, timers and sizes stop making sense)
LIMIT_MAXIMA = {
    "call_timeout_s": 3600, "memory_mib": 1 << 20, "output_kib": 1 << 14, "worker_start_timeout_s": 3600,
    "run_timeout_s": 86400, "skill_time_s": 86400, "max_module_kib": 1 << 16, "max_result_mib": 1 << 12, "file_write_mib": 1 << 16,
    "max_helper_modules": 256, "trusted_processes": 2,
}
USER_NAME = re.compile(r"^[a-z_][a-z0-9_.-]*\$?$", re.IGNORECASE)


@dataclass(frozen=True)
class SandboxSettings:
    user: str = "nobody"
    landlock: str = "auto"
    seccomp: str = "auto"


@dataclass(frozen=True)
class GradescopeRelease:
    """``[release.gradescope]``: how ``dist/autograder.zip`` fits Gradescope's container
    (default 10 min, 768 MB, half a CPU)."""

    #: ``run_autograder`` stops the whole grading run after this and still writes results.json
    time_budget_s: float = 480.0
    #: Gradescope's own timeout for the assignment (10 min unless raised in its settings)
    platform_timeout_s: float = 600.0
    #: ``[limits]`` as the bundle's grading.toml has them (``[release.gradescope.limits]``
    #: overrides the repository's ``[limits]`` key by key)
    limits: Limits = field(default_factory=Limits)

    #: what the bundle needs after the budget: stop the run, write results.json
    CLEANUP_S = 30.0


@dataclass(frozen=True)
class NbgraderRelease:
    """``[release.nbgrader]``: the nbgrader course in ``dist/nbgrader``."""

    course_id: str = "attention"
    assignment: str = "attention"  # source/<assignment>/<skill>.ipynb
    cell_timeout_s: float = 60.0  # nbgrader's Execute.timeout, per cell


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
    gradescope_release: "GradescopeRelease" = field(default_factory=lambda: GradescopeRelease())
    nbgrader_release: "NbgraderRelease" = field(default_factory=lambda: NbgraderRelease())
    #: ``[ci] fail_below``: with ``--format github`` the run exits 3 when the total is below
    #: this many points (0: the tick is red only when grading itself broke)
    ci_fail_below: float = 0.0
    #: ``[release.assignments]``: what is handed out together (name → its skills); each gets
    #: its own Gradescope bundle (and nbgrader assignment). Empty: the course is one assignment.
    assignments: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: ``[release] platforms``: a subset of PLATFORMS, in the order the course lists them
    platforms: tuple[str, ...] = DEFAULT_PLATFORMS

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

    def select(self, skill_ids: list[str] | None) -> "Config":
        """The same config restricted to some skills (``--skill``)."""
        if not skill_ids:
            return self
        unknown = [s for s in skill_ids if s not in self.skills]
        if unknown:
            raise ConfigError(_unknown("skill", unknown[0], list(self.skills), "--skill"))
        from dataclasses import replace

        return replace(self, skills={k: v for k, v in self.skills.items() if k in skill_ids})

    def for_assignment(self, name: str | None) -> "Config":
        """The config one assignment's Gradescope bundle grades with: its skills, and only their
        modules in the submission (the seed is derived from exactly those files)."""
        if not name:
            return self
        if name not in self.assignments:
            raise ConfigError(_unknown("assignment", name, list(self.assignments), "--assignment"))
        from dataclasses import replace

        selected = self.select(list(self.assignments[name]))
        return replace(selected, exercise_modules=tuple(s.module for s in selected.skills.values()), assignments={})


# --------------------------------------------------------------------------- helpers
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


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.loc = _Locator(text)

    def fail(self, keypath: list[str], message: str) -> ConfigError:
        line = self.loc.line_of(keypath)
        where = f"{self.path.name}:{line}" if line else self.path.name
        dotted = "".join(k if k.startswith("[") else f".{k}" for k in keypath).lstrip(".")
        return ConfigError(f"{where}: {dotted}: {message}")

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

    def number(self, data: dict, key: str, keypath: list[str], default: float | None = None, positive: bool = True) -> float:
        if key not in data:
            if default is None:
                raise self.fail(keypath + [key], "is required")
            return default
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(keypath + [key], f"must be a number, got {value!r}")
        if positive and value <= 0:
            raise self.fail(keypath + [key], f"must be greater than 0, got {value!r}")
        return value

    def string(self, data: dict, key: str, keypath: list[str], default: str | None = None, choices: tuple[str, ...] | None = None) -> str:
        if key not in data:
            if default is None:
                raise self.fail(keypath + [key], "is required")
            return default
        value = data[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(keypath + [key], f"must be a non-empty string, got {value!r}")
        if choices and value not in choices:
            raise self.fail(keypath + [key], f"must be one of {', '.join(choices)}; got {value!r}")
        return value


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
    r.check_keys(data, ["course", "grader", "limits", "sandbox", "gradescope", "skills", "release", "ci"], [])

    course = r.table(data.get("course", {}), ["course"])
    r.check_keys(course, ["name"], ["course"])
    course_name = r.string(course, "name", ["course"], default="Attention exercises")

    grader = r.table(data.get("grader", {}), ["grader"])
    r.check_keys(grader, ["root", "seed", "solutions_dir", "exercises_dir", "suites_dir"], ["grader"])
    if "root" in grader:  # a config kept elsewhere (tests, CI) can point at the repository
        root = (path.resolve().parent / r.string(grader, "root", ["grader"])).resolve()
        if not root.is_dir():
            raise r.fail(["grader", "root"], f"{root} is not a directory")
    seed_value = grader.get("seed", "content")
    if seed_value in ("content", "fresh"):
        seed, seed_mode = None, seed_value
    elif isinstance(seed_value, int) and not isinstance(seed_value, bool) and 0 <= seed_value < 2**63:
        seed, seed_mode = seed_value, "fixed"
    else:
        raise r.fail(["grader", "seed"], f'must be "content", "fresh" or a non-negative integer, got {seed_value!r}')
    solutions_dir = root / r.string(grader, "solutions_dir", ["grader"], default="solutions")
    exercises_dir = root / r.string(grader, "exercises_dir", ["grader"], default="exercises")
    suites_dir = root / r.string(grader, "suites_dir", ["grader"], default="tests/suites")

    limits = _limits(r, r.table(data.get("limits", {}), ["limits"]), Limits(), ["limits"])

    sandbox_raw = r.table(data.get("sandbox", {}), ["sandbox"])
    r.check_keys(sandbox_raw, ["user", "landlock", "seccomp"], ["sandbox"])
    sandbox = SandboxSettings(
        user=_sandbox_user(r, sandbox_raw),
        landlock=r.string(sandbox_raw, "landlock", ["sandbox"], default="auto", choices=("auto", "require", "off")),
        seccomp=r.string(sandbox_raw, "seccomp", ["sandbox"], default="auto", choices=("auto", "require", "off")),
    )

    gs = r.table(data.get("gradescope", {}), ["gradescope"])
    r.check_keys(gs, ["visible", "hidden"], ["gradescope"])
    gradescope_visibility = {
        "visible": r.string(gs, "visible", ["gradescope"], default="visible", choices=GRADESCOPE_VISIBILITIES),
        "hidden": r.string(gs, "hidden", ["gradescope"], default="after_due_date", choices=GRADESCOPE_VISIBILITIES),
    }

    release = r.table(data.get("release", {}), ["release"])
    _release_texts(r, release)
    gradescope_release = _gradescope_release(r, release.get("gradescope", {}), limits)
    nbgrader_release = _nbgrader_release(r, release.get("nbgrader", {}))

    ci = r.table(data.get("ci", {}), ["ci"])
    r.check_keys(ci, ["fail_below"], ["ci"])
    ci_fail_below = r.number(ci, "fail_below", ["ci"], default=0.0, positive=False)
    if ci_fail_below < 0:
        raise r.fail(["ci", "fail_below"], f"must be 0 (never fail for the score) or a number of points, got {ci_fail_below!r}")

    skills_raw = r.table(data.get("skills", {}), ["skills"])
    if not skills_raw:
        raise r.fail(["skills"], "no skills are defined — add a [skills.<id>] table")
    skills: dict[str, Skill] = {}
    seen_files: dict[str, str] = {}
    for sid, raw in skills_raw.items():
        kp = ["skills", sid]
        if not SKILL_ID.match(sid):
            raise r.fail(kp, "skill ids are lower_snake_case identifiers")
        raw = r.table(raw, kp)
        r.check_keys(raw, ["title", "points", "module", "sections", "suites", "gates", "preload", "properties"], kp)
        title = r.string(raw, "title", kp)
        points = r.number(raw, "points", kp)
        module = r.string(raw, "module", kp)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\.py", module):
            raise r.fail(kp + ["module"], f"must be a Python file name like 'qkv.py', got {module!r}")
        sections = raw.get("sections", [])
        if not isinstance(sections, list) or not all(isinstance(s, str) for s in sections):
            raise r.fail(kp + ["sections"], "must be a list of strings")
        gates_raw = raw.get("gates", [])
        if not isinstance(gates_raw, list) or not all(isinstance(g, str) for g in gates_raw):
            raise r.fail(kp + ["gates"], "must be a list of test function names")
        suites_raw = raw.get("suites")
        if not isinstance(suites_raw, list) or not suites_raw:
            raise r.fail(kp + ["suites"], "needs at least one [[skills.%s.suites]] entry" % sid)
        suites = []
        for i, sraw in enumerate(suites_raw):
            skp = kp + ["suites", f"[{i}]"]
            sraw = r.table(sraw, skp)
            r.check_keys(sraw, ["file", "visibility", "weights"], skp)
            file = r.string(sraw, "file", skp)
            visibility = r.string(sraw, "visibility", skp, choices=VISIBILITIES)
            weights_raw = r.table(sraw.get("weights", {}), skp + ["weights"])
            if not weights_raw:
                raise r.fail(skp + ["weights"], "lists no tests — add `test_name = weight` lines")
            # a gate (a rule test) may carry no points of its own; every other test must
            weights = {name: r.number(weights_raw, name, skp + ["weights"], positive=name not in gates_raw) for name in weights_raw}
            for name, weight in weights.items():
                if weight < 0:
                    raise r.fail(skp + ["weights", name], f"must be 0 or more, got {weight!r}")
            if file in seen_files:
                raise r.fail(skp + ["file"], f"{file} is already listed under skill {seen_files[file]!r}; each test belongs to exactly one skill")
            seen_files[file] = sid
            if check_files:
                _check_suite_file(r, root, file, weights, skp)
            suites.append(Suite(file, sid, visibility, weights))
        gates = gates_raw
        known = {name for suite in suites for name in suite.weights}
        for gate in gates:
            if gate not in known:
                raise r.fail(kp + ["gates"], f"{gate!r} is not a test of skill {sid}" + _near(gate, sorted(known)))
        total = sum(sum(s.weights.values()) for s in suites)
        if not math.isclose(total, points, rel_tol=0, abs_tol=1e-9):
            raise r.fail(kp + ["points"], f"is {points:g} but the weights of its tests add up to {total:g}; make them equal")
        properties = raw.get("properties", [])
        if not isinstance(properties, list) or not all(isinstance(g, str) for g in properties):
            raise r.fail(kp + ["properties"], "must be a list of test function names")
        for name in properties:
            if name not in known:
                raise r.fail(kp + ["properties"], f"{name!r} is not a test of skill {sid}" + _near(name, sorted(known)))
            if name in gates:
                raise r.fail(kp + ["properties"], f"{name!r} is a gate (a rule of the exercise), not a property test: list it in one of the two")
        preload = raw.get("preload", [])
        if not isinstance(preload, list) or not all(isinstance(m, str) and re.fullmatch(r"[A-Za-z_][\w.]*", m) for m in preload):
            raise r.fail(kp + ["preload"], "must be a list of module names, e.g. [\"torch.fx.experimental.symbolic_shapes\"]")
        skills[sid] = Skill(sid, title, points, module, tuple(sections), tuple(suites), tuple(gates), tuple(preload), tuple(properties))
    modules = [s.module for s in skills.values()]
    for sid, skill in skills.items():
        if modules.count(skill.module) > 1:
            raise r.fail(["skills", sid, "module"], f"{skill.module} is used by more than one skill")
    total_points = sum(s.points for s in skills.values())
    if ci_fail_below > total_points + 1e-9:
        raise r.fail(["ci", "fail_below"], f"is {ci_fail_below:g} but the skills give only {total_points:g} points; lower it")
    assignments = _assignments(r, release.get("assignments", {}), skills)
    return Config(path.resolve(), root, course_name, seed, solutions_dir, exercises_dir, suites_dir, skills, limits, sandbox,
                  gradescope_visibility, release, seed_mode, tuple(modules), gradescope_release, nbgrader_release, float(ci_fail_below),
                  assignments, _platforms(r, release))


def _assignments(r: _Reader, raw: Any, skills: dict[str, Skill]) -> dict[str, tuple[str, ...]]:
    """``[release.assignments]``: ``week7 = ["qkv", "masks", "row_softmax"]``; each skill in at
    most one assignment (its points count once in the course)."""
    kp = ["release", "assignments"]
    raw = r.table(raw, kp)
    out: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for name, listed in raw.items():
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise r.fail(kp + [name], "an assignment name is letters, digits, - or _ (it names a folder and an nbgrader assignment)")
        if not isinstance(listed, list) or not listed or not all(isinstance(s, str) for s in listed):
            raise r.fail(kp + [name], 'must be a non-empty list of skill ids, e.g. ["qkv", "masks"]')
        for sid in listed:
            if sid not in skills:
                raise r.fail(kp + [name], f"{sid!r} is not a skill" + _near(sid, sorted(skills)))
            if sid in owner:
                raise r.fail(kp + [name], f"skill {sid!r} is already in assignment {owner[sid]!r}; a skill belongs to one assignment")
            owner[sid] = name
        out[name] = tuple(listed)
    return out


#: a worker's address space must hold torch (~620 MiB mapped); the reference grades in full at 680
MIN_MEMORY_MIB = 768


def _limits(r: _Reader, raw: dict, base: Limits, keypath: list[str]) -> Limits:
    """``[limits]``, or a table of overrides on top of ``base`` (``[release.gradescope.limits]``)."""
    fields = list(Limits.__dataclass_fields__)
    r.check_keys(raw, fields, keypath)
    values = {}
    for name in fields:
        value = r.number(raw, name, keypath, default=getattr(base, name), positive=name != "max_helper_modules")
        if value < 0:
            raise r.fail(keypath + [name], f"must be 0 or more, got {value!r}")
        if isinstance(getattr(base, name), int):
            if value != int(value):
                raise r.fail(keypath + [name], f"must be a whole number, got {value!r}")
            value = int(value)
        if value > LIMIT_MAXIMA[name]:
            raise r.fail(keypath + [name], f"must be at most {LIMIT_MAXIMA[name]}, got {value!r}")
        values[name] = int(value) if isinstance(getattr(base, name), int) else float(value)
    limits = Limits(**values)
    if limits.memory_mib < MIN_MEMORY_MIB:
        raise r.fail(keypath + ["memory_mib"], f"must be at least {MIN_MEMORY_MIB} (torch alone maps ~620 MiB), got {limits.memory_mib}")
    if limits.skill_time_s < limits.call_timeout_s:
        raise r.fail(keypath + ["skill_time_s"], f"must be at least call_timeout_s ({limits.call_timeout_s:g}), got {limits.skill_time_s:g}")
    return limits


def _release_texts(r: _Reader, release: dict) -> None:
    """``[release] docs`` (files shipped to students) and ``[release.rules]`` (one rule text
    per skill, printed in the student README)."""
    docs = release.get("docs", [])
    if not isinstance(docs, list) or not all(isinstance(d, str) and d.strip() for d in docs):
        raise r.fail(["release", "docs"], 'must be a list of repository paths, e.g. ["docs/EXERCISES.md"]')
    rules = r.table(release.get("rules", {}), ["release", "rules"])
    for skill, text in rules.items():
        if not isinstance(text, str) or not text.strip():
            raise r.fail(["release", "rules", skill], "must be the rule's text (a non-empty string)")


def _platforms(r: _Reader, release: dict) -> tuple[str, ...]:
    """``[release] platforms = ["gradescope", "github-actions", "classroom50"]``."""
    kp = ["release", "platforms"]
    raw = release.get("platforms", list(DEFAULT_PLATFORMS))
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) for p in raw):
        raise r.fail(kp, f"must be a non-empty list of platforms, e.g. {list(DEFAULT_PLATFORMS)!r} (known: {', '.join(PLATFORMS)})")
    for name in raw:
        if name in ("github-classroom", "classroom"):
            raise r.fail(kp, f"{name!r}: GitHub Classroom was discontinued (2026) — list \"classroom50\" (its open-source successor) "
                         "and/or \"github-actions\" (the feedback workflow) instead")
        if name not in PLATFORMS:
            raise r.fail(kp, f"unknown platform {name!r}" + _near(name, list(PLATFORMS)) + f" (known: {', '.join(PLATFORMS)})")
        if raw.count(name) > 1:
            raise r.fail(kp, f"{name!r} is listed twice")
    return tuple(raw)


def _gradescope_release(r: _Reader, raw: Any, limits: Limits) -> GradescopeRelease:
    kp = ["release", "gradescope"]
    raw = r.table(raw, kp)
    r.check_keys(raw, ["time_budget_s", "platform_timeout_s", "limits"], kp)
    defaults = GradescopeRelease()
    platform = r.number(raw, "platform_timeout_s", kp, default=defaults.platform_timeout_s)
    budget = r.number(raw, "time_budget_s", kp, default=defaults.time_budget_s)
    if budget + GradescopeRelease.CLEANUP_S > platform:
        raise r.fail(kp + ["time_budget_s"], f"is {budget:g} s, but Gradescope stops the container at platform_timeout_s = {platform:g} s "
                     f"and the bundle needs {GradescopeRelease.CLEANUP_S:g} s after the budget to write results.json — lower it")
    bundle_limits = _limits(r, r.table(raw.get("limits", {}), kp + ["limits"]), limits, kp + ["limits"])
    if bundle_limits.run_timeout_s >= budget:
        raise r.fail(kp + ["limits", "run_timeout_s"], f"is {bundle_limits.run_timeout_s:g} s but must be below time_budget_s = {budget:g} s, "
                     "so that the grader finishes (with every test scored) before the bundle's hard stop")
    return GradescopeRelease(float(budget), float(platform), bundle_limits)


def _nbgrader_release(r: _Reader, raw: Any) -> NbgraderRelease:
    kp = ["release", "nbgrader"]
    raw = r.table(raw, kp)
    r.check_keys(raw, ["course_id", "assignment", "cell_timeout_s"], kp)
    defaults = NbgraderRelease()
    names = {}
    for key in ("course_id", "assignment"):
        names[key] = r.string(raw, key, kp, default=getattr(defaults, key))
        if not re.fullmatch(r"[A-Za-z0-9_-]+", names[key]):
            raise r.fail(kp + [key], f"must be letters, digits, - or _ (nbgrader uses it as a folder and an id), got {names[key]!r}")
    timeout = r.number(raw, "cell_timeout_s", kp, default=defaults.cell_timeout_s)
    return NbgraderRelease(names["course_id"], names["assignment"], float(timeout))


def _sandbox_user(r: _Reader, raw: dict) -> str:
    """The user submission code runs as when grading as root. It must exist there; on a
    machine where the grader is not root the setting is not used, so only its form is checked."""
    user = r.string(raw, "user", ["sandbox"], default="nobody")
    if not USER_NAME.match(user):
        raise r.fail(["sandbox", "user"], f"must be a user name like 'nobody', got {user!r}")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(user)
        except KeyError:
            raise r.fail(["sandbox", "user"], f"user {user!r} does not exist on this machine — create it or name an existing unprivileged user (e.g. 'nobody')") from None
    return user


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
            raise r.fail(kp + ["weights", name], f"no test function {name} in {file}" + _near(name, [n for n in names if n not in weights]))
    for name in names:
        if name not in weights:
            raise r.fail(kp + ["weights"], f"{file} defines {name} but it has no weight — add `{name} = <points>`")


def _near(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name, names, n=1)
    return f" — did you mean {close[0]!r}?" if close else ""
