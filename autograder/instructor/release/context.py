"""What every release builder receives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...config import Config


@dataclass(frozen=True)
class ReleaseContext:
    repo: Path  # the instructors' repository root
    config: Config  # grading.toml, loaded and validated
    out: Path  # the dist/ folder being written
    version: str  # e.g. "1.0.0" (make release VERSION=...)
    commit: str  # the source commit (git rev-parse HEAD; "+dirty" appended when the tree has changes)
    suite_hash: str  # autograder.runner.identity: every suite file and the scoring table, bit for bit
    visible_suite_hash: str = ""  # the part dist/student ships (computed when not given)
    seed_key: bytes | None = None  # the course's seed key (release/seedkey.py); the bundle needs one

    def __post_init__(self) -> None:
        if not self.visible_suite_hash:
            from ...runner.identity import identify

            object.__setattr__(self, "visible_suite_hash", identify(self.config).visible)

    def release_record(self) -> dict:
        """What release.json says in the student tree and the bundle: which release, which suites."""
        return {
            "version": self.version,
            "commit": self.commit,
            "suite_hash": self.suite_hash,
            "visible_suite_hash": self.visible_suite_hash,
        }

    def assignment_records(self) -> dict[str, dict[str, str | None]]:
        """Each ``[release.assignments]`` entry's two hashes, as its own bundle names them
        (release/gradescope.assignment_context): a student tree graded ``--assignment NAME``
        computes that entry's visible part and reads its full hash from here."""
        from ...runner.identity import identify

        records: dict[str, dict[str, str | None]] = {}
        for name in self.config.assignments:
            ident = identify(self.config.for_assignment(name))
            records[name] = {"suite_hash": ident.suite, "visible_suite_hash": ident.visible}
        return records
