"""``make stubs``: write ``exercises/`` from ``solutions/`` with nbgrader's own
``ClearSolutions`` preprocessor (each ``.py`` file wrapped as a one-cell notebook).

In ``solutions/<skill>.py`` every solution region sits inside a function or method body,
directly below the line that says what the student must do::

    def scale_scores(scores, d_k):
        \"\"\"docstring (kept)\"\"\"
        # TODO: scale the scores (Week 7 §8).
        ### BEGIN SOLUTION
        return scores / math.sqrt(d_k)
        ### END SOLUTION

and the stub becomes::

        # TODO(qkv): scale the scores (Week 7 §8).
        raise NotImplementedError("TODO(qkv): scale_scores")

nbgrader replaces each region with one global ``code_stub``; we give it a placeholder and
fill in, per region, the skill and the function's qualified name (nbgrader has no
per-region stub), and rewrite the ``# TODO:`` line above it into the grep-able
``# TODO(<skill>):`` form. The module docstring gains one line saying how to grade.

Refused, with the file and line, before nbgrader runs: a region outside a function body
(the stub would raise at import), a marker nbgrader would see inside a string or a comment
that is not a marker line (it matches by substring), an unclosed, unopened or nested
marker, and a region without its ``# TODO:`` line.
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ...config import Config

BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"  # nbgrader's delimiters, matched as substrings
MARKER_LINE = re.compile(r"^(\s*)### (BEGIN|END) SOLUTION\s*$")
TODO_LINE = re.compile(r"^(\s*)# TODO: (\S.*)$")
PLACEHOLDER = "__AUTOGRADER_STUB_PLACEHOLDER__"
HOW_TO_GRADE = "Fill in every function marked TODO({skill}), then run `make grade SKILL={skill}`."


class MarkerError(Exception):
    """A solution file nbgrader would turn into a broken stub; ``str()`` names file and line."""


@dataclass(frozen=True)
class Region:
    begin: int  # 1-based line of ### BEGIN SOLUTION
    end: int
    qualname: str  # "scale_scores", "AttentionHead.forward"
    todo: str  # the text after "# TODO: "


def _functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    out = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + child.name, child))
                visit(child, prefix + child.name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(tree, "")
    return out


def regions(path: Path, text: str, rel: str) -> list[Region]:
    """The solution regions of one file, validated (raises ``MarkerError``)."""
    try:
        tree = ast.parse(text, filename=rel)
    except SyntaxError as exc:
        raise MarkerError(f"{rel}:{exc.lineno}: syntax error: {exc.msg}") from None
    lines = text.splitlines()
    # markers nbgrader would see where we see none: inside strings, or in other comments
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            for offset, piece in enumerate(tok.string.splitlines()):
                if BEGIN in piece or END in piece:
                    raise MarkerError(
                        f"{rel}:{tok.start[0] + offset}: solution marker inside a string — nbgrader matches "
                        f"'{BEGIN}'/'{END}' anywhere on a line, so this would open or close a region; reword the string"
                    )
    functions = _functions(tree)
    found: list[Region] = []
    open_at: int | None = None
    for number, line in enumerate(lines, start=1):
        if BEGIN not in line and END not in line:
            continue
        m = MARKER_LINE.match(line)
        if not m:
            raise MarkerError(
                f"{rel}:{number}: '{BEGIN if BEGIN in line else END}' inside other text — nbgrader would treat the line "
                f"as a marker; a marker line is exactly `### {BEGIN if BEGIN in line else END}`"
            )
        if m.group(2) == "BEGIN":
            if open_at is not None:
                raise MarkerError(
                    f"{rel}:{number}: `### {BEGIN}` inside the region opened at line {open_at} — regions cannot "
                    "nest; close it first"
                )
            open_at = number
            continue
        if open_at is None:
            raise MarkerError(f"{rel}:{number}: `### {END}` without a `### {BEGIN}` above it")
        indent = len(MARKER_LINE.match(lines[open_at - 1]).group(1))

        def contains(f) -> bool:  # the AST ends a function at its last statement, before trailing comments
            after = lines[f.end_lineno : number]
            return (
                f.lineno < open_at
                and indent > f.col_offset
                and not any(rest.strip() and not rest.strip().startswith("#") for rest in after)
            )

        inside = [(q, f) for q, f in functions if contains(f)]
        if not inside:
            raise MarkerError(
                f"{rel}:{open_at}: solution region at module level (or spanning functions) — the stub would raise when "
                f"the module is imported; put the region inside one function or method body"
            )
        qualname, _ = max(inside, key=lambda qf: qf[1].lineno)  # the innermost function
        todo = TODO_LINE.match(lines[open_at - 2]) if open_at >= 2 else None
        if not todo or todo.group(1) != MARKER_LINE.match(lines[open_at - 1]).group(1):
            raise MarkerError(
                f"{rel}:{open_at}: no `# TODO: <what the student writes here>` line directly above `### {BEGIN}` "
                f"(same indentation) — the stub's TODO text lives there"
            )
        found.append(Region(open_at, number, qualname, todo.group(2).strip()))
        open_at = None
    if open_at is not None:
        raise MarkerError(f"{rel}:{open_at}: `### {BEGIN}` is never closed — add `### {END}` at the end of the region")
    return found


def _module_docstring_line(text: str, tree: ast.Module) -> int | None:
    """0-based index of the line holding the module docstring's closing quotes."""
    if (
        tree.body
        and isinstance(tree.body[0], ast.Expr)
        and isinstance(getattr(tree.body[0], "value", None), ast.Constant)
        and isinstance(tree.body[0].value.value, str)
    ):
        return tree.body[0].end_lineno - 1
    return None


