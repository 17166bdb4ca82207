"""``python -m autograder grade [SUBMISSION] [--skill NAME]... [--format F] [--output FILE] [--results FILE]``
and, in CI, ``python -m autograder ci-comment [--results FILE]`` (the one pull-request
comment, see autograder.ci).

Exit status: 0 whenever grading completed, whatever the score; 1 when the run itself broke
(a results file is still written and says why); 2 for a usage or configuration error (one
line saying what is wrong and how to fix it); 130 when interrupted. In CI (``--format
github``) one more rule makes the tick mean something: 3 when every skill was graded and
the total is below ``[ci] fail_below`` in grading.toml (default 0: never) — the job
summary, annotations and outputs are written first either way.

With ``--format github`` the CLI also appends the markdown summary to
``$GITHUB_STEP_SUMMARY`` and writes ``score``, ``max-score``, ``status`` (and the deprecated
GitHub Classroom ``result``) to ``$GITHUB_OUTPUT`` when Actions sets them (autograder.ci).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from .commands import Command, build_parser, default_config
from .config import ConfigError, load
from .core import host
from .core.host import interrupt_on_termination, unsupported_system
from .core.results import interrupted_message

#: renderers.FORMATS (tests/grader/test_writers.py checks they agree), spelt out here: the
#: renderers import rich, and that would delay the start of the grading process (_start_early)
FORMATS = ("text", "json", "gradescope", "markdown", "github")


EXIT_OK, EXIT_BROKEN, EXIT_USAGE, EXIT_BELOW_THRESHOLD, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_BROKEN_PIPE = 141  # what a shell reports for a command its pipe's reader left (128 + SIGPIPE)
DESCRIPTION = "Grade attention exercises in a sandbox."


def _grade_arguments(g: argparse.ArgumentParser) -> None:
    g.add_argument(
        "submission",
        nargs="?",
        default=None,
        help="folder with the exercise modules, directly or under exercises/ (default: exercises/)",
    )
    g.add_argument("--skill", action="append", default=[], metavar="NAME", help="grade only this skill (repeatable)")
    g.add_argument(
        "--assignment",
        metavar="NAME",
        default=None,
        help="grade as that assignment's Gradescope bundle does: its skills only ([release.assignments] in grading.toml)",
    )
    g.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    g.add_argument("--output", metavar="FILE", help="write the output to FILE (atomically) instead of stdout")
    g.add_argument(
        "--results", metavar="FILE", help="also write the JSON results to FILE (e.g. a CI artifact next to --format github)"
    )
    g.add_argument("--config", metavar="FILE", default=None, help="grading config (default: grading.toml of this repository)")
    g.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for the random test inputs (default: [grader] seed — derived from the submission's files)",
    )
    g.add_argument(
        "--seed-key-file",
        metavar="FILE",
        default=None,
        help=(
            "instructors: key the seed with the course's key (as the Gradescope bundle does; default: "
            "$AUTOGRADER_SEED_KEY_FILE, else the public local key)"
        ),
    )
    g.add_argument("--reveal-hidden", action="store_true", help="instructors: include hidden tests' details in the output")
    g.add_argument("--keep-report", metavar="FILE", help="instructors: also keep the raw pytest-json-report")
    g.add_argument("--no-progress", action="store_true", help="no live progress display")


def _ci_comment_arguments(c: argparse.ArgumentParser) -> None:
    c.add_argument(
        "--results", metavar="FILE", default="results.json", help="the JSON results of this run (grade --results FILE)"
    )


def _todo_arguments(t: argparse.ArgumentParser) -> None:
    t.add_argument("submission", nargs="?", default=None, help="folder with the exercise modules (default: exercises/)")
    t.add_argument("--config", metavar="FILE", default=None, help="grading config (default: grading.toml of this repository)")


def _config_keys_arguments(k: argparse.ArgumentParser) -> None:
    k.add_argument(
        "--write", metavar="FILE", default=None, help="rewrite FILE's list of the keys (docs/CONFIG.md) instead of printing it"
    )


def _ci_comment(args: argparse.Namespace) -> int:
    from .ci import comment_main

    return comment_main(args.results)


def _config_keys(args: argparse.Namespace) -> int:  # grading.toml's keys, from their declaration (docs/CONFIG.md lists them)
    from .config import keys_main

    return keys_main(["--write", args.write] if args.write else [])


def todo_main(args: argparse.Namespace) -> int:
    """What is left: the functions still the stub (``exercise_api.still_todo``, the grader's
    own detection — a docstring that mentions TODO is not work left), or that nothing is."""
    from .core.exercise_api import definitions, still_todo
    from .runner.submission import SubmissionDirError, resolve_root

    try:
        config = load(args.config or default_config(), check_files=False)
    except ConfigError as exc:
        print(f"autograder: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        folder = resolve_root(Path(args.submission) if args.submission else config.exercises_dir, list(config.exercise_modules))
    except SubmissionDirError as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    left = 0
    for skill in config.skills.values():
        path = folder / skill.module
        if path.is_relative_to(Path.cwd().resolve()):
            path = path.relative_to(Path.cwd().resolve())  # clickable in a terminal or editor, as grep -n would print it
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            print(f"{path}: missing or unreadable — every function of skill {skill.id} is still to do")
            left += 1
            continue
        lines = definitions(source)
        for name in still_todo(source):
            line = lines.get(name, (1, 1))[0]
            print(f"{path}:{line}: {name} — TODO({skill.id})")
            left += 1
    if left:
        print(f'{left} function(s) left. Replace each `raise NotImplementedError("TODO(…)")` with your code, then `make grade`.')
    else:
        print(f"Nothing left: every exercise function in {folder} is written. `make grade` checks them.")
    return EXIT_OK


def _check_output(path: str) -> None:
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise ConfigError(f"--output {path}: is a directory — give a file name")
    if not parent.is_dir():
        raise ConfigError(f"--output {path}: folder {parent} does not exist — create it or choose another path")
    if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ConfigError(f"--output {path}: cannot write there (permission denied) — choose another path")


def render(results, fmt: str, config, style=None) -> str:
    from .renderers import Style
    from .renderers import render as _render

    return _render(results, fmt, config, style=style or Style())


def _render_safely(results, fmt: str, config, style=None) -> str:
    """The output for ``results``; when a renderer fails on what it was given, an error
    result in the same format that says so; when even that fails, minimal JSON. Never raises."""
    try:
        return render(results, fmt, config, style)
    except Exception as exc:  # whatever went wrong, a results file is written
        message = (
            f"the {fmt} output could not be rendered ({type(exc).__name__}: {str(exc)[:200]}); score withheld — "
            "please tell your instructor"
        )
    try:
        from .runner.scoring import error_result

        return render(error_result(None, message, max_score=getattr(results, "max_score", 0.0)), fmt, None)
    except Exception:
        import json

        return json.dumps({"status": "error", "score": 0, "output": message, "message": message}, ensure_ascii=True) + "\n"


def _write(text: str, output: str | None) -> bool:
    """Write the output (stdout or ``output`` atomically). Any string can be written (text
    the encoding cannot carry is backslash-escaped); when ``output`` cannot be written, a
    fallback file in the temporary folder is, and stderr says where."""
    from .core.results import write_atomic

    if output is None:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
            return True
        except (OSError, ValueError) as exc:
            _say(f"could not write the results to stdout: {exc}")
            return False
    try:
        write_atomic(output, text)
        return True
    except Exception as exc:  # OSError, or anything else: still leave a file
        import tempfile

        fallback = Path(tempfile.gettempdir()) / f"autograder-results-{os.getpid()}{Path(output).suffix}"
        try:
            write_atomic(fallback, text)
            where = f"; the results were written to {fallback} instead"
        except Exception:
            where = ""
        print(f"autograder: could not write {output}: {getattr(exc, 'strerror', None) or exc}{where}", file=sys.stderr)
        return False


def _stdout_style():
    """The text format as stdout shows it: a terminal's colours and width, a pipe's width."""
    from rich.console import Console

    from .renderers import Style

    console = Console(highlight=False)
    return Style(color_system=console.color_system, width=console.width, terminal=console.is_terminal)


def _publish(args: argparse.Namespace, config, shown, *, stdout: bool = True) -> bool:
    """Everything a run writes, from the results it shows: ``--results`` (JSON), the
    output in ``--format`` (to ``--output``, else to stdout when ``stdout``), and with
    ``--format github`` the files Actions asks for. False when a file could not be written."""
    ok = True
    if getattr(args, "results", None) and not _write(_render_safely(shown, "json", config), args.results):
        ok = False
    if args.output or stdout:
        style = _stdout_style() if args.format == "text" and not args.output else None
        if not _write(_render_safely(shown, args.format, config, style), args.output):
            ok = False
    if args.format == "github":
        from .ci import actions_files

        fail_below = config.ci_fail_below if config is not None and not getattr(args, "skill", None) else 0.0
        for variable, path, text in actions_files(shown, fail_below=fail_below):
            try:
                with open(path, "a", encoding="utf-8", errors="backslashreplace") as fh:
                    fh.write(text)
            except OSError as exc:
                print(f"autograder: could not write ${variable} ({path}): {exc.strerror or exc}", file=sys.stderr)
    return ok


def _fail(
    args: argparse.Namespace,
    config,
    message: str,
    code: int,
    *,
    submission: str | None = None,
    kind: str = "",
    status: str = "error",
) -> int:
    """The one error path: one line on stderr, and the same files a run writes (with
    ``--output``, ``--results`` and in CI) from one error result — every test of the selected
    skills listed as not run when the config is known, a bare error result otherwise.
    Only GitHub's format also goes to stdout (the annotation is how CI shows it). ``status``:
    "interrupted" for a run that was stopped (nothing failed)."""
    from .runner import scoring

    _say(message)
    try:
        broken = scoring.error_result(config, kind + message, submission=submission or "", status=status)
    except Exception:
        broken = scoring.error_result(None, kind + message, status=status)
    _publish(args, config, broken, stdout=args.format == "github")
    return code


def _quiet_stdout() -> None:
    """stdout's reader left (a pipe into ``head``): what is still buffered goes nowhere, so
    the interpreter's own last flush raises nothing either (Python's documented recipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _say(message: str) -> None:
    """One line on stderr, whatever the message holds — or none, where stderr is gone (a
    closed terminal: EIO): what is said is also in the results a run writes."""
    line = " ".join(str(message).split()) or "error"
    try:
        print(f"autograder: {line.encode('utf-8', 'backslashreplace').decode('utf-8')}", file=sys.stderr)
    except (OSError, ValueError):
        pass


