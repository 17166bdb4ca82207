"""A class too big for one machine: disjoint shards on an existing scheduler, then one merge.

``batch SUBMISSIONS --out part-K --shard K/N`` grades the K-th of N disjoint parts (the
students in SUBMISSIONS' stable order whose position ≡ K−1 mod N), so a Slurm job array
or a GitHub Actions matrix runs them side by side with nothing of ours to schedule.
``--shard slurm`` takes K and N from Slurm's own variables (``SLURM_ARRAY_TASK_ID``,
``_MIN``, ``_STEP``, ``_COUNT``): ``--array=0-2``, ``--array=1-3`` and ``--array=4-8:2``
all work, no arithmetic by hand (examples/slurm/grade-class.sbatch).

Each shard leaves ``shard.json`` in its --out: which part it is, the suites' hash and the
course key's id (``seeding.key_id``: a one-way name, never the key) it graded with.
``batch SUBMISSIONS --out OUT --merge part-1 part-2 …`` first checks those: every part of
the same N, none missing, the same suites, and the same course key as the merge itself —
a node that graded without the key file (another key id) is named, never silently dropped.
Then every student must have a finished result that fits this batch (same files, suites,
seed key and options) in some part; a student none has stops the merge, naming them. Only
then are the students' folders copied into OUT and the gradebook, summary and LMS files
written exactly as one machine would have (``run.finish``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from . import report

SHARD_FILE = "shard.json"
SHARD_SCHEMA = "attention-autograder/shard@1"
SLURM = "slurm"


class ShardError(ValueError):
    """A bad --shard or --merge; ``str()`` says what to pass instead."""


def _slurm(env) -> tuple[int, int]:
    """(K, N) of this array task: K counts from 1 whatever the array's first index and step."""
    names = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN")
    missing = [n for n in names if not (env.get(n) or "").strip().isdigit()]
    if missing:
        raise ShardError(
            f"--shard slurm: {', '.join(missing)} not set (or not a number) — run it inside a Slurm job array "
            "(sbatch --array=0-2), or pass --shard K/N"
        )
    task, count, low = (int(env[n]) for n in names)
    step = (env.get("SLURM_ARRAY_TASK_STEP") or "1").strip()
    step = int(step) if step.isdigit() and int(step) > 0 else 1
    k = (task - low) // step + 1
    if (task - low) % step or not 1 <= k <= count:
        raise ShardError(
            f"--shard slurm: task {task} of an array from {low} step {step} with {count} tasks is not one of its parts — "
            "use a plain range such as --array=0-2 or --array=1-3"
        )
    return k, count


def parse(text: str, env=None) -> tuple[int, int]:
    """``K/N`` (1 ≤ K ≤ N), or ``slurm``: this Slurm array task's part."""
    if (text or "").strip().casefold() == SLURM:
        return _slurm(os.environ if env is None else env)
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        hint = (
            " (a 0-based Slurm array? pass --shard slurm: it reads the array's own variables)"
            if match and match.group(1) == "0"
            else ""
        )
        raise ShardError(f"--shard {text!r}: use K/N with 1 ≤ K ≤ N, e.g. --shard 2/3 for the second of three parts{hint}")
    return int(match.group(1)), int(match.group(2))


def select(students: list, shard: tuple[int, int]) -> list:
    k, n = shard
    return [s for i, s in enumerate(students) if i % n == k - 1]


def record(out: Path, shard: tuple[int, int], key_id: str, suite: str, students: list) -> None:
    """``OUT/shard.json``: what a merge checks before taking anything of this part."""
    from ...core.results import write_atomic

    data = {
        "schema": SHARD_SCHEMA,
        "shard": f"{shard[0]}/{shard[1]}",
        "seed_key_id": key_id,  # seeding.key_id: a one-way name of the key, never the key
        "suite_hash": suite,
        "students": [s.key for s in students],
    }
    write_atomic(out / SHARD_FILE, json.dumps(data, indent=2, ensure_ascii=True) + "\n")


