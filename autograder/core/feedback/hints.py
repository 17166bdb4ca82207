"""The hint catalogue: a hint id ("masks/zero-fill") → one line of explanation + a section.

Catalogues are TOML files: ``autograder/core/feedback/general_hints.toml`` (id prefix
``general/``) and ``tests/suites/<skill>/hints.toml`` (prefix ``<skill>/``). Tests name
hints by id; the grading plugin resolves them into the report, so every renderer shows
the same words without reading the catalogues again.

A hint that names a mistake recognised from a function's output declares that function:
``function = "single_head_attention"`` (or a list). Such a hint is shown only where it is
right (``filter_named``): on a test that called that function, and only if the mistake's
signature matched during the test (``expect.diagnose``: within tolerance and closer than
the correct answer). Hints without ``function`` state facts the failed check proved
(a dtype changed, a state_dict key is extra) and are shown with that check.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

GENERAL = Path(__file__).with_name("general_hints.toml")


@dataclass(frozen=True)
class Hint:
    id: str
    text: str
    section: str
    functions: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "section": self.section}


class HintCatalogueError(Exception):
    pass


def load_file(path: Path, prefix: str) -> dict[str, Hint]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise HintCatalogueError(f"{path}: {exc}") from None
    hints = {}
    for key, entry in data.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str) or not isinstance(entry.get("section"), str):
            raise HintCatalogueError(f"{path}: [{key}] needs `text` and `section` strings")
        unknown = set(entry) - {"text", "section", "function"}
        if unknown:
            raise HintCatalogueError(f"{path}: [{key}] has unknown keys {sorted(unknown)}")
        functions = entry.get("function", [])
        functions = [functions] if isinstance(functions, str) else functions
        if not isinstance(functions, list) or not all(isinstance(f, str) and f for f in functions):
            raise HintCatalogueError(f"{path}: [{key}] `function` must be a function name or a list of them")
        hints[f"{prefix}/{key}"] = Hint(f"{prefix}/{key}", entry["text"].strip(), entry["section"].strip(), tuple(functions))
    return hints


def load_catalogue(suites_dir: Path | None, docs: Path | None = None, texts: Mapping[str, str] | None = None) -> dict[str, Hint]:
    """Every hint by id. With ``docs`` (the repository's docs/ folder, which holds the lessons)
    each section also says where to read it: ``Week 7 §11 (…) — docs/lessons/week07-attention.txt:314``
    (``texts``: how the course names its texts, ``[course.texts]`` of grading.toml)."""
    hints = load_file(GENERAL, "general")
    if suites_dir is not None and suites_dir.is_dir():
        for path in sorted(suites_dir.glob("*/hints.toml")):
            hints.update(load_file(path, path.parent.name))
    if docs is not None and docs.is_dir():
        from .citations import where

        for hint_id, hint in hints.items():
            place = where(hint.section, docs, texts=texts)
            if place:
                hints[hint_id] = Hint(hint.id, hint.text, f"{hint.section} — {place}", hint.functions)
    return hints


def resolve(ids: list[str], catalogue: dict[str, Hint]) -> list[dict]:
    out = []
    for hint_id in dict.fromkeys(ids):
        hint = catalogue.get(hint_id)
        out.append(
            hint.to_dict()
            if hint
            else {"id": hint_id, "text": f"(unknown hint id {hint_id!r} — a bug in the test suite)", "section": ""}
        )
    return out


def filter_named(ids: list[str], catalogue: dict[str, Hint], matched: set[str], targets: list[str]) -> list[str]:
    """The hint rule: a hint that names a function's mistake survives only if its signature
    matched during this test (``matched``) and the test called that function (``targets``:
    ``module.function`` names; a test that ran a probe may have called any function of
    that module)."""
    called = {t.split(".", 1)[1].split(".")[0] for t in targets if "." in t}
    probed = any(".probe:" in t for t in targets)
    kept = []
    for hint_id in ids:
        hint = catalogue.get(hint_id)
        if hint is None or not hint.functions:
            kept.append(hint_id)
        elif hint_id in matched and (probed or called & set(hint.functions)):
            kept.append(hint_id)
    return kept
