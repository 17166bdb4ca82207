"""Wall time and peak memory (all processes) of the Gradescope bundle's run_autograder.

Builds dist/autograder.zip into a temporary folder, unpacks it in a Gradescope-like
layout and runs it on
  - reference:    the reference solutions (must score full marks),
  - loop_forever: every function of every exercise loops forever (the stubs with each
                  ``raise NotImplementedError`` replaced by ``while True: pass``),
  - allocate_until_refused: every function allocates memory until the worker's limit
                  ([release.gradescope.limits] memory_mib) refuses it,
  - memfd_hoard:  every function creates 16 MiB memfd files until refused (issue 17: before
                  seccomp denied memfd_create, a worker held ~250 of them, memory RLIMIT_AS
                  does not count),
  - scratch_fill: every function writes 16 MiB files in its scratch folder (cwd) until refused,
sampling the whole process tree from /proc (tests/benchmarks/proctree.py). Gradescope's
defaults: 10 min, 768 MB for the container, half a CPU — expect 2–4× this machine's wall
time there for single-threaded work. The container's memory limit counts PSS *and* shared
memory no process maps (memfd, /dev/shm, tmpfs files): the peaks printed are PSS, the
machine's Shmem growth (/proc/meminfo, noisy where others run), the memfd and /dev/shm files
the tree holds, and "total" = PSS without its shmem part + the largest shmem figure.

    .venv/bin/python tests/benchmarks/gradescope_run.py [--case reference --case loop_forever]

Each case's CPU seconds (user + system of every process of the run: this script is their
subreaper, as in tests/benchmarks/cpu_cost.py) give its wall time under
Gradescope's half a CPU: no less than CPU ÷ 0.5, whatever this machine's load (its own wall
time says little on a shared machine). Issue 32's targets for a submission whose every
function loops forever: ≤ 20 s under half a CPU, and ≤ 10× the CPU of
``python -c "import torch"`` here (measured once per run).

The bundle is built with a fresh random course key (a real bundle carries the course's; the
benchmark needs one of the same form, never the instructor's own). Exit status 1 when a
target is missed: the reference below full marks, a case without a valid results.json, a
case whose memory total passes Gradescope's 768 MB container, or loop_forever over its
time targets. Each figure is printed beside its target.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).parent)]

from cpu_cost import children_cpu, import_torch_cpu, subreaper
from proctree import measure

from autograder.config import load
from autograder.instructor.release import ReleaseContext, gradescope
from autograder.runner.grade import suite_hash


def _from_stubs(target: Path, body: str) -> None:
    """The stubs with every ``raise NotImplementedError(...)`` replaced by ``body`` (lines)."""
    target.mkdir(parents=True)
    for stub in sorted((ROOT / "exercises").glob("*.py")):

        def replace(match: re.Match) -> str:
            return "\n".join(match.group(1) + line for line in body.splitlines())

        text = re.sub(r"^(\s*)raise NotImplementedError\(.*\)\s*$", replace, stub.read_text(), flags=re.M)
        assert "NotImplementedError(" not in text, stub
        (target / stub.name).write_text(text)


def loop_forever(target: Path) -> None:
    """Every function of every exercise loops forever."""
    _from_stubs(target, "while True:\n    pass")


def allocate_until_refused(target: Path) -> None:
    """Every function allocates 16 MiB blocks until the worker's memory limit refuses one."""
    _from_stubs(target, "hog = []\nwhile True:\n    hog.append(torch.ones(4 << 20))")


def memfd_hoard(target: Path) -> None:
    """Every function keeps creating 16 MiB memfd files (open, never closed) until refused."""
    _from_stubs(target, "import os\nwhile True:\n    os.write(os.memfd_create('hog'), bytes(16 << 20))")


def scratch_fill(target: Path) -> None:
    """Every function keeps writing new 16 MiB files in its scratch folder until refused."""
    _from_stubs(
        target,
        "import os, itertools\nfor n in itertools.count():\n"
        "    with open(f'fill{os.getpid()}-{n}', 'wb') as fh:\n        fh.write(bytes(16 << 20))",
    )


def reference(target: Path) -> None:
    shutil.copytree(ROOT / "solutions", target)


CASES = {
    "reference": reference,
    "loop_forever": loop_forever,
    "allocate_until_refused": allocate_until_refused,
    "memfd_hoard": memfd_hoard,
    "scratch_fill": scratch_fill,
}


CONTAINER_MB = 768  # Gradescope's default container memory
CPU_SHARE = 0.5  # Gradescope's default: half a CPU
#: issue 32: a submission whose every function loops forever, under half a CPU (wall seconds)
LOOP_HALF_CPU_S = 20.0
#: ... and its CPU seconds at most this many times those of `python -c "import torch"` here
LOOP_TORCH_RATIO = 10.0


