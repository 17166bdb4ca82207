"""Loading ``grading.toml``: :func:`load` / :func:`loads` — every table read, checked and turned into a :class:`Config`."""

from __future__ import annotations

import dataclasses
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from .keys import KEY, ConfigError, _near, keys_under
from .model import Config, GradescopeRelease, Limits, NbgraderRelease, SandboxSettings, Skill, Suite
from .reader import _build, _Reader, test_functions


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
    texts: dict[str, str] = {}
    result_labels: dict[str, str] = {}
    for i, raw in enumerate(course["texts"]):
        entry = r.fields(raw, "course.texts[]", ["course", "texts", f"[{i}]"])
        if entry["name"] in texts:
            raise r.fail(["course", "texts", f"[{i}]", "name"], f"{entry['name']!r} is named by an earlier [[course.texts]]")
        texts[entry["name"]] = entry["file"]
        if entry["label"]:
            result_labels[entry["label"]] = entry["name"]
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
        texts,
        result_labels,
        warm_idle_s=float(grader["warm_idle_s"]),
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
    # a TOML array reads as a list; the default and every Limits compared with it hold a tuple
    limits = dataclasses.replace(limits, slow_solutions=tuple(limits.slow_solutions))
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
