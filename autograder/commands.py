"""What every ``python -m autograder`` subcommand is made of, below the modules that define them
(``autograder.cli`` for the students' commands, ``autograder.instructor.*.cli`` for the
instructors'), so that none of them imports another to get it:

- :class:`Command`: one subcommand — its name, its one-line help, how it adds its arguments,
  what runs it (it returns the exit status);
- :class:`Parser`: the argument parser every command uses (a usage error is one line and exit 2);
- :func:`build_parser`: ``python -m autograder`` with the commands given, in that order;
- :func:`default_config`: ``grading.toml`` of the folder the command runs in, else of this checkout.

Imports nothing of the grader (``--help`` and the start of ``grade`` stay cheap).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

PROG = "python -m autograder"
EXIT_USAGE = 2


@dataclass(frozen=True)
class Command:
    """A subcommand. A module that defines some lists them in a module-level ``COMMANDS`` tuple
    (``autograder.cli`` collects them; nothing is registered as a side effect of an import)."""

    name: str
    help: str  # one line in `python -m autograder --help` (at most 54 characters: one line at 80 columns)
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]  # the exit status
    description: str | None = None  # `python -m autograder NAME --help` (default: none, as argparse)


class Parser(argparse.ArgumentParser):
    """An error is one line naming the help to read, and exit 2 — no usage dump."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands: dict[str, argparse.ArgumentParser] = {}  # build_parser's, by name

    def error(self, message: str) -> None:
        print(f"autograder: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """An argument no command knows is reported by the command's own parser (argparse's
        own would report it as the top level's, and point at the wrong `--help`)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.subcommands.get(getattr(parsed, "command", None), self).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


class _Formatter(argparse.HelpFormatter):
    """Each command's help beside its name, on one line (argparse measures the commands' names
    without the indent they are shown with, and the longest one got a line of its own).

    ``max_help_position`` cannot do this on Python 3.11: argparse places help at
    ``min(longest invocation + 2, max_help_position)``, and the longest invocation is the one
    measured without the indent, so ``nbgrader-course`` still wraps. Hence the one override of
    argparse internals (``_iter_indented_subactions``, ``_action_max_length``), which
    tests/grader/test_cli.py checks (every command's help on its own line)."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if action.help is not argparse.SUPPRESS:
            for sub in self._iter_indented_subactions(action):  # indented while this iterates
                self._action_max_length = max(
                    self._action_max_length, len(self._format_action_invocation(sub)) + self._current_indent
                )


def build_parser(commands: Iterable[Command], description: str) -> Parser:
    """``python -m autograder`` with one subparser per command (``args.command`` names it)."""
    parser = Parser(prog=PROG, description=description, formatter_class=_Formatter)
    sub = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    for command in commands:
        parser.subcommands[command.name] = sub.add_parser(command.name, help=command.help, description=command.description)
        command.add_arguments(parser.subcommands[command.name])
    return parser


def default_config() -> Path:
    cwd = Path.cwd() / "grading.toml"
    return cwd if cwd.is_file() else Path(__file__).resolve().parent.parent / "grading.toml"
