"""Wall time, peak memory (all processes of the run) and results size of grading hostile
submissions with the repository's own grading.toml: the bounds of issue 8 C ("any
submission finishes in ≤ 2 minutes on this machine"; output floods leave a small results
file and a bounded peak).

    .venv/bin/python tests/benchmarks/hostile_time.py [--only NAME]... [--seed 1]

Submissions: every stub of exercises/ rewritten to loop forever ("loop_everywhere"), to walk
the garbage collector on every call before answering ("gc_walker"; refused by the worker
since 2026-12-05, so now a fast failure), and the stored
tests/submissions/hostile/{loop_forever, output_cap_raised, print_100mb}. Memory is the
sum of the resident sizes of the grading command and all its descendants (the trusted
pytest, the fork server, the workers), sampled every 50 ms.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "submissions" / "hostile"

BODIES = {
    "loop_everywhere": "while True:\n    pass",
    # merely slow: a full walk of the garbage collector's objects on every call, then the
    # stub's own answer (so the run also shows what a slow but honest-looking module costs)
    "gc_walker": "import gc\nfor _ in range(50):\n    sum(1 for _ in gc.get_objects())\nraise NotImplementedError('slow')",
}


def derived(name: str, folder: Path) -> Path:
    """The stubs with every `raise NotImplementedError(...)` replaced by BODIES[name]."""
    body = ast.parse(BODIES[name]).body

    class Replace(ast.NodeTransformer):
        def visit_Raise(self, node):
            return body

    folder.mkdir(parents=True)
    for stub in sorted((ROOT / "exercises").glob("*.py")):
        tree = ast.fix_missing_locations(Replace().visit(ast.parse(stub.read_text(encoding="utf-8"))))
        (folder / stub.name).write_text(ast.unparse(tree) + "\n", encoding="utf-8")
    return folder


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss(root: int) -> int:
    tree, total, todo = _children(), 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss(pid)
        todo.extend(tree.get(pid, []))
    return total


def measure(submission: Path, seed: int) -> dict:
    out = Path(tempfile.mkdtemp()) / "results.json"
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(submission),
        "--format",
        "json",
        "--output",
        str(out),
        "--seed",
        str(seed),
        "--no-progress",
    ]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()

    def sample():
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, err = proc.communicate()
    seconds = time.monotonic() - start
    done.set()
    sampler.join()
    data = json.loads(out.read_text()) if out.is_file() else {}
    return {
        "rc": proc.returncode,
        "seconds": round(seconds, 1),
        "peak_mib": round(peak / 2**20),
        "results_kib": round(out.stat().st_size / 1024, 1) if out.is_file() else None,
        "status": data.get("status"),
        "score": data.get("score"),
        "max_score": data.get("max_score"),
        "timeouts": sum(
            "time budget" in t["summary"] or "did not finish" in t["summary"] or "timed out" in t["summary"]
            for s in data.get("skills", [])
            for t in s["tests"]
        ),
        "stderr": err.decode(errors="replace").strip().splitlines()[-1:] if proc.returncode else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    subjects = {name: (lambda n=name: derived(n, work / n)) for name in BODIES}
    for name in ("loop_forever", "output_cap_raised", "print_100mb"):
        subjects[name] = lambda n=name: HOSTILE / n
    for name, make in subjects.items():
        if args.only and name not in args.only:
            continue
        result = measure(make(), args.seed)
        print(json.dumps({"submission": name, **result}), flush=True)


if __name__ == "__main__":
    main()