def _read(path: Path) -> dict:
    try:
        data = json.loads((path / SHARD_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShardError(f"--merge {path}: has no {SHARD_FILE} — pass the --out folders of `batch --shard K/N` runs") from None
    except (OSError, ValueError) as exc:
        raise ShardError(f"--merge {path}/{SHARD_FILE}: cannot be read ({exc}) — grade that shard again") from None
    if not isinstance(data, dict) or data.get("schema") != SHARD_SCHEMA:
        raise ShardError(f"--merge {path}/{SHARD_FILE}: not a shard record of this grader — grade that shard again")
    return data


def _key_name(key_id: str) -> str:
    return "no course key (the public local key)" if key_id == "public-default" else f"course key id {key_id}"


def check(parts: list[Path], key_id: str, suite: str) -> dict[Path, dict]:
    """The parts' records, once they fit together and this merge; ``ShardError`` naming the cause."""
    records = {path: _read(path) for path in parts}
    counts = {str(r.get("shard", "")).partition("/")[2] for r in records.values()}
    if len(counts) != 1:
        shown = ", ".join(f"{p} is {r.get('shard')}" for p, r in records.items())
        raise ShardError(f"--merge: the parts come from different splits ({shown}) — merge the parts of one --shard K/N run")
    n = int(counts.pop() or 0)
    have: dict[int, Path] = {}
    for path, r in records.items():
        k = int(str(r["shard"]).partition("/")[0])
        if k in have:
            raise ShardError(f"--merge: {have[k]} and {path} are both shard {k}/{n} — pass each part once")
        have[k] = path
    absent = [f"{k}/{n}" for k in range(1, n + 1) if k not in have]
    if absent:
        raise ShardError(
            f"--merge: shard(s) {', '.join(absent)} missing (given: {', '.join(str(p) for p in parts)}) — "
            "their students would get no grade; wait for those jobs or pass their --out folders"
        )
    other_keys = {p: r.get("seed_key_id") for p, r in records.items() if r.get("seed_key_id") != key_id}
    if other_keys:
        shown = "; ".join(f"{p} was graded with {_key_name(str(k))}" for p, k in other_keys.items())
        raise ShardError(
            f"--merge: {shown}, this merge uses {_key_name(key_id)} — the shards' scores would not be the "
            "Gradescope bundle's or each other's. Give every node the course key (--seed-key-file FILE on a path "
            "they all mount) and grade those shards again"
        )
    other_suites = [p for p, r in records.items() if r.get("suite_hash") != suite]
    if other_suites:
        raise ShardError(
            f"--merge: {', '.join(map(str, other_suites))} graded other suites than this repository's ({suite[:12]}) — "
            "grade those shards again with this checkout"
        )
    return records


def merge(parts: list[Path], out: Path, students: list, wants: dict[str, dict], key_id: str = "", suite: str = "") -> list[str]:
    """Copy each student's finished folder from the part that has one fitting ``wants``;
    returns notes (students finished in several parts). ``ShardError`` before anything is
    copied when the parts do not fit together or a student has no fitting result."""
    notes = []
    for path in parts:
        if not path.is_dir():
            raise ShardError(f"--merge {path}: not a folder — pass the --out folders of the shards")
        if path.resolve() == out.resolve():
            raise ShardError(f"--merge {path}: is the --out folder itself — merge into a folder of its own")
    records = check(parts, key_id, suite)
    chosen: dict[str, Path] = {}
    lost: list[str] = []
    for student in students:
        found = []
        for path in parts:
            results, meta = report.load_row(path / student.key)
            if results is not None and all(meta.get(k) == v for k, v in wants[student.key].items()):
                found.append(path)
        if not found:
            owner = [p for p, r in records.items() if student.key in (r.get("students") or [])]
            why = f"{owner[0]} has no finished result for its current files" if owner else "in no shard's list (new since?)"
            lost.append(f"{student.key} ({why})")
            continue
        if len(found) > 1:
            notes.append(f"{student.key}: finished in several shards ({', '.join(str(p) for p in found)}); the first is used")
        chosen[student.key] = found[0]
    if lost:
        raise ShardError(
            f"--merge: {len(lost)} student(s) have no finished result in any shard: {'; '.join(lost[:10])}"
            + (" …" if len(lost) > 10 else "")
            + " — grade those shards again (same command: finished students are kept), then merge"
        )
    out.mkdir(parents=True, exist_ok=True)
    for key, source in chosen.items():
        target = out / key
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source / key, target)
    return notes
