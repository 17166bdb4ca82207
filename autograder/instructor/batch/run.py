"""Grade a class: each student exactly as ``python -m autograder grade`` would, up to
``--jobs`` at once, each forked from the batch's one preloaded process.

Per student (a worker thread; the grading itself runs in the student's own forked pytest
process and its sandbox workers, never here):

1. find the modules in the student's folder or zip (app/upload.py rules; a zip is read,
   never extracted blindly) — a submission that cannot be graded (no modules; an encrypted,
   damaged or truncated zip) gets an error result that says why, like a single grade of it;
2. ``runner.grade.grade`` with the same config, the same seed rule (``--seed`` or derived
   from the files) and the preloaded launcher: the same run a single grade makes;
3. write ``DIR/<student>/`` atomically: the old ``results.json`` is removed first, then
   ``batch.json`` (what was graded: fingerprint of the submission, suite hash, options),
   ``feedback.md`` and, last, ``results.json`` — a student is done exactly when
   ``results.json`` is there and ``batch.json`` matches.

Resume: a student whose finished result matches the current submission fingerprint (exactly
what a grade reads: students.fingerprint), suite hash, ``--seed`` and ``--skill`` is skipped
unless ``--force``. Should grading one student fail inside the grader, that student gets an
error result saying so (marked ``retry``: the next run grades them again) and the batch goes on. Ctrl-C stops starting new
students, kills the running ones' processes, writes nothing for them, and rewrites the
gradebook from what is on disk.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ...app.upload import UploadError
from ...config import Config
from ...core import escape
from ...core import results as results_mod
from ...renderers import render
from ...runner import cpu_limits, identity, scoring, seeding
from ...runner.grade import GradeRequest, grade, preload_modules
from ...runner.process.launch import FRESH, Launcher
from ...sandbox.tree import remove_tree
from . import changes, items, plots, report, similarity
from .students import Student, fingerprint, locate

BATCH_SCHEMA = "attention-autograder/batch@1"


@dataclass
class Options:
    submissions: Path
    out: Path
    jobs: int
    force: bool = False
    seed: int | None = None
    skills: list[str] = field(default_factory=list)
    preload: bool = True
    seed_key_file: Path | None = None  # the course key: the same seeds as the Gradescope bundle
    roster: list | None = None  # lms.Person rows (--roster): LMS exports in OUT/lms/
    assignment: str = ""  # the LMS column title (--assignment-name)
    shard: tuple[int, int] | None = None  # --shard K/N: OUT/shard.json records it for --merge
    accept_unmatched: bool = False  # --accept-unmatched: 0 for missing roster students even while work matches nobody


def seeds_note(options: Options) -> str:
    """What the summary says about the seeds: whether scores can match the Gradescope bundle's."""
    if options.seed is not None:
        return (
            f"Seed {options.seed} for every student (--seed): inputs differ from the Gradescope bundle's, so a score "
            "that depends on them may too."
        )
    if options.seed_key_file is not None:
        return (
            f"Seeds keyed with the course key `{options.seed_key_file.name}` (key id {seeding.key_id(options.seed_key_file)}): "
            "the same inputs, and so the same scores, as the Gradescope bundle released with that key."
        )
    return (
        "⚠ Graded without the course key (the public local key): these scores will not match Gradescope's where "
        "a score depends on the random inputs. Regrade with --seed-key-file (the key `make release` created; "
        "see autograder/instructor/release/seedkey.py)."
    )


@dataclass
class Outcome:
    graded: int = 0
    skipped: int = 0
    interrupted: bool = False
    seconds: float = 0.0
    preload_seconds: float = 0.0
    fallbacks: int = 0
    summary: report.ClassSummary | None = None
    per_student: dict[str, float] = field(default_factory=dict)


def expected_meta(student: Student, options: Options, suite: str, config: Config, key: str = "public-default") -> dict:
    return {
        "schema": BATCH_SCHEMA,
        "fingerprint": fingerprint(student, config),
        "suite_hash": suite,
        "seed_option": options.seed,
        "seed_key": key,
        "skills": sorted(options.skills),
    }


def is_done(folder: Path, student: Student, want: dict) -> bool:
    """A finished result of these files and options — not one the grader failed to make (``retry``)."""
    results, meta = report.load_row(folder)
    return results is not None and not meta.get("retry") and all(meta.get(k) == v for k, v in want.items())


def _error_results(config: Config, student: Student, message: str) -> results_mod.Results:
    return scoring.error_result(config, message, submission=student.source.name)


