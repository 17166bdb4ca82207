"""What loading ``grading.toml`` gives: :class:`Config` and the tables it holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .keys import ConfigError, _default, _unknown


# --------------------------------------------------------------------------- what loading gives
@dataclass(frozen=True)
class Limits:
    """``[limits]``: the fields and defaults of the ``limits.*`` keys of :data:`KEYS`."""

    call_timeout_s: float = _default("limits.call_timeout_s")
    cpu_factor: float = _default("limits.cpu_factor")
    skill_cpu_factor: float = _default("limits.skill_cpu_factor")
    call_cpu_floor_s: float = _default("limits.call_cpu_floor_s")
    skill_cpu_floor_s: float = _default("limits.skill_cpu_floor_s")
    slow_solutions: tuple[str, ...] = _default("limits.slow_solutions")
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
    #: ``[course.texts]``: how citations name the course's texts → their files under docs/
    texts: dict[str, str] = field(default_factory=dict)
    #: ``[course.result_labels]``: prefix of a lesson's numbered results → the text it numbers
    result_labels: dict[str, str] = field(default_factory=dict)
    #: ``select``: the config before ``--skill`` narrowed it — a partial run names that release's
    #: suites (runner/grade.py) and the skills it left out, never a hash of its own part
    selected_from: Config | None = field(default=None, repr=False, compare=False)
    #: ``[grader] warm_idle_s``: how long a warm grading server waits for the next grade (0: none)
    warm_idle_s: float = _default("grader.warm_idle_s")
    #: ``for_assignment``: the assignment graded, and each exercise module of the course's
    #: other assignments → its assignment, so a grade ``--assignment day1`` still warns of a
    #: day1 file importing one of them (runner/submission.py: _cross_assignment_imports;
    #: blind tester R-BM)
    assignment: str | None = None
    handed_in_elsewhere: dict[str, str] = field(default_factory=dict)

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

        return replace(
            self, skills={k: v for k, v in self.skills.items() if k in skill_ids}, selected_from=self.selected_from or self
        )

    def for_assignment(self, name: str | None) -> Config:
        """The config one assignment's Gradescope bundle grades with: its skills, and only their
        modules in the submission (the seed is derived from exactly those files)."""
        if not name:
            return self
        if name not in self.assignments:
            raise ConfigError(_unknown("assignment", name, list(self.assignments), "--assignment"))
        from dataclasses import replace

        selected = self.select(list(self.assignments[name]))
        elsewhere = {
            self.skills[sid].module: other
            for other, skill_ids in self.assignments.items()
            if other != name
            for sid in skill_ids
            if sid in self.skills
        }
        # an assignment is whole in itself: its bundle's identity is of its skills (release/gradescope.py)
        return replace(
            selected,
            exercise_modules=tuple(s.module for s in selected.skills.values()),
            assignments={},
            selected_from=None,
            assignment=name,
            handed_in_elsewhere=elsewhere,
        )
