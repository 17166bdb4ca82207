"""``python -m autograder batch SUBMISSIONS --out DIR [--jobs N] [--force] [--seed N] [--skill NAME]...``

Exit status: 0 when every student has a result (whatever the scores; a student whose grading
broke has status ``error`` in the gradebook and the reason in their results); 2 for a usage
or configuration error (and a ``--merge`` missing students or mixing course keys); 3 when
``--roster`` leaves a submission matched to nobody (the LMS files then leave the missing
students blank, never 0; ``--accept-unmatched`` accepts it); 130 when interrupted by Ctrl-C or SIGTERM (finished results and the
gradebook are kept: run the same command again to go on).
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape as rich_escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ...commands import Command, default_config
from ...config import ConfigError, load
from ...core import escape
from ...runner import seeding
from . import shards
from .run import Options, default_jobs, finish, run, seeds_note, wanted
from .students import BatchInputError, discover

EXIT_OK, EXIT_USAGE, EXIT_UNMATCHED, EXIT_INTERRUPTED = 0, 2, 3, 130


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "submissions", help="folder with one subfolder or .zip per student, or a Gradescope 'Export Submissions' folder"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="where gradebook.csv, summary.md and DIR/<student>/ go")
    p.add_argument("--jobs", type=int, default=None, metavar="N", help="students graded at once (default: number of cores)")
    p.add_argument("--force", action="store_true", help="regrade students that already have a finished result")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for every student (default: [grader] seed — derived from each submission's files)",
    )
    p.add_argument(
        "--seed-key-file",
        metavar="FILE",
        default=None,
        help="the course's seed key, so that every score matches the Gradescope bundle's (default: the key "
        "`make release` created, $AUTOGRADER_SEED_KEY_FILE or ~/.config/attention-autograder/<[course] id>.seed.key, "
        "when it exists)",
    )
    p.add_argument(
        "--roster",
        metavar="CSV",
        default=None,
        help="the class list (columns id, and any of name, email, login, github, folder, section): writes OUT/lms/canvas.csv, "
        "grades.csv (one row per student, missing ones too) and unmatched.csv",
    )
    p.add_argument(
        "--accept-unmatched",
        action="store_true",
        help="with --roster: give missing roster students 0 and exit 0 even while some submission matches no roster row "
        "(by default their LMS cells stay blank and the exit status is 3)",
    )
    p.add_argument("--assignment-name", metavar="TITLE", default=None, help="the LMS gradebook column (default: the course name)")
    p.add_argument(
        "--shard",
        metavar="K/N",
        default=None,
        help=(
            "grade only the K-th of N disjoint parts of the class (a CI matrix job); `--shard slurm`: this Slurm array "
            "task's part, from SLURM_ARRAY_TASK_ID/_MIN/_COUNT (0- or 1-based arrays); merge them with --merge"
        ),
    )
    p.add_argument(
        "--merge",
        nargs="+",
        metavar="DIR",
        default=None,
        help="grade nothing: build OUT from the --out folders of the shards, as one run over the whole class would",
    )
    p.add_argument(
        "--assignment",
        metavar="NAME",
        default=None,
        help="grade as that assignment's Gradescope bundle does (its skills, its points; [release.assignments])",
    )
    p.add_argument("--skill", action="append", default=[], metavar="NAME", help="grade only this skill (repeatable)")
    p.add_argument("--config", metavar="FILE", default=None, help="grading config (default: grading.toml of this repository)")
    p.add_argument("--no-progress", action="store_true", help="no live progress bar")
    p.add_argument(
        "--no-preload",
        action="store_true",
        help="start a fresh Python per student instead of forking a preloaded one (slower; for comparison)",
    )


class BatchProgress:
    def __init__(self, console: Console, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled
        self.progress = Progress(
            TextColumn("[bold]batch[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self.task = None
        self.counts = {"complete": 0, "error": 0, "skipped": 0}

    def begin(self, total: int, skipped: int) -> None:
        self.counts["skipped"] = skipped
        if self.enabled:
            self.progress.start()
            self.task = self.progress.add_task(self._description(), total=total, completed=skipped)

    def _description(self) -> str:
        c = self.counts
        return f"{c['complete']} graded · {c['error']} errors · {c['skipped']} already done"

    def advance(self, student, status: str) -> None:
        self.counts["complete" if status == "complete" else "error"] += 1
        if self.enabled and self.task is not None:
            self.progress.update(self.task, advance=1, description=self._description())

    def note(self, text: str) -> None:
        self.console.print(rich_escape(escape.one_line(text, None)), highlight=False, soft_wrap=True)

    def stop(self) -> None:
        if self.enabled:
            self.progress.stop()


def _terminate(_signum, _frame) -> None:
    raise KeyboardInterrupt


def roster_status(summary, options: Options, out: Console) -> int:
    """The roster join's counts on the terminal; ``EXIT_UNMATCHED`` while work matches nobody."""
    joined = getattr(summary, "roster", None) if summary is not None else None
    if joined is None or options.roster is None:
        return EXIT_OK
    out.print(joined.counts(options.roster), markup=False)
    out.print(f"→ {options.out / 'lms'}", markup=False, soft_wrap=True)
    open_work = joined.open_work()
    if not open_work:
        return EXIT_OK
    missing = len(joined.missing(options.roster))
    shown = ", ".join(repr(m.folder or row.student.key) for row, m, _why in open_work[:5]) + (" …" if len(open_work) > 5 else "")
    if options.accept_unmatched:
        print(
            f"autograder: {len(open_work)} submission(s) match no roster row ({shown}); --accept-unmatched: "
            f"the {missing} missing roster student(s) get 0",
            file=sys.stderr,
        )
        return EXIT_OK
    print(
        f"autograder: {len(open_work)} submission(s) match no roster row ({shown}) — the {missing} missing roster "
        f"student(s) are left blank, not 0, in {options.out / 'lms'}/canvas.csv and grades.csv. Add a `folder` "
        f"column to the roster ({options.out / 'lms' / 'unmatched.csv'} names each folder), or pass "
        "--accept-unmatched to give them 0.",
        file=sys.stderr,
    )
    return EXIT_UNMATCHED