def _grade_one(
    config: Config,
    student: Student,
    options: Options,
    launcher: Launcher,
    timing: dict,
    speed: cpu_limits.MachineSpeed | None = None,
) -> tuple[results_mod.Results, str]:
    """(results, where the modules were found); ``timing`` gets when the run's phases ended."""
    work = Path(tempfile.mkdtemp(prefix="autograder-batch-"))
    try:
        try:
            folder, note = locate(student, config, work)
        except UploadError as exc:
            # the student's problem (no modules, an encrypted or damaged zip…): their row says why
            return _error_results(config, student, str(exc) if student.is_zip else f"{student.source.name}: {exc}"), ""
        started = time.monotonic()

        def on_event(event: dict) -> None:
            if event.get("event") in ("collected", "done"):
                timing[f"{event['event']}_s"] = round(time.monotonic() - started, 3)

        request = GradeRequest(
            config,
            str(folder),
            seed=options.seed,
            protect=[options.out.resolve(), *getattr(launcher, "protect", ())],  # the preloaded launcher's bytecode
            launcher=launcher,
            on_event=on_event,
            seed_key_file=options.seed_key_file,
            calibration_s=speed.calibration_s() if speed is not None else None,
        )
        results = grade(request)
        timing["graded_s"] = round(time.monotonic() - started, 3)
        if student.is_zip:  # graded from a temporary copy: name the zip, not a random /tmp path
            results = _relabel(results, folder, student.source.name)
        return results, note
    finally:
        remove_tree(work)  # sandbox/tree.py: whatever the run left there, any depth


def _relabel(results: results_mod.Results, folder: Path, label: str) -> results_mod.Results:
    """``results`` with every mention of ``folder`` (a zip's temporary copy, in the submission's
    paths, the modules' display paths and any message) said as ``label`` (the zip's name):
    the same results on every run, and no machine's temporary folder in a student's file."""
    text = json.dumps(results.to_dict(), ensure_ascii=False)
    for prefix in {str(folder.resolve()), str(folder)}:
        text = text.replace(json.dumps(prefix, ensure_ascii=False)[1:-1], json.dumps(label, ensure_ascii=False)[1:-1])
    return results_mod.from_dict(json.loads(text))


def _failed(exc: BaseException) -> str:
    from ...renderers.common import clean

    return (
        f"the grader failed on this submission ({type(exc).__name__}: {clean(exc, 160)}) — not the student's fault; "
        "run the batch again to retry it, and tell the autograder's maintainers if it persists"
    )


def _write_student(folder: Path, results: results_mod.Results, meta: dict, config: Config) -> None:
    folder.mkdir(exist_ok=True)
    try:
        (folder / "results.json").unlink()
    except FileNotFoundError:
        pass
    shown = results.public()
    results_mod.write_atomic(folder / "batch.json", json.dumps(meta, indent=2, ensure_ascii=True) + "\n")
    results_mod.write_atomic(folder / "feedback.md", render(shown, "markdown", config))
    results_mod.write_atomic(folder / "results.json", render(shown, "json", config))


