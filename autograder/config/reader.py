"""Reading ``grading.toml``: where each key is (line numbers) and its value checked against its declaration."""

from __future__ import annotations

import ast
import difflib
import math
import re
from pathlib import Path
from typing import Any

from .keys import KEY, LIST, NUMBER, REQUIRED, SEED, TABLE, TABLES, TEXT, WHOLE, ConfigError, Key, _dotted, keys_under


# --------------------------------------------------------------------------- reading
class _Locator:
    """The line of every key and table of a TOML file, by key path, so messages can say
    ``grading.toml:42``. Arrays of tables count: the second ``[[skills.qkv.suites]]`` is
    ``skills.qkv.suites.[1]`` and its keys are found under it, not under the first."""

    HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
    KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=""")

    def __init__(self, text: str) -> None:
        self.lines: dict[tuple[str, ...], int] = {}
        arrays: dict[tuple[str, ...], int] = {}
        table: tuple[str, ...] = ()
        for number, line in enumerate(text.splitlines(), start=1):
            header = self.HEADER.match(line)
            if header:
                parts = tuple(self._split(header.group(2)))
                if header.group(1) == "[[":
                    arrays[parts] = arrays.get(parts, -1) + 1
                table = self._resolve(parts, arrays)
                self.lines.setdefault(table, number)
                continue
            key = self.KEY.match(line)
            if key:
                self.lines.setdefault(table + tuple(self._split(key.group(1))), number)

    @staticmethod
    def _split(dotted: str) -> list[str]:
        return [part.strip().strip("\"'") for part in re.findall(r"""(?:"[^"]*"|'[^']*'|[^.]+)""", dotted)]

    @staticmethod
    def _resolve(parts: tuple[str, ...], arrays: dict[tuple[str, ...], int]) -> tuple[str, ...]:
        out: list[str] = []
        for k, part in enumerate(parts):
            out.append(part)
            if parts[: k + 1] in arrays:
                out.append(f"[{arrays[parts[: k + 1]]}]")
        return tuple(out)

    def line_of(self, keypath: list[str]) -> int | None:
        """The key's own line, else its nearest enclosing table's or key's line."""
        path = tuple(keypath)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


_UNSET: Any = object()


def _wrong_kind(key: Key, value: Any) -> bool:
    """Whether ``value`` is not of the key's kind (elements of a list included)."""
    if key.kind in (NUMBER, WHOLE):
        return isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
    if key.kind == TEXT:
        return not isinstance(value, str) or not value.strip()
    if key.kind == LIST:
        return not isinstance(value, list) or not all(
            isinstance(v, str) and (key.item is None or re.fullmatch(key.item, v)) for v in value
        )
    if key.kind == TABLE:
        return not isinstance(value, dict)
    if key.kind == TABLES:
        return not isinstance(value, list)
    if key.kind == SEED:
        return not (
            value in ("content", "fresh") or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63)
        )
    raise AssertionError(f"{key.path}: unknown kind {key.kind!r}")


class _Reader:
    """Reads grading.toml's tables by their declaration (:data:`KEYS`); every problem is a
    :class:`ConfigError` naming the file, the line, the key and the fix."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.loc = _Locator(text)

    def fail(self, keypath: list[str], message: str) -> ConfigError:
        line = self.loc.line_of(keypath)
        where = f"{self.path.name}:{line}" if line else self.path.name
        return ConfigError(f"{where}: {_dotted(keypath)}: {message}")

    def table(self, data: Any, keypath: list[str]) -> dict:
        if not isinstance(data, dict):
            raise self.fail(keypath, f"must be a table, got {type(data).__name__}")
        return data

    def check_keys(self, data: dict, allowed: list[str], keypath: list[str]) -> None:
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f" — did you mean {close[0]!r}?" if close else f" (allowed: {', '.join(allowed)})"
                raise self.fail(keypath + [key], f"unknown key{hint}")

    def value(
        self, data: dict, key: Key, keypath: list[str], name: str | None = None, default: Any = _UNSET, above: bool | None = None
    ) -> Any:
        """``data[name]`` (``name``: the key's own name, or the name of a ``<…>`` key), checked
        against its declaration: its name, kind, range and own rule. ``default`` and ``above``
        replace the declared ones (``[release.gradescope.limits]`` defaults to ``[limits]``; a
        gate's weight may be 0)."""
        name = name or key.name
        here = keypath + [name]
        if key.names and not re.fullmatch(key.names, name):
            raise self.fail(here, key.bad_name)
        if name not in data:
            value = key.default if default is _UNSET else default
            if value is REQUIRED:
                raise self.fail(here, "is required")
        else:
            value = data[name]
            if _wrong_kind(key, value):
                raise self.fail(here, key.wrong_message(value, _dotted(here)))
            if key.kind in (NUMBER, WHOLE):
                value = self._number(key, value, here, key.above if above is None else above)
            if key.choices and value not in key.choices:
                raise self.fail(here, f"must be one of {', '.join(key.choices)}; got {value!r}")
        problem = key.check(value) if key.check and value is not None else None
        if problem:
            raise self.fail(here, problem)
        if key.empty and not value:
            raise self.fail(here, key.empty.format(path=_dotted(here)))
        return value

    def _number(self, key: Key, value: float, here: list[str], above: bool) -> float:
        if key.minimum is not None and (value <= key.minimum if above else value < key.minimum):
            low = key.low or (
                f"must be greater than {key.minimum:g}, got {{value!r}}"
                if above
                else f"must be {key.minimum:g} or more, got {{value!r}}"
            )
            raise self.fail(here, low.format(value=value))
        if key.kind == WHOLE:
            if value != int(value):
                raise self.fail(here, f"must be a whole number, got {value!r}")
            value = int(value)
        if key.maximum is not None and value > key.maximum:
            raise self.fail(here, f"must be at most {key.maximum}, got {value!r}")
        return value

    def fields(self, raw: Any, table: str, here: list[str], defaults: Any = None) -> dict[str, Any]:
        """The declared table ``table`` at ``here``: a table with only its declared keys, each
        read (a sub-table is only checked to be one). ``defaults``: an object whose attributes
        replace the declared defaults."""
        raw = self.table(raw, here)
        keys = keys_under(table)
        self.check_keys(raw, [key.name for key in keys], here)
        return {key.name: self.value(raw, key, here, default=getattr(defaults, key.name) if defaults else _UNSET) for key in keys}

    def read(self, parent: dict, table: str, keypath: list[str], name: str | None = None) -> dict[str, Any]:
        """Table ``table`` of ``parent``: :meth:`fields`; for a table of named entries
        (``[skills]``, ``weights``, ``[release.rules]``) the table itself, for the caller to
        read each entry of."""
        raw = self.value(parent, KEY[table], keypath, name)
        if any(key.name.startswith("<") for key in keys_under(table)):
            return raw
        return self.fields(raw, table, keypath + [name or KEY[table].name])


def _build(cls: type, table: str, values: dict[str, Any], **more: Any) -> Any:
    """A settings dataclass from a table's values: numbers as float, whole numbers as int."""
    kinds = {key.name: key.kind for key in keys_under(table)}
    typed = {name: float(v) if kinds[name] == NUMBER else int(v) if kinds[name] == WHOLE else v for name, v in values.items()}
    return cls(**(typed | more))


def test_functions(path: Path) -> list[str]:
    """Top-level ``test_*`` functions of a test file, found by parsing (not importing) it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            raise ConfigError(f"{path}: test classes are not supported (class {node.name}); write test functions")
    return names