def _merge(config, students, options: Options, parts: list[Path], out: Console, err: Console) -> int:
    from .report import print_summary

    ident, wants = wanted(config, students, options)
    try:
        notes = shards.merge(parts, options.out, students, wants, seeding.key_id(options.seed_key_file), ident.suite or "")
    except shards.ShardError as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for note in notes:
        err.print(rich_escape(escape.one_line(f"autograder: {note}", None)), highlight=False, soft_wrap=True)
    summary = finish(config, students, options, wants, ident, None)
    print_summary(out, summary)
    out.print(f"merged {len(parts)} shard(s): all {len(students)} student(s)", markup=False)
    for path in (options.out / "gradebook.csv", options.out / "summary.md"):
        out.print(f"→ {path}", markup=False, soft_wrap=True)
    return roster_status(summary, options, out)


class _Usage(Exception):
    """A usage error: the message after ``autograder: ``; the command exits EXIT_USAGE."""


def main(args: argparse.Namespace) -> int:
    """``autograder batch``: read the inputs, grade the class, report — each a step below."""
    err = Console(stderr=True)
    # tables are not cut at 80 columns when the output goes to a file or a CI log
    out = Console(highlight=False)
    try:
        config, students, options = _inputs(args, err)
        if args.merge:
            return _merge(config, students, options, [Path(p) for p in args.merge], out, err)
        if args.shard:
            students = _shard(args.shard, students, options, err)
    except _Usage as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    progress = BatchProgress(err, enabled=not args.no_progress and err.is_terminal)
    signal.signal(signal.SIGTERM, _terminate)  # like Ctrl-C: keep what is finished, rewrite the gradebook
    try:
        outcome = run(config, students, options, progress)
    except KeyboardInterrupt:
        progress.stop()
        print(
            "autograder: interrupted — finished results are kept; run the same command again to grade the rest", file=sys.stderr
        )
        return EXIT_INTERRUPTED
    except OSError as exc:
        progress.stop()
        print(f"autograder: --out {options.out}: {exc.strerror or exc} — choose a folder you can write", file=sys.stderr)
        return EXIT_USAGE
    progress.stop()
    return _report(outcome, options, out)