def per_student(config: Config, jobs: int) -> Config:
    """The config each student is graded with: the same, except that students graded side
    by side that already fill the cores get one trusted process each (``[limits]
    trusted_processes``: a second, runner/process/split.py, then only adds a fork and more processes
    competing for the same cores — measured with --jobs 2 on 2 cores: 13% less CPU per
    student). A student's results do not depend on it (tests/grader/test_batch.py)."""
    from dataclasses import replace

    from ...runner.process.split import usable_cpus

    processes = max(1, min(config.limits.trusted_processes, usable_cpus() // max(1, jobs)))
    if processes == config.limits.trusted_processes:
        return config
    return replace(config, limits=replace(config.limits, trusted_processes=processes))


def run(config: Config, students: list[Student], options: Options, progress=None) -> Outcome:
    """Grade ``students`` into ``options.out``; always leaves gradebook.csv and summary.md."""
    outcome = Outcome()
    started = time.monotonic()
    ident, wants, todo = _plan(config, students, options, outcome)
    previous = changes.snapshot(options.out, [s for s, _ in todo])  # what a regrade replaces, to report what changed
    if progress is not None:
        progress.begin(len(students), outcome.skipped)
    stop = threading.Event()
    preloaded = None
    try:
        if todo and options.preload:
            preloaded = _preloaded(config, options, outcome, progress)
        launcher = preloaded if preloaded is not None else FRESH
        graded = per_student(config, options.jobs)
        speed = cpu_limits.MachineSpeed()  # the CPU limits' calibration, shared by the class's runs

        def task(student: Student, want: dict) -> str:
            return _grade_student(config, graded, student, want, options, launcher, preloaded, stop, outcome, speed)

        _grade_all(todo, task, options, outcome, progress, preloaded, stop)
    finally:
        # an interrupt from here on waits for the gradebook: one while the preloaded process
        # stopped skipped it, and the old gradebook stayed (blind red-team tester R-BZ)
        stopped, changed = False, None
        try:
            with interrupts_held():
                if preloaded is not None:
                    outcome.fallbacks = preloaded.fallbacks
                    preloaded.close()
                outcome.seconds = time.monotonic() - started
                changed = changes.compare(previous, options.out, [s for s, _ in todo])
        except KeyboardInterrupt:
            stopped = True
        kept = [f"{outcome.skipped} student(s)' results kept from an earlier run (same files, suites and options)."]
        # a run that graded nobody took no grading time: no "Graded in 0 s"
        seconds = outcome.seconds if todo else None
        outcome.summary = finish(
            config, students, options, wants, ident, seconds, changed, kept=kept if outcome.skipped else None
        )
        if stopped:
            raise KeyboardInterrupt
    return outcome


def _plan(config: Config, students: list[Student], options: Options, outcome: Outcome) -> tuple:
    """(the suites' identity, what each student's results must match, the students to grade
    with theirs): a student whose results already match is kept (``outcome.skipped``)."""
    options.out.mkdir(parents=True, exist_ok=True)
    ident, wants = wanted(config, students, options)
    if options.shard is not None:
        from . import shards

        shards.record(options.out, options.shard, seeding.key_id(options.seed_key_file), ident.suite or "", students)
    todo: list[tuple[Student, dict]] = []
    for student in students:
        want = wants[student.key]
        if not options.force and is_done(options.out / student.key, student, want):
            outcome.skipped += 1
        else:
            todo.append((student, want))
    return ident, wants, todo


def _preloaded(config: Config, options: Options, outcome: Outcome, progress):
    """The preloaded process the students' trusted processes fork from, or None (then each
    starts afresh, and the progress says why)."""
    from ...runner.process.preloaded_launcher import Preloaded, PreloadError

    preload = preload_modules(config)
    try:
        preloaded = Preloaded(config.root, config.suites_dir, preload, label=f"--out={options.out.resolve()}")
    except PreloadError as exc:
        if progress is not None:
            progress.note(f"{exc}; grading with a fresh process per student instead")
        return None
    outcome.preload_seconds = preloaded.started_seconds
    return preloaded


def _grade_student(
    config, graded, student: Student, want: dict, options: Options, launcher, preloaded, stop, outcome, speed=None
) -> str:
    """Grade one student and write their folder; the status, or "cancelled" (Ctrl-C)."""
    if stop.is_set():
        return "cancelled"
    t0 = time.monotonic()
    timing: dict = {}
    retry = False
    try:
        results, note = _grade_one(graded, student, options, launcher, timing, speed)
    except Exception as exc:  # a bug of ours on one submission never ends the batch
        if stop.is_set():
            return "cancelled"
        results, note, retry = _error_results(config, student, _failed(exc)), "", True
    if stop.is_set() and results.status != "complete":
        return "cancelled"  # killed by Ctrl-C: not a result
    run = preloaded.take_last_run() if preloaded is not None else None
    if run is not None and run.cpu_seconds is not None:
        timing["cpu_s"] = run.cpu_seconds
    meta = dict(
        want,
        name=student.name,
        sid=student.sid,
        source=str(student.source),
        located=note,
        seconds=round(time.monotonic() - t0, 3),
        status=results.status,
        timing=timing,
    )
    if retry:
        meta["retry"] = True  # kept in the gradebook with its reason; the next run grades it again
    _write_student(options.out / student.key, results, meta, config)
    outcome.per_student[student.key] = time.monotonic() - t0
    return results.status


def _grade_all(todo, task, options: Options, outcome: Outcome, progress, preloaded, stop) -> None:
    """Run ``task`` for every student, ``--jobs`` at once; Ctrl-C stops the running ones
    (``outcome.interrupted``) and keeps what finished."""
    with ThreadPoolExecutor(max_workers=max(1, options.jobs), thread_name_prefix="batch") as pool:
        futures: dict[Future, Student] = {pool.submit(task, s, w): s for s, w in todo}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in done:
                    status = future.result()
                    if status != "cancelled":
                        outcome.graded += 1
                        if progress is not None:
                            progress.advance(futures[future], status)
        except KeyboardInterrupt:
            outcome.interrupted = True
            stop.set()
            for future in pending:
                future.cancel()
            if preloaded is not None:
                preloaded.kill_all()
            if progress is not None:
                progress.note("interrupted: stopping the running students (finished results are kept)…")
            for future in pending:
                if not future.cancelled():
                    try:
                        if future.result() != "cancelled":
                            outcome.graded += 1
                    except Exception:
                        pass


def finish(
    config: Config,
    students: list[Student],
    options: Options,
    wants: dict[str, dict],
    ident: identity.SuiteIdentity,
    seconds: float | None,
    changed: list | None = None,
    kept: list[str] | None = None,
) -> report.ClassSummary:
    """gradebook.csv, summary.md (and the LMS files with a roster) from the students' finished
    folders in ``options.out``: what a batch, a shard and a merge of shards all end with.

    The gradebook comes first, with Ctrl-C and SIGTERM held while it is written; the class
    insights (changes.csv, items.csv, similarity/, plots/) after it, each on its own: one that
    cannot be written is named in summary.md and costs nothing else. They used to come first,
    so a similarity page whose name was too long, or an interrupt while the plots were drawn,
    left no gradebook, or the last run's (blind red-team tester R-BZ)."""
    rows = []
    for student in students:
        results, meta = report.load_row(options.out / student.key)
        if results is not None and any(meta.get(k) != v for k, v in wants[student.key].items()):
            results, meta = None, {}  # a result of older files or another suite: not this batch's
        rows.append(report.Row(student, results, meta))
    extra: list[str] = ["## This run", "", *kept, ""] if kept else []
    joined = None
    titles = {sid: s.title for sid, s in config.skills.items()}

    def outputs(lines: list[str]) -> report.ClassSummary:
        return report.write_outputs(
            options.out,
            rows,
            list(config.skills),
            titles,
            ident.suite or "",
            seconds,
            seeds=seeds_note(options),
            visible_hash=ident.visible,
            extra=lines or None,
        )

    with interrupts_held():
        if options.roster:
            from . import lms

            assignment = options.assignment or config.course
            joined = lms.write(options.out, rows, options.roster, assignment, config.total_points, options.accept_unmatched)
            extra += lms.summary_lines(options.roster, joined, options.accept_unmatched)
        summary = outputs(extra)  # the gradebook first, held with the LMS files
    insights: list[str] = []
    if changed:
        insights += _insight("changes.csv", lambda: changes.write(options.out, changed))
    insights += _insight("items.csv", lambda: items.write(options.out, rows))
    insights += _insight("similarity/", lambda: similarity.write(options.out, students, config))
    class_summary = report.summarize(rows, list(config.skills), titles)
    insights += _insight("plots/", lambda: plots.write(options.out, class_summary, items.analyse(rows), changed))
    if insights:
        with interrupts_held():
            summary = outputs(extra + insights)
    summary.roster = joined if options.roster else None
    return summary


def _insight(what: str, write) -> list[str]:
    """``write()``'s summary lines; where it fails, a line saying so (a class insight never
    costs the gradebook, which is written before it)."""
    try:
        return write()
    except Exception as exc:
        reason = escape.md_text(f"{type(exc).__name__}: {exc}", 300)
        return [f"**`{what}` was not written** ({reason}); the gradebook and every student's results are complete.", ""]


@contextmanager
def interrupts_held():
    """Ctrl-C and SIGTERM wait until the block is done, then stop the run as they would have
    (a write of the gradebook is never cut short). Only the main thread may set handlers: in
    another, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {signum: signal.signal(signum, lambda n, _frame: caught.append(n)) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if caught:
        raise KeyboardInterrupt


def wanted(config: Config, students: list[Student], options: Options) -> tuple[identity.SuiteIdentity, dict[str, dict]]:
    """The suites' identity and, per student, what a finished result of this batch records."""
    ident = identity.identify(config.selected_from or config)  # a --skill batch names the release's suites, as grade does
    key = seeding.key_id(options.seed_key_file)
    return ident, {student.key: expected_meta(student, options, ident.suite or "", config, key) for student in students}


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)
