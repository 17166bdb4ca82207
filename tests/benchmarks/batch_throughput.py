"""Batch throughput: N generated submissions graded by ``python -m autograder batch``,
submissions per second, where the time goes, and a sample checked against single grades.

The class (deterministic for a given --count): correct submissions in every style of
tests/submissions/styles/ and the reference, single-mistake variants cycling through every
skill's tests/submissions/mistakes/*.toml, the stubs, the stubs with half the skills done,
and a few hostile ones from tests/submissions/hostile/ (loop, crash, fork bomb, 100 MB of
print). Every skill is graded; seeds are the default rule (derived from each submission's
files), so a single ``grade`` of the same folder draws the same inputs.

    .venv/bin/python tests/benchmarks/batch_throughput.py [--count 100] [--jobs 2] [--sample 12]
        [--no-preload-count 0]   also grade the first K with a fresh Python per student (ratio)

Prints: wall time and submissions/s (target ≥ 4 on the 2-core machine), the CPU seconds of a
submission (every process of the batch, over the class) against the CPU of
``python -c "import torch"`` measured three times before and three times after the batch
(issue 32: ≤ 0.5× its median; exit status 1 when missed, as ``make benchmark`` reads it), per kind the mean
wall and CPU seconds of one student's run and its phases (start → tests collected → tests
done → results written), and the sample's agreement with ``python -m autograder grade``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUBMISSIONS = ROOT / "tests" / "submissions"
sys.path.insert(0, str(SUBMISSIONS))
import variants
from cpu_cost import import_torch_cpu  # this folder: the script's own (sys.path[0])

#: issue 32 point 2: a submission's CPU in a batch, as a fraction of ``import torch``'s
CPU_RATIO_TARGET = 0.5


def missed(cpu_per_submission: float, torch_cpu: float) -> list[str]:
    """Each target the batch missed, as a line (empty when every one is met)."""
    ratio = cpu_per_submission / torch_cpu
    if ratio <= CPU_RATIO_TARGET:
        return []
    return [
        f"batch: {cpu_per_submission:.2f} CPU s a submission = {ratio:.2f}× import torch "
        f"({torch_cpu:.2f} CPU s), target ≤ {CPU_RATIO_TARGET}×"
    ]


HOSTILE = ("loop_forever", "self_sigkill", "fork_bomb", "print_100mb", "os_exit_at_import", "patch_allclose")


def generate(folder: Path, count: int) -> dict[str, str]:
    """``count`` submissions under ``folder``; returns name → kind."""
    kinds: dict[str, str] = {}
    styles = [("reference", variants.SOLUTIONS)] + [(s, SUBMISSIONS / "styles" / s) for s in variants.styles()]
    mistakes = [m for skill in variants.modules() for m in variants.mistakes(skill)]
    modules = list(variants.modules().values())
    plan = []
    n_hostile = max(1, count * 6 // 100)
    n_stub = max(1, count * 10 // 100)
    n_correct = max(1, count * 30 // 100)
    n_mistake = count - n_hostile - n_stub - n_correct
    plan += [("correct", i) for i in range(n_correct)] + [("mistake", i) for i in range(n_mistake)]
    plan += [("stub", i) for i in range(n_stub)] + [("hostile", i) for i in range(n_hostile)]
    for kind, i in plan:
        name = f"{kind}-{i:03d}"
        target = folder / name
        if kind == "correct":
            style, base = styles[i % len(styles)]
            target.mkdir()
            for module in modules:
                src = base / module if (base / module).exists() else variants.SOLUTIONS / module
                shutil.copyfile(src, target / module)
            name_kind = f"correct:{style}"
        elif kind == "mistake":
            m = mistakes[i % len(mistakes)]
            variants.build(target, [m])
            name_kind = f"mistake:{m['hint']}"
        elif kind == "stub":
            target.mkdir()
            for j, module in enumerate(modules):
                done = i % 2 == 1 and j % 2 == 0  # every other stub has half its skills done
                shutil.copyfile((variants.SOLUTIONS if done else ROOT / "exercises") / module, target / module)
            name_kind = "stub" if i % 2 == 0 else "stub:half-done"
        else:
            attack = HOSTILE[i % len(HOSTILE)]
            shutil.copytree(SUBMISSIONS / "hostile" / attack, target)
            name_kind = f"hostile:{attack}"
        kinds[name] = name_kind
    return kinds


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_batch(subs: Path, out: Path, jobs: int, extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of every process of the batch: the batch, its server, every
    run, fork server and worker — all are waited for, so RUSAGE_CHILDREN counts them)."""
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "batch",
        str(subs),
        "--out",
        str(out),
        "--jobs",
        str(jobs),
        "--no-progress",
        *extra,
    ]
    cpu = children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"batch failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return seconds, children_cpu() - cpu


