"""What the release builders share: the grader's file set, ``grading.toml`` without hidden
entries, and byte-for-byte reproducible zips and trees.

Same commit + same version → the same bytes: files are listed in sorted order, zip entries
carry the fixed timestamp 1980-01-01 00:00 and fixed permissions (0755 for a file that
starts with ``#!``, 0644 otherwise), and nothing records the time or the machine.
"""

from __future__ import annotations

import re
import stat
import tomllib
import zipfile
from pathlib import Path

from ...config import VISIBLE_SUITES, VISIBLE_SUM, VISIBLE_TESTS, Config, student_copy
from ...runner.identity import COURSE_PACKAGE, course_closure, suite_files  # noqa: F401 (re-exported)
from ...runner.identity import _tree as identity_tree

#: the zip format's earliest timestamp: no build time ends up in an artifact
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
#: never shipped: caches and build leftovers
#: the instructors' tools (the release tooling, batch grading of a class, the suite author's
#: `make new-test`) stay with the instructors: one folder, left out of every copy of the grader
#: (neither a student nor Gradescope runs them; the leak audit flags it in a student tree)
INSTRUCTOR_DIR = "autograder/instructor/"


def executable(data: bytes) -> bool:
    return data.startswith(b"#!")


def file_mode(data: bytes) -> int:
    return 0o755 if executable(data) else 0o644


def write_zip_deterministic(path: Path, files: dict[str, bytes]) -> Path:
    """Write ``files`` ({arcname: bytes}) as a zip whose bytes depend on nothing else."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for name in sorted(files):
            if name.startswith("/") or ".." in Path(name).parts:
                raise ValueError(f"zip entry {name!r} must be a relative path inside the archive")
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.create_system = 3  # unix: the permission bits below are honoured
            info.external_attr = (stat.S_IFREG | file_mode(files[name])) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name], compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    tmp.replace(path)
    return path


def write_tree(root: Path, files: dict[str, bytes]) -> list[Path]:
    """Write ``files`` under ``root`` (which must not exist yet or be empty), with the same
    permissions a zip of them would carry. Returns the paths written, sorted."""
    root = Path(root)
    written = []
    for name in sorted(files):
        target = root / name
        if ".." in Path(name).parts or Path(name).is_absolute():
            raise ValueError(f"{name!r} must be a relative path inside {root}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[name])
        target.chmod(file_mode(files[name]))
        written.append(target)
    return written


# one file walk for the suites' identity and the release: the same files count in both
_tree = identity_tree


# --------------------------------------------------------------------------- grading.toml
_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _blocks(text: str) -> list[tuple[str | None, list[str]]]:
    """Split TOML text into (header key or None, lines) blocks at every table header."""
    blocks: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in text.splitlines(keepends=True):
        m = _HEADER.match(line)
        if m and not line.lstrip().startswith("#"):
            blocks.append((m.group(1), [line]))
        else:
            blocks[-1][1].append(line)
    return blocks


def _fmt_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def filtered_grading_toml(config_text: str, include_hidden: bool) -> str:
    """``grading.toml`` for a release. With ``include_hidden`` (Gradescope, nbgrader) it is
    unchanged. Without (the student repository): every hidden suite is removed, each skill's
    ``points`` become the sum of its visible weights (so the file still validates and the
    local score is out of what can be checked locally), gates that named hidden tests go,
    and a comment at the top says so. Comments and layout of what stays are kept. Which keys
    are treated so is their declaration's (``Key.student`` in autograder/config.py)."""
    if include_hidden:
        return config_text
    summed, to_visible = "|".join(student_copy(VISIBLE_SUM)), "|".join(student_copy(VISIBLE_TESTS))
    (suites_key,) = student_copy(VISIBLE_SUITES)
    data = tomllib.loads(config_text)
    skills = data.get("skills", {})
    visible_points: dict[str, float] = {}
    visible_tests: dict[str, set[str]] = {}
    for sid, skill in skills.items():
        suites = [s for s in skill.get(suites_key, []) if s.get("visibility") == "visible"]
        visible_points[sid] = sum(sum(s.get("weights", {}).values()) for s in suites)
        visible_tests[sid] = {name for s in suites for name in s.get("weights", {})}
        if not suites:
            raise ValueError(f"grading.toml: skill {sid} has no visible suite: the student release could not grade it")
    full_points = {sid: skill.get("points", 0) for sid, skill in skills.items()}

    out: list[str] = []
    blocks = _blocks(config_text)
    i = 0
    while i < len(blocks):
        key, lines = blocks[i]
        m = re.fullmatch(rf"skills\.([a-z][a-z0-9_]*)\.{suites_key}", key or "")
        if m:  # a [[skills.X.suites]] entry and its [skills.X.suites.weights] table
            group = [blocks[i]]
            while i + 1 < len(blocks) and (blocks[i + 1][0] or "").startswith(f"{key}."):
                i += 1
                group.append(blocks[i])
            body = "".join("".join(ls) for _, ls in group)
            entry = tomllib.loads(body.replace(f"[[{key}]]", "[entry]", 1).replace(f"[{key}.", "[entry.", 1))
            if entry.get("entry", {}).get("visibility") == "visible":
                out.append(body)
            else:
                # keep the blank lines that separated it from the next skill
                trailing = re.search(r"\n*$", body).group(0)
                out.append(trailing[1:] if out and out[-1].endswith("\n\n") else trailing[1:])
            i += 1
            continue
        m = re.fullmatch(r"skills\.([a-z][a-z0-9_]*)", key or "")
        if m and m.group(1) in skills:
            sid = m.group(1)
            new = []
            for line in lines:
                if m_sum := re.match(rf"^\s*({summed})\s*=", line):
                    line = (
                        f"{m_sum.group(1)} = {_fmt_number(visible_points[sid])}  # visible tests only; the course "
                        f"autograder grades out of {_fmt_number(full_points[sid])}\n"
                    )
                elif m_list := re.match(rf"^\s*({to_visible})\s*=", line):
                    key = m_list.group(1)
                    kept = [g for g in skills[sid].get(key, []) if g in visible_tests[sid]]
                    if not kept:
                        continue
                    line = f"{key} = [" + ", ".join(f'"{g}"' for g in kept) + "]\n"
                new.append(line)
            out.append("".join(new))
        else:
            out.append("".join(lines))
        i += 1
    note = (
        "# Student release: only the visible tests are listed, and each skill's points are the sum of\n"
        "# their weights. The course autograder also runs hidden tests (fresh inputs, properties and\n"
        "# the exercises' rules) and grades out of the full points.\n"
    )
    text = note + "".join(out)
    text = re.sub(r"\n{3,}", "\n\n\n", text)
    tomllib.loads(text)  # still valid TOML
    return text


