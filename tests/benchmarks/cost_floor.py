"""What grading one submission costs at the least, as the rules have it (issue 32, point 2's
floor): how far below today's batch a class could go without changing what a grade is.

    .venv/bin/python tests/benchmarks/cost_floor.py [--copies 6] [--rounds 5]

Point 2 asks a batch for ≤ 0.5× the CPU of ``python -c "import torch"`` a submission. This
script measures three floors under that figure, each as a ratio to ``import torch``'s CPU
(median of 3, before and after):

* **a class of stubs, a class of references** — the marginal batch CPU a student, every
  process counted (``cpu_cost.subreaper``): the batch of ``2 × --copies`` students less the
  batch of ``--copies``, over ``--copies``, so the batch's own start (its preloaded process,
  ``import torch`` once) is left out. A stub's every call raises at once: what is left is the
  grade itself (a pytest run with the JSON report, its suites, six confined workers, the
  report's rendering) with no submission work in it.
* **the reference's own calls** — the worker CPU inside the reference's calls in one full
  grade (``call_cpu_seconds`` of the kept pytest-json-report, summed over the skills): the
  submission's work, as measured under the rule checks that record it.
* **pytest alone** — pytest with pytest-json-report over as many trivial tests as a full
  grade collects, forked from a process that has imported torch and pytest and frozen its
  heap (``gc.freeze``), as a batch's preloaded process does: rule 3's one source of
  results, with no suite, worker or submission in it (median of ``--rounds``).

No figure has a target of its own: the script prints them beside point 2's 0.5× and exits 0.
Figures are of the tree it sits in; docs/PERFORMANCE.md has them by date.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from batch_throughput import CPU_RATIO_TARGET  # this folder: the script's own (sys.path[0])
from cpu_cost import children_cpu, import_torch_cpu, subreaper

ROOT = Path(__file__).resolve().parents[2]

#: pytest over ``count`` trivial tests with the JSON report, in a fork of a process that has
#: imported torch and pytest and frozen its heap; prints the child's CPU seconds (median)
PYTEST_ALONE = r"""
import gc, os, resource, statistics, sys
import torch, pytest, pytest_jsonreport.plugin
folder, count, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(os.path.join(folder, "test_trivial.py"), "w") as f:
    f.write("import pytest\n@pytest.mark.parametrize('i', range(%d))\ndef test_trivial(i):\n    assert i >= 0\n" % count)
os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
gc.collect(); gc.freeze()
def children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
seen = []
for _ in range(rounds):
    before = children()
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1), os.dup2(null, 2)
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "pytest_jsonreport.plugin", "--json-report",
                            "--json-report-file=" + os.path.join(folder, "report.json"), "--rootdir", folder, folder])
        os._exit(int(code))
    os.waitpid(pid, 0)
    seen.append(children() - before)
print(statistics.median(seen))
"""


def class_of(folder: Path, source: Path, count: int) -> Path:
    """``count`` copies of the exercise files in ``source``, each one line apart (so each
    student's content, and so its seed, is its own, as in a real class)."""
    folder.mkdir(parents=True)
    for i in range(count):
        student = folder / f"s{i:03d}"
        student.mkdir()
        for path in source.glob("*.py"):
            shutil.copy2(path, student / path.name)
        with (student / "qkv.py").open("a") as f:
            f.write(f"# student {i}\n")
    return folder


def batch_cpu(subs: Path, out: Path) -> float:
    """CPU seconds of every process of one batch of ``subs``."""
    before = children_cpu()
    cmd = [sys.executable, "-m", "autograder", "batch", str(subs), "--out", str(out), "--jobs", "2", "--no-progress"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"batch of {subs} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return children_cpu() - before


def marginal(work: Path, name: str, source: Path, copies: int) -> float:
    """Batch CPU a student, the batch's own start left out: (2k students − k students) / k."""
    small = batch_cpu(class_of(work / f"{name}-small", source, copies), work / f"{name}-small-out")
    large = batch_cpu(class_of(work / f"{name}-large", source, 2 * copies), work / f"{name}-large-out")
    return (large - small) / copies


def reference_calls(work: Path) -> tuple[float, int]:
    """(worker CPU seconds inside the reference's calls in one full grade, tests collected)."""
    report = work / "reference-report.json"
    cmd = [sys.executable, "-m", "autograder", "grade", "solutions", "--seed", "1", "--no-progress",
           "--format", "json", "--output", str(work / "reference.json"), "--keep-report", str(report)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"grade of solutions/ failed ({proc.returncode}): {proc.stderr[-2000:]}")
    data = json.loads(report.read_text())
    return sum(data["autograder"]["call_cpu_seconds"].values()), len(data["tests"])


def pytest_alone(work: Path, count: int, rounds: int) -> float:
    folder = work / "pytest-alone"
    folder.mkdir()
    proc = subprocess.run([sys.executable, "-c", PYTEST_ALONE, str(folder), str(count), str(rounds)],
                          capture_output=True, text=True, cwd=work)  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"pytest alone failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return float(proc.stdout.split()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=6, help="students of the smaller class (the larger has twice)")
    parser.add_argument("--rounds", type=int, default=5, help="pytest-alone rounds (median)")
    args = parser.parse_args()
    if not subreaper():
        print("note: not a child subreaper (not Linux?): processes re-parented to init are not counted")
    torch_runs = [import_torch_cpu() for _ in range(3)]
    with tempfile.TemporaryDirectory(prefix="cost-floor-") as tmp:
        work = Path(tmp)
        calls, tests = reference_calls(work)
        alone = pytest_alone(work, tests, args.rounds)
        stubs = marginal(work, "stubs", ROOT / "exercises", args.copies)
        references = marginal(work, "references", ROOT / "solutions", args.copies)
    torch_runs += [import_torch_cpu() for _ in range(3)]
    torch_cpu = statistics.median(torch_runs)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; import torch {torch_cpu:.2f} CPU s "
          f"(median of {', '.join(f'{t:.2f}' for t in torch_runs)})")  # fmt: skip
    rows = [
        (f"a class of references, batch CPU a student ({args.copies} → {2 * args.copies})", references),
        (f"a class of stubs, batch CPU a student ({args.copies} → {2 * args.copies})", stubs),
        ("the reference's own calls, worker CPU in one full grade", calls),
        (f"pytest + JSON report alone, {tests} trivial tests, forked warm", alone),
    ]
    width = max(len(label) for label, _ in rows)
    for label, seconds in rows:
        print(f"{label:<{width}}  {seconds:5.2f} CPU s  {seconds / torch_cpu:5.2f}× import torch")
    print(f"point 2's target: ≤ {CPU_RATIO_TARGET}× import torch a submission of a mixed class")
    if stubs / torch_cpu > CPU_RATIO_TARGET:
        print(f"a submission that runs nothing costs {stubs / torch_cpu:.2f}×: above the target before any work")
    return 0


if __name__ == "__main__":
    sys.exit(main())