def _streams_survive_any_text() -> None:
    """Student text may hold lone surrogates or bytes the terminal's encoding lacks."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            pass


def main(argv: list[str] | None = None, early=None) -> int:
    """``early``: the launcher of the trusted pytest process ``__main__`` started before
    anything else (runner/process/early.Early), for a ``grade``; stopped here when the run
    does not take it."""
    try:
        return _main(argv, early)
    except KeyboardInterrupt as exc:  # before a command took over (its arguments being read)
        return interrupted_before_start(sys.argv[1:] if argv is None else argv, exc)
    except BrokenPipeError:  # `make todo | head`: the reader has what it wanted
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    finally:
        if early is not None:
            early.release()  # a no-op once a run took it


def _main(argv: list[str] | None, early) -> int:
    _streams_survive_any_text()
    argv = sys.argv[1:] if argv is None else argv
    commands = list(COMMANDS)
    if not (argv and argv[0] in {c.name for c in COMMANDS}):  # --help, an instructors' command or a mistake
        found = instructor_commands()
        commands += found
        if not found and argv and not argv[0].startswith("-"):
            print(
                f"autograder: `{argv[0]}` is not a command of this copy of the grader (students' copies have no instructors' "
                f"commands); its commands: {', '.join(c.name for c in COMMANDS)}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    args = build_parser(commands, DESCRIPTION).parse_args(argv, namespace=argparse.Namespace(early=early))
    return {c.name: c for c in commands}[args.command].run(args)


def grade_main(args: argparse.Namespace) -> int:
    problem = unsupported_system()
    if problem:  # native Windows (also checked by __main__, before anything is started)
        print(problem, file=sys.stderr)
        return EXIT_USAGE
    try:
        for path in (args.output, args.results):
            if path:
                _check_output(path)
    except ConfigError as exc:
        print(f"autograder: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _grade_command(args, args.early)


#: the students' commands, in the order `--help` lists them
COMMANDS = (
    Command("grade", "grade a submission", _grade_arguments, grade_main),
    Command("ci-comment", "CI: the one feedback comment on a pull request", _ci_comment_arguments, _ci_comment),
    Command("todo", "list the functions still to write (`make todo`)", _todo_arguments, todo_main),
    Command("config-keys", "grading.toml's keys as markdown (docs/CONFIG.md)", _config_keys_arguments, _config_keys),
)

#: The modules that define the instructors' commands (a ``COMMANDS`` tuple each), in the order
#: `--help` lists them. Named, and imported with importlib only when the command line needs them
#: (an instructors' command, `--help`, a mistake; never `grade`): autograder/instructor/ is a
#: layer above this module (its commands use the runner, the release builders, rich's progress
#: bars) and is left out of every student copy and Gradescope bundle, so an import statement
#: here would point upward (an import-linter layers contract would flag it) and break those copies.
INSTRUCTOR_PACKAGE = "autograder.instructor"
INSTRUCTOR_MODULES = ("autograder.instructor.batch.cli", "autograder.instructor.release.cli")


def instructor_commands() -> tuple[Command, ...]:
    """The instructors' commands; none where ``autograder/instructor/`` is not there."""
    spec = importlib.util.find_spec(INSTRUCTOR_PACKAGE)
    if spec is None or not spec.has_location:  # absent (a student copy), or a folder left without its __init__.py
        return ()
    return tuple(command for name in INSTRUCTOR_MODULES for command in importlib.import_module(name).COMMANDS)