def stub_text(solution: str, skill: str, rel: str) -> str:
    """The stub nbgrader's ClearSolutions makes of ``solution`` (one module's text)."""
    found = regions(Path(rel), solution, rel)
    from nbformat.v4 import new_code_cell, new_notebook
    from nbgrader.preprocessors import ClearSolutions

    nb = new_notebook(
        cells=[new_code_cell(solution)],
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
    )
    nb, _ = ClearSolutions(code_stub={"python": PLACEHOLDER}, enforce_metadata=False).preprocess(nb, {})
    lines = nb.cells[0].source.splitlines()
    stubs = [i for i, line in enumerate(lines) if line.strip() == PLACEHOLDER]
    if len(stubs) != len(found):
        raise MarkerError(f"{rel}: nbgrader cleared {len(stubs)} regions, we found {len(found)} — check the markers")
    for i, region in zip(stubs, found):
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        todo = TODO_LINE.match(lines[i - 1])
        if not todo:  # cannot happen after regions() — the line above BEGIN is kept as it was
            raise MarkerError(f"{rel}:{region.begin}: the `# TODO:` line above the region is missing in nbgrader's output")
        lines[i - 1] = f"{indent}# TODO({skill}): {region.todo}"
        lines[i] = f'{indent}raise NotImplementedError("TODO({skill}): {region.qualname}")'
    tree = ast.parse(solution)
    doc_end = _module_docstring_line(solution, tree)
    if doc_end is not None:
        closing = lines[doc_end]
        note = HOW_TO_GRADE.format(skill=skill)
        if closing.strip() in ('"""', "'''"):
            lines[doc_end:doc_end] = ["", note]
        else:  # closing quotes after text: put the line before them
            q = closing.rstrip()[-3:]
            lines[doc_end] = closing.rstrip()[:-3].rstrip() + "\n\n" + note + "\n" + q
    text = "\n".join(lines) + "\n"
    try:
        compile(text, rel, "exec")
    except SyntaxError as exc:
        raise MarkerError(
            f"{rel}: the generated stub does not compile (line {exc.lineno}: {exc.msg}) — check the markers' indentation"
        ) from None
    return text


def generate(config: Config) -> dict[Path, str]:
    """{exercise path: stub text} for every skill (nothing is written)."""
    out = {}
    for sid, skill in config.skills.items():
        source = config.solutions_dir / skill.module
        rel = source.relative_to(config.root).as_posix() if source.is_relative_to(config.root) else str(source)
        if not source.is_file():
            raise MarkerError(f"{rel}: missing — every skill in grading.toml needs its reference solution")
        out[config.exercises_dir / skill.module] = stub_text(source.read_text(encoding="utf-8"), sid, rel)
    return out


def write(config: Config) -> list[Path]:
    written = []
    for path, text in generate(config).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def check(config: Config) -> list[str]:
    """One line per exercise file that differs from what ``make stubs`` writes."""
    problems = []
    for path, text in generate(config).items():
        rel = path.relative_to(config.root).as_posix() if path.is_relative_to(config.root) else str(path)
        if not path.is_file():
            problems.append(f"{rel}: missing — run `make stubs`")
            continue
        have = path.read_text(encoding="utf-8")
        if have != text:
            diff = list(difflib.unified_diff(have.splitlines(), text.splitlines(), lineterm="", n=0))
            first = next((d for d in diff if d.startswith("@@")), "")
            problems.append(
                f"{rel}: differs from what `make stubs` writes from solutions/ ({first.strip('@ ')}) — edit "
                "solutions/, then run `make stubs`"
            )
    return problems
