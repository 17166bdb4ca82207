"""The benchmark scripts themselves (tests/benchmarks/): a missed target is an exit status,
not only a line of text (`make benchmark`, CI), and the Gradescope run builds its bundle.
Their timings are never asserted here: speed is measured by running them, not by tests."""

from __future__ import annotations

import importlib.util
import sys
import zipfile

from conftest import ROOT

BENCH = ROOT / "tests" / "benchmarks"


def _module(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_grade_time_names_each_missed_target_and_meets_none_silently():
    bench = _module("grade_time")
    ok = bench.missed({"full grade": 1.2, "student make grade": 1.1}, {"full grade": 500, "student make grade": 400})
    assert ok == []
    slow = bench.missed(
        {"full grade": 1.9, "student make grade": 1.1},
        {"full grade": 500, "student make grade": 690},
        {"full grade": True, "student make grade": False},
    )
    assert slow == [
        "full grade: 1.90× import torch, target ≤ 1.3×",
        "student make grade: peak PSS 724 MB, target ≤ 700 MB",
        "student make grade: the grade did not complete — its time measures nothing",
    ]


def test_gradescope_run_builds_its_bundle_with_a_key_and_checks_its_targets(tmp_path):
    bench = _module("gradescope_run")
    from autograder.config import load

    config = load(ROOT / "grading.toml")
    bundle = bench.build_bundle(tmp_path, config)
    with zipfile.ZipFile(bundle) as zf:
        key = zf.read("seed.key").strip()
    assert len(key) == 64 and int(key, 16) >= 0  # a fresh key of the course key's form
    assert bench.missed("reference", {"score": config.total_points}, 500, config.total_points) == []
    assert bench.missed("reference", {"score": 90}, 800, 100) == [
        "reference: scored 90 of 100 — the reference must score full marks",
        "reference: memory total 839 MB > the 768 MB container",
    ]
    assert bench.missed("loop_forever", None, 100, 100) == ["loop_forever: no valid results.json"]


def test_gradescope_run_holds_the_looping_submission_to_its_time_targets():
    # issue 32: ≤ 20 s under half a CPU (CPU ÷ 0.5) and ≤ 10× import torch's CPU; no timing here
    bench = _module("gradescope_run")
    done = {"score": 0}
    assert bench.missed("loop_forever", done, 500, 100, cpu_s=9.9, torch_cpu_s=1.4) == []
    assert bench.missed("loop_forever", done, 500, 100, cpu_s=22.2, torch_cpu_s=1.4) == [
        "loop_forever: 22.2 CPU s = at least 44 s under half a CPU, target ≤ 20 s",
        "loop_forever: 15.9× the CPU of import torch (22.2 / 1.40 CPU s), target ≤ 10×",
    ]
    assert bench.missed("loop_forever", done, 500, 100, cpu_s=9.0, torch_cpu_s=0.8) == [
        "loop_forever: 11.2× the CPU of import torch (9.0 / 0.80 CPU s), target ≤ 10×"
    ]
    # the reference has no time target (its score is what counts); no CPU figure, no time verdict
    assert bench.missed("reference", {"score": 100}, 500, 100, cpu_s=30.0, torch_cpu_s=1.4) == []
    assert bench.missed("loop_forever", done, 500, 100) == []


def test_batch_throughput_holds_a_submissions_cpu_to_half_of_import_torch():
    # issue 32 point 2: a submission's CPU in a batch ≤ 0.5× import torch's; no timing here
    bench = _module("batch_throughput")
    assert bench.missed(0.7, 1.4) == []
    assert bench.missed(2.55, 1.7) == ["batch: 2.55 CPU s a submission = 1.50× import torch (1.70 CPU s), target ≤ 0.5×"]


def test_cpu_by_process_sums_each_depth_of_the_commands_tree_and_nothing_outside_it():
    bench = _module("cpu_by_process")
    tick = bench.TICK
    seen = {  # (pid, start): [parent, user ticks, system ticks]
        (10, 1): [1, 5 * tick, 1 * tick],  # the command
        (11, 2): [10, 2 * tick, 0],  # its child
        (12, 3): [11, 1 * tick, 1 * tick],  # a grandchild
        (13, 3): [11, 3 * tick, 0],  # another
        (99, 4): [1, 50 * tick, 0],  # another process of the machine
        (12, 9): [98, 7 * tick, 0],  # pid 12 again, later, outside the tree: both kept apart
    }
    rows = bench.by_depth(10, seen)
    assert rows == {0: [1, 5.0, 1.0], 1: [1, 2.0, 0.0], 2: [2, 4.0, 1.0]}


def test_a_grade_marks_its_stages_in_order_only_when_asked(tmp_path):
    """``AUTOGRADER_TIMELINE`` (core/timeline.py): the command line and its trusted process
    mark each stage, in the order they happen; grade_timeline.py reads the file."""
    import os

    from conftest import SOLUTIONS, grade

    path = tmp_path / "grade.timeline"
    graded = grade(SOLUTIONS, "--skill", "qkv", env={**os.environ, "AUTOGRADER_TIMELINE": str(path), "AUTOGRADER_WARM": "0"})
    assert graded.rc == 0, graded.stderr
    bench = _module("grade_timeline")
    stages = [stage for stage, _offset in bench.stages(bench.parse(path.read_text(encoding="utf-8")))]
    expected = [
        "command line: started",
        "trusted: started",
        "trusted: manifest read",
        "trusted: tests collected",
        "trusted: tests done",
        "command line: run ended",
        "command line: done",
    ]
    assert [stage for stage in stages if stage in expected] == expected, stages
    skills = [n for n, stage in enumerate(stages) if stage.startswith("trusted: skill of")]  # two trusted processes only
    assert all(stages.index("trusted: tests collected") < n < stages.index("trusted: tests done") for n in skills)
    rows = bench.table([bench.stages(bench.parse(path.read_text(encoding="utf-8")))])
    assert [row[0] for row in rows][0] == "command line: started" and all(row[1] >= 0 for row in rows)
    quiet = grade(SOLUTIONS, "--skill", "qkv", env={**os.environ, "AUTOGRADER_WARM": "0"})
    assert quiet.rc == 0 and not list(tmp_path.glob("*.timeline"))[1:]  # nothing else written without it


def test_ci_jobs_times_each_job_the_workflow_runs_and_fails_on_a_failed_or_long_one():
    bench = _module("ci_jobs")
    run = "\n".join(
        str(step.get("run", ""))
        for job in bench.yaml.safe_load(bench.WORKFLOW.read_text())["jobs"].values()
        for step in job["steps"]
    )
    names = [name for name, _ in bench.jobs()]
    assert names[0] == "make test" and len(names) >= 3, names
    assert "make test" in run and "make test-slow SPLIT=${{ matrix.part }}/3" in run
    assert all(command[:2] == ["make", "test-slow"] for _, command in bench.jobs()[1:])
    assert bench.verdict([("make test", 0, 200.0), ("part 1", 0, 290.0)]) == (
        ["a push waits for the longest job: 290 s (target ≤ 300 s): met"],
        0,
    )
    assert bench.verdict([("make test", 0, 200.0), ("part 1", 0, 301.0)])[1] == 1
    assert bench.verdict([("make test", 2, 100.0)]) == (
        ["a push waits for the longest job: 100 s (target ≤ 300 s): met", "failed: make test"],
        1,
    )
    assert bench.verdict([(".ci/run", 0, 500.0)], serial=True)[1] == 0  # printed, not a target
