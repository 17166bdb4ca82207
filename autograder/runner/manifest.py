"""The run manifest: one grading run as data, decided on the trusted side before pytest starts.

It is the only thing that crosses to the trusted pytest process (as JSON on a pipe; the
plugin reads it back with ``RunManifest.from_dict``), and scoring reads it too: the tests
to expect with their weights, the skills, and the facts about each graded module captured
when the submission was copied (definition lines, the source lines a frame may show). So a
results file can be built from the report and this alone, after the run folder is gone.

``RunManifest.plan(config)`` is what grading.toml alone says (every error result is built
from it); ``grade`` adds the submission's modules, the seed and the worker's spec.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..config import Config, Limits, TestSpec
from ..core.exercise_api import definitions, skill_functions
from ..sandbox.spec import WorkerSpec

#: characters of a source line a frame shows
CODE_CHARS = 200


@dataclass
class RunLimits:
    """The ``[limits]`` the trusted pytest process enforces itself."""

    call_timeout_s: float
    worker_start_timeout_s: float
    run_timeout_s: float
    skill_time_s: float
    max_result_mib: int
    trusted_processes: int = 2
    #: module → [CPU seconds one call may use, CPU seconds all its calls may use] (cpu_limits.py);
    #: a module not listed has the wall-clock limits alone
    cpu: dict[str, list[float]] = field(default_factory=dict)
    #: module → target → CPU seconds one call of it may use (cpu_limits.py: from that target's
    #: own costliest reference call); a target not listed has its module's per-call limit above
    cpu_calls: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, limits: Limits) -> RunLimits:
        return cls(
            limits.call_timeout_s,
            limits.worker_start_timeout_s,
            limits.run_timeout_s,
            limits.skill_time_s,
            limits.max_result_mib,
            limits.trusted_processes,
        )


@dataclass
class SkillEntry:
    id: str
    title: str
    module: str  # e.g. "qkv.py"
    points: float
    sections: list[str] = field(default_factory=list)
    gates: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)  # config.Skill.properties
    #: the module's public API, read from the instructor's module (exercise_api.skill_functions)
    functions: list[str] = field(default_factory=list)


@dataclass
class ModuleEntry:
    """A graded exercise module: where it is, what was wrong with it before grading, and the
    facts about its source that results show (read once, from the bytes that were copied)."""

    display_path: str  # as the student knows it, e.g. "exercises/qkv.py"
    copy_path: str | None = None  # in the read-only copy; None when it was not copied
    problem: str | None = None  # static problem found before grading (missing, syntax, …)
    problem_line: int | None = None
    #: name → [first line, last line] of each top-level def/class and method
    definitions: dict[str, list[int]] = field(default_factory=dict)
    #: each source line, stripped and cut to CODE_CHARS: the code a frame shows
    lines: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, info: dict, source: bytes | None) -> ModuleEntry:
        """From a prepared module's info (runner.submission) and the bytes that were copied."""
        entry = cls(
            display_path=info["display_path"],
            copy_path=info.get("copy_path"),
            problem=info.get("problem"),
            problem_line=info.get("problem_line"),
        )
        if source is not None:
            entry.definitions = {name: [first, last] for name, (first, last) in definitions(source).items()}
            entry.lines = [line.strip()[:CODE_CHARS] for line in source.decode("utf-8-sig", errors="replace").splitlines()]
        return entry


@dataclass
class RunManifest:
    course: str
    root: str
    suites_dir: str
    solutions_dir: str
    skills: list[SkillEntry]
    #: every test grading.toml expects, in its order (skill, suite, test)
    tests: list[TestSpec]
    limits: RunLimits
    modules: dict[str, ModuleEntry] = field(default_factory=dict)  # the graded exercise modules
    #: importable by the submission, never graded (rule scans of a module should cover them): name → copy
    helpers: dict[str, str] = field(default_factory=dict)
    preload: list[str] = field(default_factory=list)  # modules the fork server imports before forking
    worker: WorkerSpec | None = None
    seed: int | None = None
    seed_source: str | None = None
    suite_hash: str | None = None  # runner/identity.py: every suite file and the scoring table
    visible_suite_hash: str | None = None  # the part a student release ships
    #: a ``--skill`` run: the release's skills it left out (its hashes stay the release's)
    not_graded: list[str] = field(default_factory=list)
    #: ``[course.texts]`` (how citations name the lessons → files under docs/) and
    #: ``[course.result_labels]`` (prefix of a lesson's numbered results → the text)
    texts: dict[str, str] = field(default_factory=dict)
    result_labels: dict[str, str] = field(default_factory=dict)
    #: skill → wall seconds of the reference's tests (reference_cpu.toml ``tests_s``): the order
    #: in which two trusted processes take the skills, costliest first (runner/process/split.py)
    skill_seconds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def plan(cls, config: Config) -> RunManifest:
        """What grading.toml alone says: the skills and the tests to expect."""
        return cls(
            course=config.course,
            root=str(config.root),
            suites_dir=str(config.suites_dir),
            solutions_dir=str(config.solutions_dir),
            skills=[
                SkillEntry(
                    s.id,
                    s.title,
                    s.module,
                    s.points,
                    list(s.sections),
                    list(s.gates),
                    list(s.properties),
                    skill_functions(config, s),
                )
                for s in config.skills.values()
            ],
            tests=list(config.tests),
            limits=RunLimits.of(config.limits),
            not_graded=[s for s in (config.selected_from.skills if config.selected_from else ()) if s not in config.skills],
            texts=dict(config.texts),
            result_labels=dict(config.result_labels),
        )

    def test(self, node_id: str) -> TestSpec | None:
        return next((t for t in self.tests if t.node_id == node_id), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunManifest:
        data = dict(data)
        data["skills"] = [SkillEntry(**s) for s in data["skills"]]
        data["tests"] = [TestSpec(**t) for t in data["tests"]]
        data["limits"] = RunLimits(**data["limits"])
        data["modules"] = {name: ModuleEntry(**m) for name, m in (data.get("modules") or {}).items()}
        data["worker"] = WorkerSpec.from_dict(data["worker"]) if data.get("worker") else None
        return cls(**data)