def _start_early(config, early=None):
    """The grading run's trusted pytest process, given its suites the moment grading.toml is
    valid (checked in full first: a bad config never starts a run, and stops the early
    process wherever its imports are): the one ``early`` started, which has been importing
    pytest and torch since ``__main__`` began, or a fresh one. Its imports (torch's: seconds)
    overlap the checks of the submission and this process's own imports. None
    when that fails; the run starts its own then, and errors are reported as always."""
    try:
        from .runner.grade import start
        from .runner.process.launch import FRESH

        return start(config, early if early is not None else FRESH)
    except Exception:  # only a head start: whatever went wrong is found again below
        return None


def _warm_launcher(config, early):
    """``early``, or where ``__main__`` started none (a config outside the package's folder:
    the root was not known before it was read), this root's warm server if one is running."""
    try:
        from .runner.process import warm

        if not warm.allowed(config):  # e.g. grading.toml now says [grader] warm_idle_s = 0
            if _is_warm(early):
                early.release()  # connected before the config was read: not used
                return None
            return early
        if early is not None:
            return early
        return warm.connect(str(config.root))
    except Exception:
        return early


def _grade_command(args: argparse.Namespace, early) -> int:
    """An interrupt at any point (Ctrl-C, SIGTERM, SIGHUP) ends as one: the results say so,
    whether it came while the config was read, the submission checked or the tests ran."""
    interrupt_on_termination()
    loaded: dict = {}
    try:
        return _load_and_grade(args, early, loaded)
    except KeyboardInterrupt as exc:
        return _interrupted(args, loaded.get("config"), exc)


