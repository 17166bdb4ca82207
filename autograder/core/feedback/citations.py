"""Lesson citations ("Week 7 §11 (…)", "Day 1 §2.3 第二步 and §A.4", "docs/EXERCISES.md §3")
resolved to a file and line a student can open.

The lessons ship with the exercises under ``docs/lessons/`` (``[release] docs``), so every
"→ reread …" of a hint points at a place in the student's own repository. Each lesson
numbers its sections its own way — Week 7 ``11. title``, Day 1 ``2.3 title`` / ``A.4 title``
/ ``§B title``, Lesson 2 ``3、title``, EXERCISES.md ``## 3. title`` — and a citation of a
top-level number with no heading of its own (Day 1 ``§3``) resolves to its first subsection.
``make check`` fails on a citation that resolves nowhere (tests/grader/test_suites_are_right.py).

Written here rather than taken from a library: it is a dozen lines of pattern matching over
the course's own numbering, which no documentation tool knows.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: the text every course has: the exercise contract (``[release] docs``); a course names its
#: lessons in ``[course.texts]`` of grading.toml ("Week 7" = "lessons/week07-attention.txt")
CONTRACT = {"docs/EXERCISES.md": "EXERCISES.md"}


def texts_of(course_texts: Mapping[str, str] | None) -> dict[str, str]:
    """How a citation names a text → its file under the docs folder: the course's texts and the contract."""
    return {**(course_texts or {}), **CONTRACT}


@functools.lru_cache(maxsize=8)
def _token(names: tuple[str, ...]) -> re.Pattern[str]:
    doc = "|".join(re.escape(d) for d in sorted(names, key=len, reverse=True))
    return re.compile(rf"({doc})|§\s*([0-9A-Z]+(?:\.[0-9]+)*)")


@dataclass(frozen=True)
class Place:
    document: str  # "Week 7"
    section: str  # "11", "2.3", "A.4"
    path: str | None  # "docs/lessons/week07-attention.txt", None when the text is not there
    line: int | None  # 1-based; None when the section was not found

    @property
    def resolved(self) -> bool:
        return self.line is not None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.resolved else f"{self.document} §{self.section} (not found)"


def citations(text: str, texts: Mapping[str, str] | None = None) -> list[tuple[str, str | None]]:
    """(document, section or None) for every document or § named in ``text``; a § belongs to
    the document named last before it. ``texts``: the course's (``[course.texts]``)."""
    out: list[tuple[str, str | None]] = []
    current: str | None = None
    for doc, section in _token(tuple(texts_of(texts))).findall(text):
        if doc:
            current = doc
            out.append((doc, None))
        elif current is not None:
            if out and out[-1] == (current, None):
                out.pop()  # "Week 7 §11": the document alone is not a separate citation
            out.append((current, section))
    return out


def is_heading(line: str) -> bool:
    """A heading line, not a sentence that happens to start with a section number: Day 1's
    header blurb "§B 参考实现（code/ 目录）：w1d1_attention.py。先自己写，再对照。" opens with §B,
    but §B itself starts at "§B 实操". Headings are short and end no sentence (no "。"); a
    markdown heading (#) is one whatever its length."""
    text = line.strip()
    return text.startswith("#") or (bool(text) and "。" not in text and len(text) <= 80)


def _find(lines: list[str], section: str) -> int | None:
    exact = re.compile(rf"^\s*(?:#+\s*)?§?{re.escape(section)}(?:[.、]|\s|$)")
    child = re.compile(rf"^\s*(?:#+\s*)?{re.escape(section)}\.[0-9]+\s")
    marked = re.compile(rf"^\s*(?:#+\s*)?§{re.escape(section)}(?:[.、]|\s|$)")
    # a heading that writes the § itself first: a letter section's own name opens code lines too
    # (Day 1's "   A = softmax_row(S)" came before "§A 注意力：API 用法与边界")
    for number, line in enumerate(lines, start=1):
        if marked.match(line) and is_heading(line):
            return number
    for headings_only in (True, False):  # the section's own heading line first; any line that opens with it last
        for pattern in (exact, child):
            for number, line in enumerate(lines, start=1):
                if pattern.match(line) and (is_heading(line) or not headings_only):
                    return number
    return None


def resolve(text: str, docs: Path, prefix: str = "docs", texts: Mapping[str, str] | None = None) -> list[Place]:
    """Every citation of ``text`` as a place in ``docs`` (the folder holding EXERCISES.md and
    the course's texts, ``[course.texts]``); ``prefix`` is how a student names that folder."""
    places = []
    files = texts_of(texts)
    for document, section in citations(text, texts):
        rel = files[document]
        text_of = _document(docs / rel)
        path = f"{prefix}/{rel}" if text_of is not None else None
        if section is None:  # "docs/EXERCISES.md, Clarifications (…)": the line that names the part, else the top
            line = text_of.find_word(_word_after(text, document)) if text_of is not None else None
            places.append(Place(document, "", path, line or (1 if text_of is not None else None)))
        else:
            places.append(Place(document, section, path, text_of.find(section) if text_of is not None else None))
    return places


def _word_after(text: str, document: str) -> str | None:
    """The first word after a document named without a §: "conventions" in "docs/EXERCISES.md
    conventions (broadcasting)", "Clarifications" in "docs/EXERCISES.md, Clarifications (…)"."""
    found = re.search(re.escape(document) + r"[\s,:;—–-]*([A-Za-z][A-Za-z-]{4,})", text)
    return found.group(1) if found else None


class _Document:
    """A lesson's lines and the sections looked up in it so far."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._found: dict[str, int | None] = {}

    def find_word(self, word: str | None) -> int | None:
        """The first line where ``word`` (any case) opens a heading or a sentence ("##
        Clarifications …", "…). Conventions that hold …"), else the first that holds it."""
        if not word:
            return None
        opening = re.compile(rf"(^\s*#*\s*|[.)]\s+){re.escape(word)}\b", re.IGNORECASE)
        anywhere = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
        for pattern in (opening, anywhere):
            for number, line in enumerate(self.lines, start=1):
                if pattern.search(line):
                    return number
        return None

    def find(self, section: str) -> int | None:
        if section not in self._found:
            self._found[section] = _find(self.lines, section)
        return self._found[section]


def _document(path: Path) -> _Document | None:
    """The text at ``path``, read and searched once per version of the file: a run resolves
    the ~170 hints of its catalogue against the same three lessons (~0.08 s uncached)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _read(path: str, mtime_ns: int, size: int) -> _Document | None:
    try:
        return _Document(Path(path).read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError):
        return None


def where(text: str, docs: Path, prefix: str = "docs", texts: Mapping[str, str] | None = None) -> str:
    """``docs/lessons/week07-attention.txt:314`` (several joined by ", "); "" when nothing
    resolves, so a hint never points at a place that is not there."""
    seen = []
    for place in resolve(text, docs, prefix, texts):
        if place.resolved and str(place) not in seen:
            seen.append(str(place))
    return ", ".join(seen)
