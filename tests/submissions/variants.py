"""The sample submissions as data: correct styles and single-mistake variants.

Used by the grader's own tests (tests/grader/test_sample_submissions.py) and by the hint
precision benchmark (tests/benchmarks/hint_precision.py), so both grade the same thing.

A variant in ``mistakes/<skill>.toml``::

    [[mistake]]
    id = "divide-by-dk"                 # unique within the skill
    base = "solutions"                  # or "styles/<style>": the correct module it starts from
    file = "qkv.py"
    find = "return scores / math.sqrt(d_k)"     # must occur exactly once in base/file
    replace = "return scores / d_k"
    function = "scale_scores"           # the one function (or class) the change breaks
    hint = "qkv/divide-by-dk"           # the hint that names this mistake
    also = ["general/in-place"]         # optional: hints the same mistake also proves (on other inputs)
"""

from __future__ import annotations

import ast
import re
import shutil
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SOLUTIONS = ROOT / "solutions"
REQUIRED_KEYS = ("id", "base", "file", "find", "replace", "function", "hint")


def config() -> dict:
    return tomllib.loads((ROOT / "grading.toml").read_text(encoding="utf-8"))


def modules() -> dict[str, str]:
    return {sid: skill["module"] for sid, skill in config()["skills"].items()}


def styles() -> list[str]:
    return sorted(p.name for p in (HERE / "styles").iterdir() if p.is_dir())


def mistakes(skill: str) -> list[dict]:
    path = HERE / "mistakes" / f"{skill}.toml"
    if not path.exists():
        return []
    entries = tomllib.loads(path.read_text(encoding="utf-8")).get("mistake", [])
    seen: set[str] = set()
    for i, m in enumerate(entries):
        missing = [k for k in REQUIRED_KEYS if k not in m]
        if missing:
            raise ValueError(f"{path}: mistake #{i + 1} ({m.get('id', '?')}) lacks {missing}")
        if m["id"] in seen:  # two rows of one id: a benchmark keyed by id would mix them up
            raise ValueError(f"{path}: mistake #{i + 1}: id {m['id']!r} is used twice; ids are unique within a skill")
        seen.add(m["id"])
    return entries


def mutated_source(m: dict) -> str:
    base = SOLUTIONS if m["base"] == "solutions" else HERE / m["base"]
    source = (base / m["file"]).read_text(encoding="utf-8")
    if source.count(m["find"]) != 1:
        raise ValueError(
            f"{m['id']}: `find` must occur exactly once in {m['base']}/{m['file']} (found {source.count(m['find'])})"
        )
    return source.replace(m["find"], m["replace"])


def build(folder: Path, applied: list[dict]) -> Path:
    """A submission folder: every reference module, with the given variants applied."""
    folder.mkdir(parents=True, exist_ok=True)
    for module in modules().values():
        shutil.copyfile(SOLUTIONS / module, folder / module)
    for m in applied:
        (folder / m["file"]).write_text(mutated_source(m), encoding="utf-8")
    return folder


def functions(module: str) -> list[str]:
    """Top-level public functions and classes of a reference module."""
    tree = ast.parse((SOLUTIONS / module).read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def named_functions(test_name: str, names: list[str], skill: str = "") -> list[str]:
    """The functions (or classes) a test is about, read from its name
    (``test_attention_head_…`` → ``AttentionHead``; the skill's own name is not a function
    name: ``test_sdpa_masks_functions_…`` names none). Empty for tests of the whole skill
    (worked examples, dtype rules), which may fail for any function's mistake."""
    skill_spans = [m.span() for m in re.finditer(rf"(?<![a-z]){re.escape(skill)}(?![a-z])", test_name)] if skill else []
    hits: list[str] = []
    taken: list[tuple[int, int]] = []
    for n in sorted(names, key=lambda n: -len(snake(n))):
        for m in re.finditer(rf"(?<![a-z]){re.escape(snake(n))}(?![a-z])", test_name):
            a, b = m.span()
            inside = lambda spans: any(x <= a and b <= y and (x, y) != (a, b) for x, y in spans)
            if inside(taken) or (inside(skill_spans) and not any((x, y) == (a, b) for x, y in taken)):
                continue  # `attention` inside `attention_head`; `sdpa` inside `sdpa_masks`
            if n not in hits:
                hits.append(n)
            taken.append((a, b))
    return hits


def dependents(source: str, function: str) -> set[str]:
    """``function`` and every top-level function or class of ``source`` that calls it,
    directly or through others: a mistake in ``function`` is also a mistake of those."""
    tree = ast.parse(source)
    calls: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            calls[node.name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
                n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            }
    found = {function}
    changed = True
    while changed:
        changed = False
        for name, used in calls.items():
            if name not in found and used & found:
                found.add(name)
                changed = True
    return found