def _interrupted(args: argparse.Namespace, config, exc: KeyboardInterrupt, submission: str | None = None) -> int:
    return _fail(args, config, interrupted_message(exc), EXIT_INTERRUPTED, submission=submission, status="interrupted")


def interrupted_before_start(argv: list[str], exc: KeyboardInterrupt) -> int:
    """An interrupt while ``__main__`` started the run ahead or imported this module: the
    same results file and status as one a moment later, where the arguments can be read."""
    try:
        args = build_parser(list(COMMANDS), DESCRIPTION).parse_args(argv, namespace=argparse.Namespace(early=None))
    except (SystemExit, Exception):
        args = None
    if args is None or args.command != "grade":
        _say(f"{interrupted_message(exc)} before it began: nothing was graded")
        return EXIT_INTERRUPTED
    return _interrupted(args, None, exc)


def _load_and_grade(args: argparse.Namespace, early, loaded: dict) -> int:
    """``loaded``: the config, once read (an interrupt after it lists every test as not run)."""
    try:
        config = load(args.config or default_config()).for_assignment(args.assignment).select(args.skill or None)
    except ConfigError as exc:
        return _fail(args, None, str(exc), EXIT_USAGE, kind="configuration error: ")
    loaded["config"] = config
    early = _warm_launcher(config, early)
    process = _start_early(config, early)
    args.warm = _is_warm(early)
    try:
        status = _check_and_grade(args, config, process, protect=list(getattr(early, "protect", ())))
    finally:
        if process is not None:
            process.release()  # not taken by the run (an error came first): stopped and removed
        if early is not None and early is not args.early:
            early.release()  # a warm server's connection opened here: hung up
    if status != EXIT_INTERRUPTED:
        _leave_warm_server(config, early)
    return status


