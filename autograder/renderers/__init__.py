"""Renderers: each turns the same ``Results`` (built from the pytest-json-report) into
one output format. None of them grades anything."""

from __future__ import annotations

import io

from rich.console import Console

from ..config import Config
from ..results import Results, dumps
from . import github, gradescope, markdown, text

FORMATS = ("text", "json", "gradescope", "markdown", "github")


def render(results: Results, fmt: str, config: Config | None, *, width: int = 110) -> str:
    """The output as a string (text: plain, no colour — for files)."""
    if fmt == "json":
        return dumps(results.to_dict())
    if fmt == "gradescope":
        visibility = config.gradescope_visibility if config else {"visible": "visible", "hidden": "after_due_date"}
        return gradescope.render(results, visibility)
    if fmt == "markdown":
        return markdown.render(results)
    if fmt == "github":
        return github.render(results)
    if fmt == "text":
        buffer = io.StringIO()
        text.render(results, Console(file=buffer, width=width, color_system=None, force_terminal=False, emoji=False, highlight=False))
        return buffer.getvalue()
    raise ValueError(f"unknown format {fmt!r}")
