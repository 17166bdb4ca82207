"""The key list in docs/CONFIG.md (``python -m autograder config-keys``), made from :data:`KEYS`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .keys import KEPT, KEYS, LIST, NUMBER, REQUIRED, SEED, TABLE, TABLES, TEXT, WHOLE, Key

# --------------------------------------------------------------------------- the key list in docs/CONFIG.md
DOC_BEGIN = (
    "<!-- grading.toml keys: written by `python -m autograder config-keys --write docs/CONFIG.md` "
    "from autograder/config/keys.py KEYS -->"
)
DOC_END = "<!-- end of grading.toml keys -->"


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _describe(key: Key) -> str:
    """The key's kind and range in words."""
    if key.kind in (NUMBER, WHOLE):
        parts = [key.kind]
        if key.minimum is not None:
            parts.append(f"{'>' if key.above else '≥'} {key.minimum:g}")
        if key.maximum is not None:
            parts.append(f"≤ {key.maximum}")
        return " ".join(parts[:2]) + (", " + parts[2] if len(parts) > 2 else "")
    if key.kind == TEXT and key.choices:
        return "one of " + ", ".join(f'"{c}"' for c in key.choices)
    if key.kind == SEED:
        return '"content", "fresh" or a whole number ≥ 0'
    if key.kind == LIST:
        return ("non-empty " if key.empty else "") + "list of strings"
    return key.kind


def keys_markdown() -> str:
    """docs/CONFIG.md's list of grading.toml's keys, from :data:`KEYS` (a test checks it is current)."""
    rows = ["| key | value | default | what it is |", "| --- | --- | --- | --- |"]
    for key in KEYS:
        if key.kind == TABLE:
            name = f"`[{key.path}]`"
        elif key.kind == TABLES:
            name = f"`[[{key.path}]]`"
        else:
            name = f"`{key.path}`"
        if key.default is REQUIRED:
            default = "required"
        elif key.default is None or key.kind in (TABLE, TABLES):
            default = ""
        else:
            default = f"`{_toml(key.default)}`"
        what = key.help
        if key.same_as:
            what += f"; the keys of `[{key.same_as}]`"
        if key.student != KEPT:
            what += f". Student copy: {key.student}"
        value = "" if key.kind == TABLE else _describe(key)
        rows.append(f"| {name} | {value} | {default} | {what.replace('|', chr(92) + '|')} |")
    return "\n".join(rows) + "\n"


def with_keys_doc(text: str) -> str:
    """``text`` (docs/CONFIG.md) with the part between :data:`DOC_BEGIN` and :data:`DOC_END` replaced
    by :func:`keys_markdown`."""
    start, end = text.index(DOC_BEGIN) + len(DOC_BEGIN), text.index(DOC_END)
    return text[:start] + "\n" + keys_markdown() + text[end:]


def keys_main(argv: list[str]) -> int:
    """``python -m autograder config-keys [--write FILE]``: print grading.toml's keys as a
    markdown table, or rewrite that table in FILE (docs/CONFIG.md) between its markers."""
    if not argv:
        print(keys_markdown(), end="")
        return 0
    if len(argv) == 2 and argv[0] == "--write":
        path = Path(argv[1])
        text = path.read_text(encoding="utf-8")
        if DOC_BEGIN not in text or DOC_END not in text:
            print(
                f"autograder: {path} has no grading.toml keys section (the lines {DOC_BEGIN} and {DOC_END})",
                file=__import__("sys").stderr,
            )
            return 2
        path.write_text(with_keys_doc(text), encoding="utf-8")
        return 0
    print("usage: python -m autograder config-keys [--write docs/CONFIG.md]", file=__import__("sys").stderr)
    return 2