def _is_warm(early) -> bool:
    """Whether this grade's run is forked from a warm server (an attached preloaded launcher)."""
    from .runner.process.preloaded_launcher import Preloaded

    return isinstance(early, Preloaded)


def _leave_warm_server(config, early) -> None:
    """After an interactive grade that started its own trusted process, a warm server for the
    next one (runner/process/warm.py; ``[grader] warm_idle_s``, ``$AUTOGRADER_WARM``)."""
    try:
        from .runner.process import warm

        if not _is_warm(early) and warm.wanted(config, sys.stderr.isatty()):
            from .runner.grade import preload_modules

            if warm.start(config, preload_modules(config)) and sys.stderr.isatty():
                minutes = f"{config.warm_idle_s / 60:.3g} min"
                print(
                    f"autograder: a grading server (torch loaded, ~250 MB) now waits {minutes}\n"
                    "for your next grade, which starts faster; AUTOGRADER_WARM=0 turns it off.",
                    file=sys.stderr,
                )
    except Exception:  # only a head start for the next grade
        pass


def _check_and_grade(args: argparse.Namespace, config, process, protect: list[Path]) -> int:
    """``protect``: what the launcher adds to what no worker may read (a warm server's
    bytecode folder)."""
    submission = args.submission if args.submission is not None else str(config.exercises_dir)
    from .runner.submission import SubmissionDirError, check

    try:
        check(submission, config)
    except SubmissionDirError as exc:
        return _fail(args, config, str(exc), EXIT_USAGE, submission=submission)
    try:
        results = _grade(args, config, submission, process, protect)
        if host.RECEIVED:  # an interrupt Python dropped (raised while a finaliser ran): the run went on
            raise host.RECEIVED[0]
    except KeyboardInterrupt as exc:
        return _interrupted(args, config, exc, submission)
    except ConfigError as exc:
        return _fail(args, config, str(exc), EXIT_USAGE, submission=submission, kind="configuration error: ")
    except Exception as exc:  # a bug of ours: say so, and still leave a results file
        return _fail(
            args,
            config,
            f"the grader itself failed ({type(exc).__name__}: {str(exc)[:300]}) — not your fault; please tell your instructor",
            EXIT_BROKEN,
            submission=submission,
        )
    if not _publish(args, config, results if args.reveal_hidden else results.public()):
        return EXIT_USAGE
    if args.output:
        from rich.console import Console

        done = f"{results.score:g} / {results.max_score:g}" if results.status == "complete" else "not graded"
        try:
            Console(stderr=True).print(
                f"{results.course}: {done} → {args.output}"
                + ("" if results.status == "complete" else f" ({results.status}: {results.message})"),
                highlight=False,
                markup=False,
            )
        except (OSError, ValueError):
            pass  # a terminal that went away: the file holds the results
    if results.status == "interrupted":
        return EXIT_INTERRUPTED
    if results.status != "complete":
        return EXIT_BROKEN
    if args.format == "github" and not args.skill and results.score < config.ci_fail_below:
        print(
            f"autograder: {results.score:g} points is below [ci] fail_below = {config.ci_fail_below:g} in grading.toml",
            file=sys.stderr,
        )
        return EXIT_BELOW_THRESHOLD
    return EXIT_OK


def _grade(args: argparse.Namespace, config, submission: str, process=None, protect: list[Path] | None = None):
    from rich.console import Console

    from .runner.grade import GradeRequest, grade
    from .runner.progress import LiveProgress

    err = Console(stderr=True)
    protect = [*(protect or ()), *([Path(args.output).resolve().parent] if args.output else [])]
    show = not args.no_progress and err.is_terminal
    with LiveProgress(err, config, enabled=show, warm=getattr(args, "warm", False)) as progress:
        return grade(
            GradeRequest(
                config,
                submission,
                seed=args.seed,
                protect=protect,
                on_event=progress.update,
                keep_report=Path(args.keep_report) if args.keep_report else None,
                process=process,
                seed_key_file=Path(args.seed_key_file) if args.seed_key_file else None,
            )
        )