def assignment_grading_toml(config_text: str, skills: tuple[str, ...]) -> str:
    """``grading.toml`` for one assignment's bundle: only its skills (their tables and suites),
    their rules, and no ``[release.assignments]`` (the bundle is one of them). Comments and
    layout of what stays are kept."""
    out = []
    for key, lines in _blocks(config_text):
        m = re.fullmatch(r"skills\.([a-z][a-z0-9_]*)(?:\..*)?", key or "")
        if (m and m.group(1) not in skills) or key == "release.assignments":
            continue
        if key == "release.rules":
            lines = [
                line
                for line in lines
                if not (
                    re.match(r"^\s*([a-z][a-z0-9_]*)\s*=", line)
                    and re.match(r"^\s*([a-z][a-z0-9_]*)", line).group(1) not in skills
                )
            ]
        out.append("".join(lines))
    text = re.sub(r"\n{3,}", "\n\n\n", "".join(out))
    tomllib.loads(text)  # still valid TOML
    return text


# --------------------------------------------------------------------------- the grader
def grader_files(ctx, include_hidden: bool) -> dict[str, bytes]:
    """{repository-relative path: bytes} of the grader to ship: the ``autograder`` package
    (without ``autograder/instructor/``, the instructors' tools), ``grading.toml`` (filtered unless ``include_hidden``),
    ``requirements.txt``, and under ``tests/suites/`` the suites that grade with it, the
    ``course`` helpers those suites import (found by parsing their imports) and the data files
    those helpers name, each skill's ``hints.toml`` and snapshot data. With ``include_hidden`` also the hidden suites, the
    helper modules beside them (``tests/suites/<skill>/mistakes.py``; never ``snapshot_cases.py``) and ``solutions/``
    (hidden tests compare with the reference through the ``ref`` fixture).
    """
    repo: Path = ctx.repo
    config: Config = ctx.config
    files: dict[str, bytes] = {}
    for rel, data in _tree(repo, repo / "autograder").items():
        if not rel.startswith(INSTRUCTOR_DIR):
            files[rel] = data
    files["grading.toml"] = filtered_grading_toml(config.path.read_text(encoding="utf-8"), include_hidden).encode()
    files["requirements.txt"] = (repo / "requirements.txt").read_bytes()

    files.update(suite_files(config, include_hidden))
    files.update(doc_files(ctx))
    return files


def doc_files(ctx) -> dict[str, bytes]:
    """``[release] docs``: the exercise contract and the lessons the hints cite (hint sections
    resolve to lines in them: autograder/core/feedback/citations.py)."""
    files = {}
    for doc in ctx.config.release.get("docs", []):
        path = ctx.repo / doc
        if path.is_dir():
            files.update(_tree(ctx.repo, path))
        elif path.is_file():
            files[doc] = path.read_bytes()
        else:
            raise FileNotFoundError(f"grading.toml: [release] docs lists {doc}, which does not exist")
    return files
