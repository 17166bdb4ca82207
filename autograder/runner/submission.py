"""Find the exercise modules in a submission and make the read-only copy workers see.

Only the modules named in grading.toml are copied; everything else in the submission is
listed as ignored (so a stray ``conftest.py`` or ``sitecustomize.py`` is visible in the
report and never reaches any process). Each module is checked here, on the trusted side,
without running it: a regular file (no symlinks), within the size limit, UTF-8, and
syntactically valid. A module that fails gets its skill's tests failed fast with the
file and line — the other skills still grade.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..config import Config

MAX_LISTED = 200
SKIP_DIRS = {"__pycache__", ".git", ".ipynb_checkpoints", ".venv", "node_modules"}


class SubmissionDirError(Exception):
    """The submission directory cannot be graded at all (missing, not a directory, unreadable)."""


@dataclass
class PreparedSubmission:
    given: str
    root: Path
    copy_dir: Path
    modules: dict[str, dict] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)
    ignored_more: int = 0

    def to_dict(self) -> dict:
        return {
            "path": self.given,
            "modules": {
                name: {k: v for k, v in info.items() if k != "copy_path"} for name, info in self.modules.items()
            },
            "ignored": self.ignored,
            "ignored_more": self.ignored_more,
        }


def _display(root: Path, name: str) -> str:
    try:
        rel = root.resolve().relative_to(Path.cwd().resolve())
        base = str(rel) if str(rel) != "." else ""
    except ValueError:
        base = str(root)
    return f"{base}/{name}" if base else name


def resolve_root(path: Path, module_files: list[str]) -> Path:
    if not path.exists():
        raise SubmissionDirError(f"{path}: no such directory — pass the folder that holds your exercise modules")
    if not path.is_dir():
        raise SubmissionDirError(f"{path}: is not a directory — pass the folder that holds your exercise modules")
    try:
        os.listdir(path)
    except OSError as exc:
        raise SubmissionDirError(f"{path}: cannot be read ({exc.strerror}) — check its permissions") from None
    if any((path / m).exists() for m in module_files):
        return path
    nested = path / "exercises"
    if nested.is_dir() and any((nested / m).exists() for m in module_files):
        return nested
    return path


def _check_module(src: Path, limit_bytes: int) -> tuple[bytes | None, str | None, int | None]:
    """(content, problem, line) — content None when the module cannot be graded."""
    try:
        st = os.lstat(src)
    except FileNotFoundError:
        return None, "is missing — add it (start from the stub in the student release)", None
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})", None
    if stat.S_ISLNK(st.st_mode):
        return None, "is a symbolic link — submit a regular file", None
    if not stat.S_ISREG(st.st_mode):
        return None, "is not a regular file", None
    if st.st_size > limit_bytes:
        return None, f"is {st.st_size // 1024} KiB; exercise modules are limited to {limit_bytes // 1024} KiB ([limits] max_module_kib)", None
    try:
        data = src.read_bytes()
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror}) — check its permissions", None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line}) — save it as UTF-8", line
    try:
        compile(text, src.name, "exec", dont_inherit=True)  # compiles, never runs: catches what ast.parse lets through
    except SyntaxError as exc:
        return None, f"line {exc.lineno}: SyntaxError: {exc.msg} — fix it and the whole module can be graded", exc.lineno
    except ValueError as exc:  # e.g. NUL bytes
        return None, f"cannot be parsed: {exc}", None
    return data, None, None


def list_ignored(root: Path, keep: set[str]) -> tuple[list[str], int]:
    listed: list[str] = []
    more = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if rel in keep:
                continue
            if len(listed) < MAX_LISTED:
                listed.append(rel)
            else:
                more += 1
        if more > 10_000:
            break
    return listed, more


def prepare(path: str | Path, config: Config, run_dir: Path, *, world_readable: bool) -> PreparedSubmission:
    given = str(path)
    module_files = [s.module for s in config.skills.values()]
    root = resolve_root(Path(path), module_files)
    copy_dir = run_dir / "submission"
    copy_dir.mkdir(mode=0o755)
    prepared = PreparedSubmission(given=given, root=root, copy_dir=copy_dir)
    limit = config.limits.max_module_kib * 1024
    for skill in config.skills.values():
        name = skill.module_name
        display = _display(root, skill.module)
        data, problem, line = _check_module(root / skill.module, limit)
        info: dict = {"display_path": display, "copy_path": None, "problem": None, "problem_line": line}
        if problem:
            info["problem"] = f"{display} {problem}" if not problem.startswith("line") else f"{display}, {problem}"
        else:
            target = copy_dir / skill.module
            target.write_bytes(data)
            target.chmod(0o644 if world_readable else 0o600)
            info["copy_path"] = str(target)
        prepared.modules[name] = info
    prepared.ignored, prepared.ignored_more = list_ignored(root, set(module_files))
    return prepared
