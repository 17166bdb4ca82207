"""Find the exercise modules in a submission and make the read-only copy workers see.

Every exercise module named in grading.toml is copied — the selected skills' modules are
graded, the others are there so that ``from masks import causal_mask`` inside ``qkv.py``
works whatever ``--skill`` says. The submission's other top-level ``.py`` files are copied
as *helper modules* (importable, never graded, listed in the report), within limits and
never under a name that would shadow the grader, pytest, torch or the standard library.
Everything else in the submission is listed as ignored and never reaches any process.

Each file is checked here, on the trusted side, without running it. The folder the user
named is resolved once (an instructor may pass a symlink); below it every component must
be a real directory or a regular file: no symbolic link anywhere on the path to a module
(a submission holding only ``exercises -> …/solutions`` must not grade the solutions), no
hard link (its other name may lie outside the submission), no FIFO, device or socket.
Files are opened relative to a directory descriptor opened without following links, so a
link swapped in after the check is not followed either. A module that fails gets its
skill's tests failed fast with the file and the fix — the other skills still grade.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..config import Config
from ..core import exercise_api
from .manifest import ModuleEntry

MAX_LISTED = 200
SKIP_DIRS = {"__pycache__", ".git", ".ipynb_checkpoints", ".venv", "node_modules"}
NESTED = "exercises"  # a submission may hold its modules directly or under exercises/

#: helper module names that would configure or shadow the grader's own machinery
SHADOWING = {
    *("conftest", "sitecustomize", "usercustomize", "site", "setuptools", "pip"),  # start-up, packaging
    *("torch", "numpy", "einops", "sympy", "typing_extensions"),  # what the grader computes with
    *("pytest", "_pytest", "pytest_jsonreport", "pluggy"),  # what it tests with
    *("solutions", "exercises", "tests"),  # the repository's own folders
}
SHADOWING_PREFIXES = ("autograder", "pytest_", "torch", "__")


class SubmissionDirError(Exception):
    """The submission directory cannot be graded at all (missing, not a directory, unreadable)."""


@dataclass
class PreparedSubmission:
    given: str
    root: Path
    copy_dir: Path
    modules: dict[str, dict] = field(default_factory=dict)  # the graded (selected) exercise modules
    siblings: dict[str, dict] = field(default_factory=dict)  # exercise modules of skills not selected
    helpers: dict[str, dict] = field(default_factory=dict)  # importable, never graded
    ignored: list[str] = field(default_factory=list)
    ignored_more: int = 0
    note: str = ""  # which folder was graded and why, when the submission held several (choose_folder)
    #: (file name, sha256 or None when absent/refused) of every file copied or refused: what
    #: the content-derived seed is computed from
    content: list[tuple[str, str | None]] = field(default_factory=list)
    #: the graded modules' facts for the run manifest, captured from the bytes copied
    facts: dict[str, ModuleEntry] = field(default_factory=dict)
    #: an exercise module that imports one handed in with another assignment (works here, where
    #: every module is copied; not in that assignment's own upload): _cross_assignment_imports
    cross_imports: list[dict] = field(default_factory=list)
    #: each exercise module that imports another one (allowed): a mistake in the imported one
    #: fails the importer's tests too, which the report says (renderers/common.py): _exercise_imports
    exercise_imports: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        def public(info: dict) -> dict:
            return {k: v for k, v in info.items() if k != "copy_path"}

        return {
            "path": self.given,
            "modules": {name: public(info) for name, info in self.modules.items()},
            "not_selected": {name: public(info) for name, info in self.siblings.items()},
            "helpers": {name: public(info) for name, info in self.helpers.items()},
            "ignored": self.ignored,
            "ignored_more": self.ignored_more,
            "located": self.note,
            "cross_assignment_imports": self.cross_imports,
            "exercise_imports": self.exercise_imports,
        }


def _display(root: Path, name: str) -> str:
    try:
        rel = root.resolve().relative_to(Path.cwd().resolve())
        base = str(rel) if str(rel) != "." else ""
    except ValueError:
        base = str(root)
    return f"{base}/{name}" if base else name


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


#: how deep a folder holding the modules may sit: repository/exercises/… or zip-folder/repository/exercises/…
MAX_DEPTH = 4
#: walking a huge submission stops after this many entries
MAX_ENTRIES = 20_000
#: folders holding exercise modules whose modules are read to choose among them: the
#: shallowest ones, then by name (reading costs; a real submission has one to three)
MAX_CANDIDATES = 32


def written_functions(data: bytes | None) -> int:
    """How many functions of a module's source are written: defined and not the TODO stub
    (``exercise_api.still_todo``). The release stubs have none; a file that does not parse
    counts 0."""
    if data is None:
        return 0
    return len(exercise_api.functions(data)) - len(exercise_api.still_todo(data))


def shortlist(folders, depth) -> list:
    """The folders whose modules ``choose_folder`` weighs: the ``MAX_CANDIDATES`` shallowest,
    then by name — the same ones whatever the path (a folder on disk, a zip)."""
    return sorted(folders, key=lambda k: (depth(k), str(k)))[:MAX_CANDIDATES]


_F = TypeVar("_F")  # a folder: a Path on disk, a name inside a zip


def choose_folder(candidates: dict[_F, dict[str, int]], depth: Callable[[_F], int]) -> tuple[_F, str]:
    """THE rule that decides which folder of a submission is graded, on every path — ``grade``,
    the Gradescope upload, a batch student's folder or .zip, a Gradescope export (issue 28 D):
    ``candidates`` maps each folder holding exercise modules (``shortlist``) to {module file:
    its written functions (``written_functions``)}; ``depth(folder)`` is how deep it sits. The folder with the most
    *written* exercise functions wins (so a finished ``qkv.py`` at the top beats untouched
    stubs in ``exercises/``, and finished work in ``exercises/`` beats a stray stub at the
    top); then the one with the most exercise modules; then the shallowest; then the first
    by name. Returns (the folder, why, in words: said in every output)."""
    counts = {k: (sum(mods.values()), len(mods)) for k, mods in candidates.items()}
    best = min(candidates, key=lambda k: (-counts[k][0], -counts[k][1], depth(k), str(k)))
    if len(candidates) == 1:
        return best, ""
    runner_up = min((k for k in candidates if k != best), key=lambda k: (-counts[k][0], -counts[k][1], depth(k), str(k)))
    (written, present), (w2, p2) = counts[best], counts[runner_up]
    if written != w2:
        why = f"the most written exercise functions: {written}, against {w2} in {_where(runner_up)}"
    elif present != p2:
        why = f"as many written exercise functions as {_where(runner_up)} ({written}), and more exercise modules ({present})"
    else:
        why = f"as many written functions and modules as {_where(runner_up)}, and the shallowest or first by name"
    return best, why


def _where(folder) -> str:
    text = str(folder)
    return "the top folder" if text in ("", ".") else f"{text}/"


def folder_candidates(top: Path, module_files: list[str], limit_bytes: int) -> dict[Path, dict[str, int]]:
    """The folders of ``top`` (itself included, ``MAX_DEPTH`` deep, links never followed,
    ``SKIP_DIRS`` skipped) holding exercise modules (``shortlist``), each with the written
    functions of each module (read without following a link, ``limit_bytes`` at most; an
    unreadable one counts 0) — for ``choose_folder``."""
    wanted = set(module_files)
    holders: dict[Path, list[str]] = {}
    seen = 0
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        depth = len(here.relative_to(top).parts)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and d != "__MACOSX") if depth < MAX_DEPTH else []
        for name in sorted(filenames):
            seen += 1
            if name in wanted:
                holders.setdefault(here, []).append(name)
        if seen > MAX_ENTRIES:
            break
    return {
        folder: {name: written_functions(_peek(folder / name, limit_bytes)) for name in holders[folder]}
        for folder in shortlist(holders, lambda p: len(p.relative_to(top).parts))
    }


def _peek(path: Path, limit_bytes: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit_bytes + 1)
        return data if len(data) <= limit_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)


def locate_root(path: Path, module_files: list[str], limit_bytes: int = 256 * 1024) -> tuple[Path, str]:
    """(the folder holding the modules, a note saying which and why). The given folder is
    resolved once (an instructor may pass a symlink); below it ``choose_folder`` decides
    among the folders ``folder_candidates`` finds — the same rule as every other path. A
    symlinked ``exercises`` is never entered; ``prepare`` then refuses the modules with the
    reason."""
    if not path.exists():
        raise SubmissionDirError(f"{path}: no such directory — pass the folder that holds your exercise modules")
    if not path.is_dir():
        raise SubmissionDirError(f"{path}: is not a directory — pass the folder that holds your exercise modules")
    try:
        os.listdir(path)
    except OSError as exc:
        raise SubmissionDirError(f"{path}: cannot be read ({exc.strerror}) — check its permissions") from None
    root = Path(os.path.realpath(path))
    candidates = folder_candidates(root, module_files, limit_bytes)
    if not candidates:
        return root, ""
    rel, why = choose_folder({p.relative_to(root): mods for p, mods in candidates.items()}, lambda p: len(p.parts))
    if not why and not rel.parts:
        return root, ""  # the modules at the top, and nowhere else: nothing to say
    note = f"graded the exercise modules in {_where(rel)}" + (f" ({why})" if why else "")
    return root / rel, note


def resolve_root(path: Path, module_files: list[str]) -> Path:
    """The folder holding the modules (``locate_root``)."""
    return locate_root(path, module_files)[0]


def check(path: str | Path, config: Config) -> Path:
    """The one check of a submission folder before grading (``SubmissionDirError`` when it
    cannot be graded at all); returns the folder holding the modules."""
    return locate(path, config)[0]


def locate(path: str | Path, config: Config) -> tuple[Path, str]:
    """``locate_root`` with the config's modules and size limit."""
    return locate_root(Path(path), list(config.exercise_modules), config.limits.max_module_kib * 1024)


