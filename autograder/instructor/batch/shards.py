"""A class too big for one machine: disjoint shards on an existing scheduler, then one merge.

``batch SUBMISSIONS --out part-K --shard K/N`` grades the K-th of N disjoint parts (the
students in SUBMISSIONS' stable order whose position ≡ K−1 mod N), so a Slurm job array
(``--shard $((SLURM_ARRAY_TASK_ID))/$SLURM_ARRAY_TASK_COUNT``) or a GitHub Actions matrix
runs them side by side with nothing of ours to schedule. ``batch SUBMISSIONS --out OUT
--merge part-1 part-2 …`` copies every student's finished folder into OUT — only one that
fits this batch (same files, suites, seed key and options), so a stale shard is never
mixed in — and writes the gradebook, summary and LMS files exactly as one machine would
have (``run.finish``). A student no shard finished is listed as not graded.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from . import report


class ShardError(ValueError):
    """A bad --shard or --merge; ``str()`` says what to pass instead."""


def parse(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ShardError(f"--shard {text!r}: use K/N with 1 ≤ K ≤ N, e.g. --shard 2/3 for the second of three parts")
    return int(match.group(1)), int(match.group(2))


def select(students: list, shard: tuple[int, int]) -> list:
    k, n = shard
    return [s for i, s in enumerate(students) if i % n == k - 1]


def merge(parts: list[Path], out: Path, students: list, wants: dict[str, dict]) -> list[str]:
    """Copy each student's finished folder from the part that has one fitting ``wants``;
    returns notes (students found in no part, or in several)."""
    notes = []
    for path in parts:
        if not path.is_dir():
            raise ShardError(f"--merge {path}: not a folder — pass the --out folders of the shards")
        if path.resolve() == out.resolve():
            raise ShardError(f"--merge {path}: is the --out folder itself — merge into a folder of its own")
    out.mkdir(parents=True, exist_ok=True)
    for student in students:
        found = []
        for path in parts:
            results, meta = report.load_row(path / student.key)
            if results is not None and all(meta.get(k) == v for k, v in wants[student.key].items()):
                found.append(path)
        if not found:
            notes.append(f"{student.key}: no shard has a finished result for the current files and suites — not graded")
            continue
        if len(found) > 1:
            notes.append(f"{student.key}: finished in several shards ({', '.join(str(p) for p in found)}); the first is used")
        target = out / student.key
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(found[0] / student.key, target)
    return notes
