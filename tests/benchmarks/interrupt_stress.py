"""Stop many grades at many moments and list every one that did not end as an interrupt:
exit status 130, an ``interrupted`` results file, nothing left in its TMPDIR a few seconds
later. Not a speed figure: a stress check for the interrupt paths (core/host.py, cli.py,
runner/process/os_spawn.py), most useful beside busy loops, where the stages stretch.

    .venv/bin/python tests/benchmarks/interrupt_stress.py [--count 80] [--signal TERM] [--root CHECKOUT]

Each stop comes ``0.03 + 0.01·(n mod 25)`` seconds after the grade's first timeline mark
(``AUTOGRADER_TIMELINE``: its own code has begun). Exit status 1 when any stop went wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stop_once(root: Path, folder: Path, delay: float, signum: int) -> str | None:
    """One grade stopped ``delay`` s after its first mark: None when it ended as it must."""
    tmp, marks, out = folder / "tmp", folder / "marks", folder / "results.json"
    tmp.mkdir(parents=True)
    env = {**os.environ, "TMPDIR": str(tmp), "AUTOGRADER_WARM": "0", "AUTOGRADER_TIMELINE": str(marks)}
    cmd = [sys.executable, "-m", "autograder", "grade", str(root / "solutions"), "--skill", "qkv"]
    with open(folder / "stderr.txt", "wb") as err:
        proc = subprocess.Popen(
            [*cmd, "--format", "json", "--no-progress", "--output", str(out)],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    while not (marks.exists() and "command line: started" in marks.read_text(encoding="utf-8")):
        if proc.poll() is not None:
            return f"ended before its first mark (exit {proc.returncode})"
        time.sleep(0.001)
    time.sleep(delay)
    proc.send_signal(signum)
    code = proc.wait(timeout=120)
    time.sleep(3)  # what the run started ahead needs to notice and leave
    left = sorted(p.name for p in tmp.iterdir())
    data = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    status = data and data.get("status")
    if code == 130 and status == "interrupted" and not left:
        return None
    return f"exit {code}, results {status}, left {left}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=80)
    parser.add_argument("--signal", default="TERM", choices=["TERM", "INT", "HUP"])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to grade with (default: this one)")
    args = parser.parse_args()
    signum = getattr(signal, f"SIG{args.signal}")
    work = Path(tempfile.mkdtemp(prefix="interrupt-stress-"))
    bad = []
    try:
        for n in range(args.count):
            delay = 0.03 + 0.01 * (n % 25)
            problem = stop_once(args.root.resolve(), work / str(n), delay, signum)
            if problem:
                bad.append(f"stop {n} at {delay:.2f} s: {problem}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(bad) or f"all {args.count} stops ended as interrupts (SIG{args.signal})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
