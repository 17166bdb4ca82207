"""What every release builder receives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..config import Config


@dataclass(frozen=True)
class ReleaseContext:
    repo: Path  # the instructors' repository root
    config: Config  # grading.toml, loaded and validated
    out: Path  # the dist/ folder being written
    version: str  # e.g. "1.0.0" (make release VERSION=...)
    commit: str  # the source commit (git rev-parse HEAD; "+dirty" appended when the tree has changes)
    suite_hash: str  # autograder.runner.grade.suite_hash(config): what graded, bit for bit
