"""Find the exercise modules in a Gradescope upload.

Gradescope puts a submission in ``/autograder/submission`` as the student made it: the
``.py`` files themselves, a zipped folder (unpacked by Gradescope, so one folder deeper), a
GitHub-linked repository (the modules under ``exercises/``), or a ``.zip`` that was not
unpacked. The folder holding the most exercise modules wins (then the shallowest); a zip is
read only when no folder holds any, and only its exercise modules are taken out of it —
nothing is extracted blindly, so a zip cannot write outside the work folder, plant a
symlink or fill the disk. Anything that cannot be graded raises ``UploadError`` with a
message for the student — an encrypted, damaged, truncated or oddly compressed zip included:
that is the upload's problem (the fix is named), never the grader's.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
from pathlib import Path, PurePosixPath

from ..renderers.common import clean
from ..runner.submission import SKIP_DIRS

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
        raise UploadError(
            f"the upload holds {len(zips)} zip files ({names}) and no exercise modules — upload the .py files "
            f"({_expected(modules)}) or one zip of them"
        )
    if zips:
        return _from_zip(zips[0], upload, modules, work, max_module_bytes)
    listed = ", ".join(_name(o) for o in others) or "nothing"
    raise UploadError(
        f"no exercise modules in the upload: expected {_expected(modules)} (at the top, or in an exercises/ "
        f"folder); the upload holds {listed}"
    )


#: what reading an uploaded zip may raise — every one of them the upload's fault: a damaged
#: or truncated archive (BadZipFile, EOFError, zlib.error / OSError / LZMAError from the
#: decompressors, struct.error from a mangled header), a password (RuntimeError), a method
#: this Python cannot unpack (NotImplementedError), ZIP64 sizes (LargeZipFile)
_ZIP_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    RuntimeError,
    EOFError,
    OSError,
    ValueError,
    struct.error,
    OverflowError,
)
try:  # like zipfile itself: a Python built without zlib or liblzma still runs (those members then raise RuntimeError)
    import zlib

    _ZIP_ERRORS += (zlib.error,)
except ImportError:  # pragma: no cover
    pass
try:
    import lzma

    _ZIP_ERRORS += (lzma.LZMAError,)
except ImportError:  # pragma: no cover
    pass
_ENCRYPTED = 0x1 | 0x40  # general purpose flag bits: traditional (ZipCrypto / AES) and strong encryption


def _encrypted_message(shown: str, member: str, modules: list[str]) -> str:
    return (
        f"{shown} is encrypted (a password protects {_name(member)}) — upload the .py files themselves "
        f"({_expected(modules)}), or a zip made without a password"
    )


def _damaged_message(shown: str, member: str | None, exc: BaseException, modules: list[str]) -> str:
    if isinstance(exc, NotImplementedError) and "compression" in str(exc):
        return (
            f"{shown} uses a compression method that cannot be unpacked here ({_name(member or '?')}) — upload the .py "
            f"files themselves ({_expected(modules)}), or a zip made with ordinary (deflate) compression"
        )
    what = f"{_name(member)} in it cannot be unpacked" if member else "it cannot be read"
    return (
        f"{shown} is damaged: {what} ({clean(exc, 100) or type(exc).__name__}) — zip the files again, "
        f"or upload the .py files themselves ({_expected(modules)})"
    )


def locate_zip(archive: Path, modules: list[str], work: Path, max_module_bytes: int) -> tuple[Path, str]:
    """The exercise modules of one zip (a batch student's ``.zip``), as ``locate`` takes them from an uploaded one."""
    return _from_zip(archive, archive.parent, modules, work, max_module_bytes)


def _open_archive(archive: Path, shown: str):
    """The zip opened without following a link; a FIFO or device in its place is refused, never read."""
    try:
        fd = os.open(archive, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UploadError(f"{shown} cannot be read ({exc.strerror or exc}) — upload the .py files themselves") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UploadError(f"{shown} is not a regular file — upload the .py files themselves")
    return os.fdopen(fd, "rb")


def _from_zip(archive: Path, upload: Path, modules: list[str], work: Path, max_module_bytes: int) -> tuple[Path, str]:
    shown = _name(str(archive.relative_to(upload)))
    member: str | None = None  # the member being read when the zip turns out unreadable
    with _open_archive(archive, shown) as fh:
        try:
            with zipfile.ZipFile(fh) as zf:
                infos = zf.infolist()[:MAX_ZIP_MEMBERS]
                members: dict[PurePosixPath, int] = {}
                chosen: dict[PurePosixPath, dict[str, zipfile.ZipInfo]] = {}  # folder → module name → its (last) entry
                inner_zips = []
                for info in infos:
                    path = PurePosixPath(info.filename.replace("\\", "/"))
                    if info.is_dir() or path.is_absolute() or ".." in path.parts or stat.S_ISLNK(info.external_attr >> 16):
                        continue
                    if any(part in SKIP_DIRS or part == "__MACOSX" for part in path.parts) or len(path.parts) > MAX_DEPTH + 1:
                        continue
                    if path.name in modules:
                        chosen.setdefault(path.parent, {})[path.name] = info  # a name given twice counts once
                        members[path.parent] = len(chosen[path.parent])
                    elif path.name.lower().endswith(".zip"):
                        inner_zips.append(path)
                if not members:
                    if inner_zips:
                        raise UploadError(
                            f"{shown} holds another zip ({_name(str(inner_zips[0]))}) and no exercise modules: "
                            "a zip inside a zip is not unpacked — "
                            f"zip the .py files themselves ({_expected(modules)}), or upload them without a zip"
                        )
                    names = ", ".join(_name(i.filename) for i in infos[:8]) or "nothing"
                    raise UploadError(f"{shown} holds no exercise modules (expected {_expected(modules)}); it holds {names}")
                folder = _best(members, lambda p: len(p.parts) if str(p) != "." else 0)
                data: dict[str, bytes] = {}
                for name, info in sorted(chosen[folder].items()):
                    member = info.filename
                    if info.flag_bits & _ENCRYPTED:
                        raise UploadError(_encrypted_message(shown, member, modules))
                    with zf.open(info) as src:
                        # one byte over the limit is enough for the grader to say the module is too large
                        data[name] = src.read(max_module_bytes + 1)
        except UploadError:
            raise
        except _ZIP_ERRORS as exc:
            if member is None and isinstance(exc, zipfile.BadZipFile):
                raise UploadError(
                    f"{shown} is not a zip archive that can be read ({clean(exc, 120)}) — upload the .py files themselves"
                ) from None
            if isinstance(exc, RuntimeError) and ("password" in str(exc) or "encrypt" in str(exc)):
                raise UploadError(_encrypted_message(shown, member or "?", modules)) from None
            raise UploadError(_damaged_message(shown, member, exc, modules)) from None
    target = work / "upload"
    target.mkdir(mode=0o755)
    for name, content in data.items():
        (target / name).write_bytes(content)
    inside = "its top folder" if str(folder) == "." else _name(str(folder))
    return target, f"graded the modules in {inside} of {shown}"
