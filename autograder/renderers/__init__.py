"""Renderers: each turns the same ``Results`` (built from the pytest-json-report) into one
output format, as a string. None of them grades anything, reads a file or writes one: the
caller writes (``autograder.cli``). ``RENDERERS`` is the one list of formats — the
terminal's coloured view is the ``text`` format with a ``Style``."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console

from ..config import Config
from ..core.escape import inert_lines
from ..core.results import Results, dumps
from . import github, gradescope, markdown, text


@dataclass(frozen=True)
class Style:
    """How the text format looks: plain for files (the default: 80 columns, as a CI log or a
    terminal is read; blind tester R-BL found `--output FILE` at 110), or as on the terminal
    (or pipe) stdout is: rich's colour system there (e.g. "truecolor") and its width."""

    color_system: str | None = None
    width: int = 80
    terminal: bool = False


def _text(results: Results, config: Config | None, style: Style) -> str:
    buffer = io.StringIO()
    text.render(
        results,
        Console(
            file=buffer,
            width=style.width,
            color_system=style.color_system,
            force_terminal=style.terminal,
            emoji=False,
            highlight=False,
        ),
    )
    return inert_lines(buffer.getvalue())


def _gradescope(results: Results, config: Config | None, style: Style) -> str:
    visibility = config.gradescope_visibility if config else {"visible": "visible", "hidden": "after_due_date"}
    return gradescope.render(results, visibility)


RENDERERS: dict[str, Callable[[Results, Config | None, Style], str]] = {
    "text": _text,
    "json": lambda results, config, style: dumps(results.to_dict()),
    "gradescope": _gradescope,
    # also printed to stdout (`--format markdown`), where a job log reads `::` lines as commands
    "markdown": lambda results, config, style: inert_lines(markdown.render(results)),
    "github": lambda results, config, style: github.render(results),
}
FORMATS = tuple(RENDERERS)


def render(results: Results, fmt: str, config: Config | None, *, style: Style = Style()) -> str:
    """The output as a string (text: plain, no colour, unless ``style`` says otherwise)."""
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}") from None
    return renderer(results, config, style)
