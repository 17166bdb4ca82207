"""Find the exercise modules in a Gradescope upload.

Gradescope puts a submission in ``/autograder/submission`` as the student made it: the
``.py`` files themselves, a zipped folder (unpacked by Gradescope, so one folder deeper), a
GitHub-linked repository (the modules under ``exercises/``), or a ``.zip`` that was not
unpacked. The folder holding the most exercise modules wins (then the shallowest); a zip is
read only when no folder holds any, and only its exercise modules are taken out of it —
nothing is extracted blindly, so a zip cannot write outside the work folder, plant a
symlink or fill the disk. Anything that cannot be graded raises ``UploadError`` with a
message for the student.
"""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path, PurePosixPath

from ..renderers.common import clean
from .submission import SKIP_DIRS

MAX_DEPTH = 4  # repository/exercises/… or zip-folder/repository/exercises/…
MAX_ENTRIES = 20_000  # walking a huge upload stops here
MAX_ZIP_MEMBERS = 20_000


class UploadError(Exception):
    """The upload cannot be graded at all; ``str()`` tells the student what to upload instead."""


def _name(text: str) -> str:
    return repr(clean(text, 120))


def _expected(modules: list[str]) -> str:
    return ", ".join(modules)


def _is_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _scan(upload: Path, modules: set[str]) -> tuple[dict[Path, int], list[Path], list[str]]:
    """(folders holding exercise modules → how many, zip files, a few other file names)."""
    holders: dict[Path, int] = {}
    zips: list[Path] = []
    others: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(upload, followlinks=False):
        here = Path(dirpath)
        depth = len(here.relative_to(upload).parts)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS) if depth < MAX_DEPTH else []
        for name in sorted(filenames):
            seen += 1
            if name in modules:
                holders[here] = holders.get(here, 0) + 1
            elif name.lower().endswith(".zip") and _is_file(here / name):
                zips.append(here / name)
            elif len(others) < 8:
                others.append(str((here / name).relative_to(upload)))
        if seen > MAX_ENTRIES:
            break
    return holders, zips, others


def _best(holders: dict, depth) -> object:
    """Most modules first, then the shallowest, then the first by name."""
    return min(holders, key=lambda k: (-holders[k], depth(k), str(k)))


def locate(upload: Path, modules: list[str], work: Path, max_module_bytes: int) -> tuple[Path, str]:
    """(the folder to grade, a note saying where the modules were found)."""
    if not upload.is_dir():
        raise UploadError("the submission folder is missing — upload your exercise modules again")
    holders, zips, others = _scan(upload, set(modules))
    if holders:
        best = _best(holders, lambda p: len(p.relative_to(upload).parts))
        rel = best.relative_to(upload)
        return best, f"graded the modules in {'the top folder' if not rel.parts else _name(str(rel))} of the upload"
    if len(zips) > 1:
        names = ", ".join(_name(str(z.relative_to(upload))) for z in zips[:4])
        raise UploadError(f"the upload holds {len(zips)} zip files ({names}) and no exercise modules — upload the .py files ({_expected(modules)}) or one zip of them")
    if zips:
        return _from_zip(zips[0], upload, modules, work, max_module_bytes)
    listed = ", ".join(_name(o) for o in others) or "nothing"
    raise UploadError(f"no exercise modules in the upload: expected {_expected(modules)} (at the top, or in an exercises/ folder); the upload holds {listed}")


def _from_zip(archive: Path, upload: Path, modules: list[str], work: Path, max_module_bytes: int) -> tuple[Path, str]:
    shown = _name(str(archive.relative_to(upload)))
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()[:MAX_ZIP_MEMBERS]
            members: dict[PurePosixPath, int] = {}
            chosen: dict[PurePosixPath, list[zipfile.ZipInfo]] = {}
            inner_zips = []
            for info in infos:
                path = PurePosixPath(info.filename.replace("\\", "/"))
                if info.is_dir() or path.is_absolute() or ".." in path.parts or stat.S_ISLNK(info.external_attr >> 16):
                    continue
                if any(part in SKIP_DIRS or part == "__MACOSX" for part in path.parts) or len(path.parts) > MAX_DEPTH + 1:
                    continue
                if path.name in modules:
                    members[path.parent] = members.get(path.parent, 0) + 1
                    chosen.setdefault(path.parent, []).append(info)
                elif path.name.lower().endswith(".zip"):
                    inner_zips.append(path)
            if not members:
                if inner_zips:
                    raise UploadError(
                        f"{shown} holds another zip ({_name(str(inner_zips[0]))}) and no exercise modules: a zip inside a zip is not "
                        f"unpacked — zip the .py files themselves ({_expected(modules)}), or upload them without a zip")
                names = ", ".join(_name(i.filename) for i in infos[:8]) or "nothing"
                raise UploadError(f"{shown} holds no exercise modules (expected {_expected(modules)}); it holds {names}")
            folder = _best(members, lambda p: len(p.parts) if str(p) != "." else 0)
            target = work / "upload"
            target.mkdir(mode=0o755)
            for info in chosen[folder]:
                with zf.open(info) as src:
                    # one byte over the limit is enough for the grader to say the module is too large
                    data = src.read(max_module_bytes + 1)
                (target / PurePosixPath(info.filename).name).write_bytes(data)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
        raise UploadError(f"{shown} is not a zip archive that can be read ({clean(exc, 120)}) — upload the .py files themselves") from None
    inside = "its top folder" if str(folder) == "." else _name(str(folder))
    return target, f"graded the modules in {inside} of {shown}"