def _link_problem(root: Path) -> str | None:
    """Why the modules' folder cannot be used (``exercises`` is a link, or not a folder)."""
    st = _lstat(root / NESTED)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return (
            "is a symbolic link — submissions are graded from real files only: "
            "replace the link with a folder holding your own modules"
        )
    return None


def _file_problem(st: os.stat_result, limit_bytes: int, what: str) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link — submit a regular file (copy the file itself, not a link to it)"
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a Python file"
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a FIFO"
            if stat.S_ISFIFO(st.st_mode)
            else "a socket"
            if stat.S_ISSOCK(st.st_mode)
            else "a device file"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "not a regular file"
        )
        return f"is {kind}, not a regular file — submit the module as an ordinary file"
    if st.st_nlink > 1:
        return f"is a hard link ({st.st_nlink} names for one file) — submit a copy of your own file, not a link"
    if st.st_size > limit_bytes:
        return f"is {st.st_size // 1024} KiB; {what} are limited to {limit_bytes // 1024} KiB ([limits] max_module_kib)"
    return None


def _read_checked(
    dir_fd: int | None, folder: Path, name: str, limit_bytes: int, what: str = "exercise modules"
) -> tuple[bytes | None, str | None, int | None]:
    """(content, problem, line) — content None when the file cannot be used. The file is
    opened below ``dir_fd`` with O_NOFOLLOW, and the opened file is the one checked."""
    if dir_fd is None:
        return None, "is missing — add it (start from the stub in the student release)", None
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None, "is missing — add it (start from the stub in the student release)", None
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})", None
    problem = _file_problem(st, limit_bytes, what)
    if problem:
        return None, problem, None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror}) — check its permissions", None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            return None, "changed while it was being read — submit it again", None
        problem = _file_problem(opened, limit_bytes, what)
        if problem:
            return None, problem, None
        chunks, size = [], 0
        while size <= limit_bytes:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror}) — check its permissions", None
    finally:
        os.close(fd)
    if len(data) > limit_bytes:
        return None, f"grew past {limit_bytes // 1024} KiB while it was being read", None
    try:
        data.decode("utf-8-sig")  # a UTF-8 BOM (Windows editors write one) is UTF-8 too, and Python reads it
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"is not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line}) — save it as UTF-8", line
    try:
        # the bytes, as import compiles them (a BOM, a coding line); never runs: catches what ast.parse lets through
        compile(data, name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return None, f"line {exc.lineno}: SyntaxError: {exc.msg} — fix it and the whole module can be graded", exc.lineno
    except ValueError as exc:  # e.g. NUL bytes
        return None, f"cannot be parsed: {exc}", None
    except (MemoryError, RecursionError) as exc:  # nested past the parser's or the compiler's own limit (R-CZ)
        return None, f"cannot be compiled: it is nested too deeply for Python ({type(exc).__name__})", None
    return data, None, None


def list_ignored(root: Path, keep: set[str]) -> tuple[list[str], int]:
    listed: list[str] = []
    more = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
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


def shadowing_reason(module: str) -> str | None:
    """Why a helper module name may not be importable in the worker, or None."""
    try:
        module.encode("utf-8")  # a name of another encoding's bytes holds surrogates (os.fsdecode)
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if not module.isidentifier():
        return "is not an importable module name"
    if module in SHADOWING or module.startswith(SHADOWING_PREFIXES):
        return "would shadow part of the grader, pytest or torch"
    if module in sys.stdlib_module_names or module in sys.builtin_module_names:
        return "would shadow the standard library module of that name"
    try:
        if importlib.util.find_spec(module) is not None:  # an installed package (finding runs nothing)
            return "would shadow an installed package of that name"
    except (ImportError, ValueError):
        return "would shadow an installed package of that name"
    return None


def _open_dir(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None


def prepare(path: str | Path, config: Config, run_dir: Path, *, world_readable: bool) -> PreparedSubmission:
    given = str(path)
    module_files = list(config.exercise_modules)
    root, note = locate(path, config)
    copy_dir = run_dir / "submission"
    copy_dir.mkdir(mode=0o755)
    prepared = PreparedSubmission(given=given, root=root, copy_dir=copy_dir, note=note)
    limit = config.limits.max_module_kib * 1024
    folder_problem = _link_problem(root)
    dir_fd = None if folder_problem else _open_dir(root)
    mode = 0o644 if world_readable else 0o600
    selected = {s.module for s in config.skills.values()}
    sources: dict[str, bytes] = {}

    def copy(name: str, data: bytes) -> Path:
        target = copy_dir / name
        target.write_bytes(data)
        target.chmod(mode)
        return target

    try:
        for module in module_files:
            display = _display(root, module)
            if folder_problem:
                data, problem, line = None, folder_problem, None
            else:
                data, problem, line = _read_checked(dir_fd, root, module, limit)
            info: dict = {"display_path": display, "copy_path": None, "problem": None, "problem_line": line, "sha256": None}
            if folder_problem:
                info["problem"] = f"{_display(root, NESTED)}/ {folder_problem} (so {module} was not graded)"
            elif problem:
                near = near_names(dir_fd, module) if problem.startswith("is missing") else []
                if len(near) == 1:  # what browsers and macOS make of a download: masks (1).py, Qkv.py
                    problem = f"is missing — your folder has {near[0]}: rename it to {module} (file names are exact)"
                info["problem"] = f"{display} {problem}" if not problem.startswith("line") else f"{display}, {problem}"
                prepared.content.append((module, None))
            else:
                info["copy_path"] = str(copy(module, data))
                sources[module] = data
                info["sha256"] = hashlib.sha256(data).hexdigest()
                known = exercise_api.known_functions(module, config.solutions_dir, config.exercises_dir)
                info["functions"] = known  # the exercise's own names: the only ones a report may show
                info["todo"] = exercise_api.still_todo(data, known)
                prepared.content.append((module, info["sha256"]))
            if module in selected:
                prepared.modules[module[:-3]] = info
                prepared.facts[module[:-3]] = ModuleEntry.of(info, data)
            else:
                prepared.siblings[module[:-3]] = info
        if dir_fd is not None:
            _copy_helpers(prepared, config, dir_fd, set(module_files), copy)
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    prepared.cross_imports = _cross_assignment_imports(config, sources)
    prepared.exercise_imports = _exercise_imports(config, sources)
    # copied helpers are listed as helpers; refused ones stay in `ignored` too (nothing reads them)
    keep = set(module_files) | {h["file"] for h in prepared.helpers.values() if h.get("copy_path")}
    prepared.ignored, prepared.ignored_more = list_ignored(root, keep)
    return prepared


def _cross_assignment_imports(config: Config, sources: dict[str, bytes]) -> list[dict]:
    """Each exercise module (of ``sources``: file → bytes) that imports an exercise module
    handed in with another assignment ([release.assignments]): here every exercise module is
    copied, so the import works, but that assignment's Gradescope upload holds its own files
    only, and the import fails there. Read from the AST (nothing runs). An import through
    another module counts too (``through``: mha_reshape.py imports qkv.py, which imports
    row_softmax.py — both must go with it; blind tester R-M). Graded ``--assignment``
    (``Config.for_assignment``), the other assignments' modules are known by name only."""
    full = config.selected_from or config
    if config.assignment and config.handed_in_elsewhere:
        home = {skill.module: config.assignment for skill in full.skills.values()} | dict(config.handed_in_elsewhere)
    elif len(config.assignments) >= 2:
        home = {full.skills[s].module: name for name, skills in config.assignments.items() for s in skills if s in full.skills}
    else:
        return []
    imports = {
        module: [f"{other}.py" for other in sorted(exercise_api.imported_modules(data)) if f"{other}.py" in home]
        for module, data in sources.items()
    }
    found = []
    for module in sources:
        mine = home.get(module)
        if not mine:
            continue
        seen, queue = {module}, [(module, None)]
        while queue:  # breadth first: each module once, by its shortest chain of imports
            current, through = queue.pop(0)
            for other in imports.get(current, []):
                if other in seen:
                    continue
                seen.add(other)
                if home[other] != mine:
                    entry = {"file": module, "assignment": mine, "imports": other, "imports_assignment": home[other]}
                    found.append(entry | ({"through": through} if through else {}))
                queue.append((other, through or other))  # named by the first module on the way
    return found


def _exercise_imports(config: Config, sources: dict[str, bytes]) -> list[dict]:
    """Each exercise module (file → bytes) that imports another exercise module, with both
    skills: ``qkv.py`` taking ``causal_mask`` from ``masks.py`` runs the student's masks code in
    qkv's tests, so a masks mistake fails those too (blind tester R-L). Read from the AST."""
    full = config.selected_from or config
    skill_of = {skill.module: sid for sid, skill in full.skills.items()}
    found = []
    for module, data in sources.items():
        for other in sorted(exercise_api.imported_modules(data)):
            theirs = skill_of.get(f"{other}.py")
            if module in skill_of and theirs and f"{other}.py" != module:
                found.append({"file": module, "skill": skill_of[module], "imports": f"{other}.py", "imports_skill": theirs})
    return found


_COPY_SUFFIX = re.compile(r"(?:\s*\(\d+\)|\s*[-_ ]\s*copy(?:\s*\d+)?|\s+\d+)$", re.IGNORECASE)


def near_names(dir_fd: int | None, module: str) -> list[str]:
    """Files of the folder that are plainly ``module`` under another name: another case
    (``Qkv.py``), a download's ``masks (1).py``, ``qkv copy.py``. Never graded as the module —
    the report names them so the student can rename."""
    if dir_fd is None:
        return []
    want = module[:-3].casefold()
    try:
        names = os.listdir(dir_fd)
    except OSError:
        return []
    return sorted(
        n for n in names if n != module and n.lower().endswith(".py") and _COPY_SUFFIX.sub("", n[:-3]).strip().casefold() == want
    )


def helper_names(dir_fd: int, exercise_files: set[str]) -> list[str]:
    """The helper module candidates of the modules' folder: its other top-level ``.py`` files."""
    try:
        return sorted(n for n in os.listdir(dir_fd) if n.endswith(".py") and n not in exercise_files)
    except OSError:
        return []


def digest(path: str | Path, config: Config) -> str:
    """A hash of exactly what ``prepare`` reads from ``path`` — each exercise module and each
    helper candidate (the same selection), as its bytes or as the reason it is refused, and
    which folder held them — so that a batch reuses a result only while these are unchanged.
    Other files (data, notebooks, thousands of them) neither count nor cost time."""
    h = hashlib.sha256(b"submission-digest@1\0")
    module_files = list(config.exercise_modules)
    try:
        root = check(path, config)
    except SubmissionDirError as exc:
        h.update(f"unusable\0{exc}".encode("utf-8", "backslashreplace"))
        return h.hexdigest()
    h.update(f"root\0{os.path.relpath(root, os.path.realpath(path))}\0".encode("utf-8", "backslashreplace"))
    folder_problem = _link_problem(root)
    dir_fd = None if folder_problem else _open_dir(root)
    if dir_fd is None:
        h.update(f"folder\0{folder_problem or 'unreadable'}".encode())
        return h.hexdigest()
    limit = config.limits.max_module_kib * 1024
    try:
        for kind, names in (("module", module_files), ("helper", helper_names(dir_fd, set(module_files)))):
            for name in names:
                data, problem, _ = _read_checked(dir_fd, root, name, limit)
                h.update(f"{kind}\0{name}\0".encode("utf-8", "backslashreplace"))
                h.update(
                    b"data\0" + hashlib.sha256(data).digest()
                    if data is not None
                    else f"problem\0{problem}".encode("utf-8", "backslashreplace")
                )
    finally:
        os.close(dir_fd)
    return h.hexdigest()


def _copy_helpers(prepared: PreparedSubmission, config: Config, dir_fd: int, exercise_files: set[str], copy) -> None:
    """Top-level ``.py`` files besides the exercise modules become importable helper modules."""
    limits = config.limits
    names = helper_names(dir_fd, exercise_files)
    copied = 0
    total = 0
    for name in names:
        module = name[:-3]
        display = _display(prepared.root, name)
        info: dict = {"file": name, "display_path": display, "copy_path": None, "problem": None, "sha256": None}
        reason = shadowing_reason(module)
        data = None
        if reason:
            fix = "with letters, digits and _ only" if "UTF-8" in reason else f"(e.g. my_{module}.py)"
            info["problem"] = f"not importable: the name {reason} — rename it {fix}"
        else:
            data, problem, _ = _read_checked(dir_fd, prepared.root, name, limits.max_module_kib * 1024, what="helper modules")
            if problem:
                info["problem"] = f"not importable: {problem}"
            elif copied >= limits.max_helper_modules:
                info["problem"] = (
                    f"not importable: at most {limits.max_helper_modules} helper modules are ([limits] max_helper_modules)"
                )
                data = None
            elif total + len(data) > 4 * limits.max_module_kib * 1024:
                info["problem"] = f"not importable: helper modules together are limited to {4 * limits.max_module_kib} KiB"
                data = None
        if data is not None:
            info["copy_path"] = str(copy(name, data))
            info["sha256"] = hashlib.sha256(data).hexdigest()
            copied += 1
            total += len(data)
        prepared.content.append((name, info["sha256"]))
        prepared.helpers[module] = info