def single(folder: Path) -> dict:
    """``grade`` of one submission with the key the batch used: the course's seed key where
    ``make release`` made one (a batch uses it by default; a plain ``grade`` uses the public
    local key, so its seeds — not its scores — would differ)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from autograder.config import load
    from autograder.runner import seeding

    key = seeding.course_key_path(seeding.key_name(load(ROOT / "grading.toml")))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        cmd = [sys.executable, "-m", "autograder", "grade", str(folder), "--format", "json", "--no-progress"]
        cmd += ["--output", str(out), *(["--seed-key-file", str(key)] if key.is_file() else [])]
        subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        return json.loads(out.read_text())


def per_test(data: dict) -> dict:
    return {t["id"]: (t["score"], t["status"]) for s in data["skills"] for t in s["tests"]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sample", type=int, default=12)
    parser.add_argument("--no-preload-count", type=int, default=0)
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="batch-bench-"))
    subs, out = work / "submissions", work / "out"
    shutil.rmtree(subs, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    subs.mkdir(parents=True)
    kinds = generate(subs, args.count)
    print(f"{len(kinds)} submissions in {subs}; machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")

    torch_before = [import_torch_cpu() for _ in range(3)]
    seconds, cpu_total = run_batch(subs, out, args.jobs, [])
    torch_after = [import_torch_cpu() for _ in range(3)]
    rate = len(kinds) / seconds
    print(f"batch --jobs {args.jobs}: {seconds:.1f} s for {len(kinds)} → {rate:.2f} submissions/s (target ≥ 4)")
    print(
        f"CPU of the whole batch (every process): {cpu_total:.0f} s = {cpu_total / len(kinds):.2f} s per submission "
        f"→ {len(kinds) * (os.cpu_count() or 1) / cpu_total:.2f} submissions/s if {os.cpu_count()} cores were ours alone"
    )

    torch_cpu = statistics.median(torch_before + torch_after)
    problems = missed(cpu_total / len(kinds), torch_cpu)
    print(
        f"CPU per submission {cpu_total / len(kinds):.2f} s = {cpu_total / len(kinds) / torch_cpu:.2f}× "
        f"`import torch`'s {torch_cpu:.2f} CPU s (median of 3 runs before and 3 after: "
        f"{', '.join(f'{t:.2f}' for t in torch_before + torch_after)}; load {os.getloadavg()[0]:.1f}), "
        f"target ≤ {CPU_RATIO_TARGET}×: {'MISSED' if problems else 'met'}"
    )

    # where the time goes, per kind of submission
    groups: dict[str, list[dict]] = {}
    for name, kind in kinds.items():
        meta = json.loads((out / name / "batch.json").read_text())
        groups.setdefault(kind.split(":")[0], []).append(meta)
    print(f"{'kind':<9} {'n':>3} {'wall/student':>13} {'cpu/student':>12} {'start→collected':>16} {'tests':>7} {'report':>7}")
    cpu_all = []
    for kind, metas in sorted(groups.items()):
        t = [m.get("timing") or {} for m in metas]
        cpu = [x["cpu_s"] for x in t if "cpu_s" in x]
        cpu_all += cpu

        def mean(key_a: str, key_b: str | None = None) -> str:
            values = [x[key_a] - (x[key_b] if key_b else 0) for x in t if key_a in x and (key_b is None or key_b in x)]
            return f"{statistics.fmean(values):.2f}" if values else "–"

        print(
            f"{kind:<9} {len(metas):>3} {statistics.fmean(m['seconds'] for m in metas):>12.2f}s "
            f"{(f'{statistics.fmean(cpu):.2f}s' if cpu else '–'):>12} "
            f"{mean('collected_s'):>15}s {mean('done_s', 'collected_s'):>6}s {mean('graded_s', 'done_s'):>6}s"
        )
    print("(cpu/student: the run's pytest process and what it waited for, from wait4 in the batch server)")

    with open(out / "gradebook.csv", encoding="utf-8") as fh:
        book = {row["folder"]: row for row in csv.DictReader(fh)}
    statuses = {}
    for row in book.values():
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    print(f"gradebook: {len(book)} rows, statuses {statuses}")

    # correctness: a sample across kinds against single `grade` (same files → same seed)
    names = sorted(kinds)
    step = max(1, len(names) // max(1, args.sample))
    sample = names[::step][: args.sample]
    agree = 0
    for name in sample:
        batched = json.loads((out / name / "results.json").read_text())
        one = single(subs / name)
        same = batched["score"] == one["score"] and batched["seed"] == one["seed"] and per_test(batched) == per_test(one)
        agree += same
        print(
            f"  {name:<14} {kinds[name]:<40} batch {batched['score']:>6g}  single {one['score']:>6g}  seed "
            f"{'=' if batched['seed'] == one['seed'] else '≠'}  {'same' if same else 'DIFFERENT'}"
        )
    print(f"sample: {agree}/{len(sample)} identical to single grade (score, seed, every test's score and status)")

    if args.no_preload_count:
        few = work / "few"
        shutil.rmtree(few, ignore_errors=True)
        few.mkdir()
        for name in names[: args.no_preload_count]:
            shutil.copytree(subs / name, few / name)
        a, a_cpu = run_batch(few, work / "out-preload", args.jobs, [])
        b, b_cpu = run_batch(few, work / "out-fresh", args.jobs, ["--no-preload"])
        print(
            f"{args.no_preload_count} submissions: preloaded {a:.1f} s / {a_cpu:.0f} CPU-s vs fresh Python per student "
            f"{b:.1f} s / {b_cpu:.0f} CPU-s (wall ratio {b / a:.2f}, CPU ratio {b_cpu / a_cpu:.2f})"
        )
    for problem in problems:
        print(f"MISSED {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
