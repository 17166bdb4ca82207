"""Instructors' commands (``python -m autograder <command>``):

    stubs     [--check]                      write exercises/ from solutions/ (nbgrader's ClearSolutions)
    snapshots [--check]                      write the visible suites' reference snapshots
    reference-cpu [--check]                  write each skill's reference CPU table (the CPU-time limits' source)
    audit     [DIR]                          leak audit of a student tree (default: one built afresh); exit 1 on any finding
    release   --out dist --version X.Y.Z     build dist/: student tree, Gradescope zip, nbgrader course, MANIFEST.json
    nbgrader-course DIR [--from dist/nbgrader]   create or update the live nbgrader course outside dist/ (state kept)

Exit status: 0 done / nothing stale / no finding; 1 something is stale, a finding, or a
build step failed (each problem on one line, naming the file); 2 usage or configuration error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...commands import Command, default_config
from ...config import ConfigError, load

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def _stubs_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every file that differs")
    s.add_argument("--config", default=None)


def _snapshots_arguments(n: argparse.ArgumentParser) -> None:
    n.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every stale file")
    n.add_argument("--skill", action="append", default=None, metavar="NAME", help="only this skill (repeatable)")
    n.add_argument("--config", default=None)


def _audit_arguments(a: argparse.ArgumentParser) -> None:
    a.add_argument(
        "tree",
        nargs="?",
        default=None,
        help="the student tree, e.g. dist/student (default: build one afresh in a temporary folder)",
    )
    a.add_argument("--config", default=None)


def _release_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--out", default="dist", help="output folder (default: dist); replaced")
    r.add_argument("--version", required=True, help="release version, e.g. 1.0.0")
    r.add_argument("--config", default=None)


def _course_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument("course", help="the course folder, e.g. ../attention-course (created when missing; its state is kept)")
    c.add_argument(
        "--from", dest="source", default="dist/nbgrader", help="the release's nbgrader folder (default: dist/nbgrader)"
    )
    c.add_argument("--config", default=None)


def _with_config(run):
    """``run(args, config)`` as a command: grading.toml read first (a usage error when it is wrong)."""

    def command(args: argparse.Namespace) -> int:
        try:
            config = load(args.config or default_config())
        except ConfigError as exc:
            print(f"autograder: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return run(args, config)

    return command


def _unknown_skill(args: argparse.Namespace, config) -> bool:
    """True (and said) when ``--skill`` names a skill grading.toml lacks."""
    try:
        config.select(args.skill)
    except ConfigError as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return True
    return False


def snapshots_main(args: argparse.Namespace, config) -> int:
    from . import snapshots

    if _unknown_skill(args, config):
        return EXIT_USAGE

    if args.check:
        problems = snapshots.stale(config, config.root, args.skill)
        for p in problems:
            print(p, file=sys.stderr)
        return EXIT_FAIL if problems else EXIT_OK
    for path in snapshots.write(config, args.skill):
        print(f"wrote {path.relative_to(config.root)}")
    return EXIT_OK


def reference_cpu_main(args: argparse.Namespace, config) -> int:
    from . import reference_cpu

    if _unknown_skill(args, config):
        return EXIT_USAGE

    try:
        if args.check:
            problems = reference_cpu.stale(config, args.skill)
            for p in problems:
                print(p, file=sys.stderr)
            return EXIT_FAIL if problems else EXIT_OK
        for path in reference_cpu.write(config, args.skill):
            print(f"wrote {path.relative_to(config.root)}")
    except RuntimeError as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


def stubs_main(args: argparse.Namespace, config) -> int:
    from . import stubs

    try:
        if args.check:
            problems = stubs.check(config)
            for p in problems:
                print(p, file=sys.stderr)
            return EXIT_FAIL if problems else EXIT_OK
        for path in stubs.write(config):
            print(f"wrote {path.relative_to(config.root)}")
    except stubs.MarkerError as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


def audit_main(args: argparse.Namespace, config) -> int:
    import tempfile

    from . import audit, student
    from .context import ReleaseContext

    with tempfile.TemporaryDirectory(prefix="autograder-audit-") as tmp:
        tree = Path(args.tree) if args.tree else Path(tmp) / "student"
        if args.tree is None:  # what `make release` would ship now
            student.build(ReleaseContext(config.root, config, Path(tmp), "0.0.0-audit", "audit", "audit"))
        findings = audit.audit(tree, config)
    for f in findings:
        print(f, file=sys.stderr)
    print(f"leak audit of {args.tree or 'a freshly built student tree'}: {len(findings)} finding(s)", file=sys.stderr)
    return EXIT_FAIL if findings else EXIT_OK


def course_main(args: argparse.Namespace, config) -> int:
    from . import course_dir

    try:
        for line in course_dir.update(Path(args.source), Path(args.course)):
            print(f"nbgrader-course: {line}")
    except course_dir.CourseDirError as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return EXIT_FAIL
    print(f"nbgrader-course: run nbgrader inside {args.course} (never inside dist/, which the next release replaces)")
    return EXIT_OK


def release_main(args: argparse.Namespace, config) -> int:
    from . import build

    return build.main(config, Path(args.out), args.version)


COMMANDS = (
    Command("release", "instructors: build dist/ (student, bundle, nbgrader)", _release_arguments, _with_config(release_main)),
    Command("stubs", "instructors: write exercises/ from solutions/", _stubs_arguments, _with_config(stubs_main)),
    Command(
        "snapshots", "instructors: rewrite the visible suites' snapshots", _snapshots_arguments, _with_config(snapshots_main)
    ),
    Command(
        "reference-cpu",
        "instructors: measure the reference's CPU time per skill",
        _snapshots_arguments,
        _with_config(reference_cpu_main),
    ),
    Command("audit", "instructors: leak audit of a student tree", _audit_arguments, _with_config(audit_main)),
    Command(
        "nbgrader-course", "instructors: create or update the live nbgrader course", _course_arguments, _with_config(course_main)
    ),
)