def _inputs(args: argparse.Namespace, err: Console) -> tuple:
    """(config, students, options) from the command line, each input checked (``_Usage``)."""
    if args.jobs is not None and args.jobs < 1:
        raise _Usage("--jobs must be at least 1")
    try:
        config = load(args.config or default_config()).for_assignment(args.assignment).select(args.skill or None)
    except ConfigError as exc:
        raise _Usage(f"configuration error: {exc}") from None
    key_file = _seed_key_file(args, config)
    roster = _roster(args, err)
    submissions = Path(args.submissions)
    out_dir = Path(args.out)
    try:
        students, notes = discover(submissions)
    except BatchInputError as exc:
        raise _Usage(str(exc)) from None
    if out_dir.resolve() == submissions.resolve() or submissions.resolve() in out_dir.resolve().parents:
        raise _Usage(f"--out {out_dir}: is inside SUBMISSIONS — choose a folder outside it")
    for note in notes:
        err.print(rich_escape(escape.one_line(f"autograder: {note}", None)), highlight=False, soft_wrap=True)
    options = Options(
        submissions=submissions,
        out=out_dir,
        jobs=args.jobs or default_jobs(),
        force=args.force,
        seed=args.seed,
        skills=list(args.skill),
        preload=not args.no_preload,
        seed_key_file=key_file,
        roster=roster,
        assignment=args.assignment_name or "",
        accept_unmatched=args.accept_unmatched,
    )
    err.print(rich_escape(f"autograder: {seeds_note(options)}"), highlight=False)
    if args.merge and args.shard:
        raise _Usage("--merge and --shard: merge the shards in a run of its own, without --shard")
    return config, students, options


def _seed_key_file(args: argparse.Namespace, config) -> Path | None:
    """The course key to seed with: --seed-key-file, else this machine's course key if any."""
    key_file = Path(args.seed_key_file) if args.seed_key_file else seeding.course_key_path(seeding.key_name(config))
    if args.seed_key_file is None and not key_file.is_file():
        return None  # no course key on this machine: the summary says the scores may differ from Gradescope's
    try:
        seeding.load_key(seeding.key_env(key_file))
    except seeding.SeedKeyError as exc:
        raise _Usage(f"--seed-key-file: {exc}") from None
    return key_file


def _roster(args: argparse.Namespace, err: Console):
    """--roster, read (its notes printed), or None."""
    if not args.roster:
        return None
    from .lms import RosterError, load_roster

    roster_notes: list[str] = []
    try:
        roster = load_roster(Path(args.roster), roster_notes)
    except RosterError as exc:
        raise _Usage(f"--roster {exc}") from None
    for note in roster_notes:
        err.print(rich_escape(escape.one_line(f"autograder: --roster {note}", None)), highlight=False, soft_wrap=True)
    return roster


def _shard(spec: str, students: list, options: Options, err: Console) -> list:
    """The students of shard K/N (``options.shard`` set)."""
    try:
        shard = shards.parse(spec)
    except shards.ShardError as exc:
        raise _Usage(str(exc)) from None
    students = shards.select(students, shard)
    options.shard = shard
    err.print(
        rich_escape(
            f"autograder: shard {shard[0]}/{shard[1]}: {len(students)} student(s); merge the shards' --out folders with --merge"
        ),
        highlight=False,
    )
    return students


def _report(outcome, options: Options, out: Console) -> int:
    """The class summary, the run's figures and where the files are; the exit status."""
    out_dir = options.out
    summary = outcome.summary
    if summary is not None:
        from .report import print_summary

        print_summary(out, summary)
    graded_rate = outcome.graded / outcome.seconds if outcome.seconds > 0 and outcome.graded else 0.0
    out.print(
        f"{outcome.graded} graded, {outcome.skipped} already done (kept), {summary.errors if summary else 0} with status error"
        f" — {outcome.seconds:.1f} s ({graded_rate:.2f} students/s, --jobs {options.jobs})"
        + (f"; {outcome.fallbacks} started without the preloaded process" if outcome.fallbacks else ""),
        markup=False,
    )
    for path in (out_dir / "gradebook.csv", out_dir / "summary.md", f"{out_dir}/<student>/results.json + feedback.md"):
        out.print(f"→ {path}", markup=False, soft_wrap=True)  # a path whole on its line, never folded
    if outcome.interrupted:
        print(
            "autograder: interrupted — finished results are kept; run the same command again to grade the rest", file=sys.stderr
        )
        return EXIT_INTERRUPTED
    return roster_status(summary, options, out)


COMMANDS = (
    Command(
        "batch",
        "instructors: grade a class (gradebook.csv, summary.md)",
        add_arguments,
        main,
        description="Grade a whole class: one subfolder or .zip per student, or a Gradescope export.",
    ),
)