def build_bundle(work: Path, config) -> Path:
    """dist/autograder.zip of the whole course, keyed with a fresh random key of the course
    key's form (hex text): the bundle refuses to be built without one."""
    ctx = ReleaseContext(
        repo=ROOT,
        config=config,
        out=work / "dist",
        version="0.0.0-bench",
        commit="unknown",
        suite_hash=suite_hash(config),
        seed_key=secrets.token_hex(32).encode(),
    )
    return gradescope.build(ctx)[0]


def missed(
    case: str,
    data: dict | None,
    total_mib: float,
    full_marks: float,
    cpu_s: float | None = None,
    torch_cpu_s: float | None = None,
) -> list[str]:
    """The targets a case missed (empty: met). ``cpu_s``: the run's CPU seconds (all its
    processes); ``torch_cpu_s``: those of ``python -c "import torch"`` on this machine."""
    if data is None:
        return [f"{case}: no valid results.json"]
    out = []
    if case == "reference" and abs(float(data.get("score") or 0) - full_marks) > 1e-6:
        out.append(f"{case}: scored {data.get('score')} of {full_marks:g} — the reference must score full marks")
    if total_mib * 1.048576 > CONTAINER_MB:
        out.append(f"{case}: memory total {total_mib * 1.048576:.0f} MB > the {CONTAINER_MB} MB container")
    if case == "loop_forever" and cpu_s is not None:
        if cpu_s / CPU_SHARE > LOOP_HALF_CPU_S:
            out.append(
                f"{case}: {cpu_s:.1f} CPU s = at least {cpu_s / CPU_SHARE:.0f} s under half a CPU, target ≤ {LOOP_HALF_CPU_S:g} s"
            )
        if torch_cpu_s and cpu_s > LOOP_TORCH_RATIO * torch_cpu_s:
            out.append(
                f"{case}: {cpu_s / torch_cpu_s:.1f}× the CPU of import torch ({cpu_s:.1f} / {torch_cpu_s:.2f} CPU s), "
                f"target ≤ {LOOP_TORCH_RATIO:g}×"
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", action="append", choices=sorted(CASES), default=[])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gradescope-bench-"))
    config = load(ROOT / "grading.toml")
    bundle = build_bundle(work, config)
    problems: list[str] = []
    counted = subreaper()
    torch_cpu = import_torch_cpu() if counted else None
    print(
        f"bundle: {bundle.stat().st_size / 1024:.0f} KiB; budget {config.gradescope_release.time_budget_s:g} s; "
        f"worker address space {config.gradescope_release.limits.memory_mib} MiB"
    )
    for case in args.case or list(CASES):
        root = work / case
        with zipfile.ZipFile(bundle) as zf:
            for info in zf.infolist():
                path = root / "source" / info.filename
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(zf.read(info))
                path.chmod(stat.S_IMODE(info.external_attr >> 16))
        CASES[case](root / "submission")
        (root / "results").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADESCOPE_", "AUTOGRADER_"))}
        env.update(GRADESCOPE_AUTOGRADER_ROOT=str(root), GRADESCOPE_PYTHON=sys.executable)
        before = children_cpu()
        m = measure([str(root / "source" / "run_autograder")], env=env, cwd=root)
        cpu = children_cpu() - before if counted else None
        try:
            data = json.loads((root / "results" / "results.json").read_text())
        except (OSError, ValueError):
            problems += missed(case, None, m.peak_total_mib, config.total_points)
            continue
        problems += missed(case, data, m.peak_total_mib, config.total_points, cpu, torch_cpu)
        status = data.get("extra_data", {}).get("status")
        print(
            f"{case:13s} wall {m.wall_s:6.1f} s  peak PSS {m.peak_pss_mib:5.0f} MiB  peak RSS {m.peak_rss_mib:5.0f} MiB  "
            f"shmem: Δ {m.peak_shmem_delta_mib:5.0f} MiB, held {m.peak_shmem_held_mib:5.0f} MiB, "
            f"in PSS {m.peak_pss_shmem_mib:4.0f} MiB  total {m.peak_total_mib:5.0f} MiB (target ≤ {CONTAINER_MB} MB)  "
            f"processes ≤ {m.peak_processes}  score {data['score']:g}  status {status}  (exit {m.returncode}, "
            f"{m.samples} samples)",
            flush=True,
        )
        if cpu is not None:
            target = f" (target ≤ {LOOP_HALF_CPU_S:g} s)" if case == "loop_forever" else ""
            ratio = f" (target ≤ {LOOP_TORCH_RATIO:g}×)" if case == "loop_forever" else ""
            print(
                f"{'':13s} CPU {cpu:.1f} s → under half a CPU ≥ {cpu / CPU_SHARE:.1f} s{target}; "
                f"{cpu / torch_cpu:.1f}× import torch's {torch_cpu:.2f} CPU s{ratio}",
                flush=True,
            )
    shutil.rmtree(work, ignore_errors=True)
    for problem in problems:
        print(f"MISSED {problem}")
    print("all targets met" if not problems else f"{len(problems)} target(s) missed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
