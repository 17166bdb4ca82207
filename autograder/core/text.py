"""Text helpers every layer shares (torch-free): the first line of a message, and a test's
problem without the call it was found in."""

from __future__ import annotations

import re
from typing import Any


def first_line(text: Any, limit: int = 300) -> str:
    """The first non-blank line of ``text`` (None → ""), cut to ``limit`` characters with "…"
    (torch-free, so the CLI's side and the suites' side share it)."""
    text = "" if text is None else str(text).strip()
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


_PARTS_SUFFIX = re.compile(r"\s*\([^()]*\b(parts?|cases?|kinds?|draws?)\)\s*$")


def problem_key(summary: str | None, check: str | None) -> str:
    """A test's problem without the call it was found in or its parts count: tests that
    share it failed for the same reason."""
    return _PARTS_SUFFIX.sub("", (summary or "").removeprefix(f"{check}: " if check else ""))
