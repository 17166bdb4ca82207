"""Find the exercise modules in a Gradescope upload.

Gradescope puts a submission in ``/autograder/submission`` as the student made it: the
``.py`` files themselves, a zipped folder (unpacked by Gradescope, so one folder deeper), a
GitHub-linked repository (the modules under ``exercises/``), or a ``.zip`` that was not
unpacked. Which folder is graded is decided by ``runner/submission.choose_folder``, the one
rule of every path (``grade``, batch, Gradescope): the most written exercise functions, then
the most exercise modules, then the shallowest. A zip is read only when no folder holds any;
the same rule picks its folder, and only that folder's exercise modules and other top-level
``.py`` files (helper modules, as a folder's would be) are taken out of it — nothing is
extracted blindly, so a zip cannot write outside the work folder, plant a symlink or fill
the disk. Anything that cannot be graded raises ``UploadError`` with a
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
from ..runner.submission import (
    MAX_DEPTH,
    MAX_ENTRIES,
    SKIP_DIRS,
    choose_folder,
    folder_candidates,
    shortlist,
    written_functions,
)

MAX_ZIP_MEMBERS = 20_000
#: a zip whose central directory lists more entries than this, or takes more bytes, is refused
#: before it is parsed: zipfile reads every entry into memory first (~500 bytes each), and a
#: 120 MB zip of two million entries took 30 s and 1 GB of the trusted process (blind tester R-CO)
MAX_ZIP_LISTED = 10 * MAX_ZIP_MEMBERS
MAX_ZIP_DIRECTORY_BYTES = 32 << 20
#: helper modules (the chosen folder's other top-level .py files) taken out of a zip at most:
#: more than [limits] max_helper_modules, so that the grader says why the rest are refused,
#: exactly as for a folder
MAX_ZIP_HELPERS = 64


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


def _scan(upload: Path) -> tuple[list[Path], list[str]]:
    """(zip files, a few other file names) of an upload that holds no exercise modules."""
    zips: list[Path] = []
    others: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(upload, followlinks=False):
        here = Path(dirpath)
        depth = len(here.relative_to(upload).parts)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS) if depth < MAX_DEPTH else []
        for name in sorted(filenames):
            seen += 1
            if name.lower().endswith(".zip") and _is_file(here / name):
                zips.append(here / name)
            elif len(others) < 8:
                others.append(str((here / name).relative_to(upload)))
        if seen > MAX_ENTRIES:
            break
    return zips, others


def locate(upload: Path, modules: list[str], work: Path, max_module_bytes: int) -> tuple[Path, str]:
    """(the folder to grade, a note saying where the modules were found). Which folder:
    ``submission.choose_folder``, the one rule of every path."""
    if not upload.is_dir():
        raise UploadError("the submission folder is missing — upload your exercise modules again")
    holders = folder_candidates(upload, modules, max_module_bytes)
    if holders:
        best, why = choose_folder({p.relative_to(upload): m for p, m in holders.items()}, lambda p: len(p.parts))
        where = "the top folder" if not best.parts else _name(str(best))
        return upload / best, f"graded the modules in {where} of the upload" + (f" ({clean(why, 300)})" if why else "")
    zips, others = _scan(upload)
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


def _listed(fh) -> tuple[int, int] | None:
    """(entries, bytes) of the zip's central directory, as its end records state them; None
    where there is no end record (``zipfile`` then says why the zip cannot be read). Written
    here: ``zipfile`` reads the whole directory before it says how large it is, and its own
    reader of the end records is private."""
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    tail_start = max(0, size - (22 + 0xFFFF))  # the end record, then a comment of up to 64 KiB
    fh.seek(tail_start)
    tail = fh.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    entries, length = struct.unpack_from("<HI", tail, at + 10)
    locator = at - 20  # a ZIP64 zip: its locator just before, pointing at the ZIP64 end record
    if (entries == 0xFFFF or length == 0xFFFFFFFF) and locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":
        (offset,) = struct.unpack_from("<Q", tail, locator + 8)
        fh.seek(offset)
        record = fh.read(56)
        if len(record) == 56 and record[:4] == b"PK\x06\x06":
            entries, length = struct.unpack_from("<QQ", record, 32)
    fh.seek(0)
    return entries, length


def _importable(filename: str) -> bool:
    """Whether a helper ``.py`` file could be imported by its name, and so is worth taking out
    of a zip: a Python identifier, within a file name's 255 bytes (a 300-character helper's
    name failed the copy and gave the student 0 as a grader error, every run: blind red-team
    tester R-BZ)."""
    stem = filename[:-3]
    return stem.isidentifier() and len(filename.encode("utf-8", "surrogateescape")) <= 255


def _from_zip(archive: Path, upload: Path, modules: list[str], work: Path, max_module_bytes: int) -> tuple[Path, str]:
    shown = _name(str(archive.relative_to(upload)))
    member: str | None = None  # the member being read when the zip turns out unreadable
    with _open_archive(archive, shown) as fh:
        listed = _listed(fh)
        if listed is not None and (listed[0] > MAX_ZIP_LISTED or listed[1] > MAX_ZIP_DIRECTORY_BYTES):
            raise UploadError(
                f"{shown} lists {listed[0]} entries ({listed[1] >> 20} MiB of directory): too many to read — "
                f"zip only the exercise modules ({_expected(modules)}), or upload them without a zip"
            )
        try:
            with zipfile.ZipFile(fh) as zf:
                infos = zf.infolist()[:MAX_ZIP_MEMBERS]
                chosen: dict[PurePosixPath, dict[str, zipfile.ZipInfo]] = {}  # folder → module name → its (last) entry
                py_files: dict[PurePosixPath, dict[str, zipfile.ZipInfo]] = {}  # folder → other .py name → entry
                inner_zips = []
                for info in infos:
                    path = PurePosixPath(info.filename.replace("\\", "/"))
                    if info.is_dir() or path.is_absolute() or ".." in path.parts or stat.S_ISLNK(info.external_attr >> 16):
                        continue
                    if any(part in SKIP_DIRS or part == "__MACOSX" for part in path.parts) or len(path.parts) > MAX_DEPTH + 1:
                        continue
                    if path.name in modules:
                        chosen.setdefault(path.parent, {})[path.name] = info  # a name given twice counts once
                    elif path.name.endswith(".py") and _importable(path.name):
                        py_files.setdefault(path.parent, {})[path.name] = info
                    elif path.name.lower().endswith(".zip"):
                        inner_zips.append(path)
                if not chosen:
                    if inner_zips:
                        raise UploadError(
                            f"{shown} holds another zip ({_name(str(inner_zips[0]))}) and no exercise modules: "
                            "a zip inside a zip is not unpacked — "
                            f"zip the .py files themselves ({_expected(modules)}), or upload them without a zip"
                        )
                    names = ", ".join(_name(i.filename) for i in infos[:8]) or "nothing"
                    raise UploadError(f"{shown} holds no exercise modules (expected {_expected(modules)}); it holds {names}")

                def read(info: zipfile.ZipInfo) -> bytes:
                    nonlocal member
                    member = info.filename
                    if info.flag_bits & _ENCRYPTED:
                        raise UploadError(_encrypted_message(shown, member, modules))
                    with zf.open(info) as src:
                        # one byte over the limit is enough for the grader to say the module is too large
                        return src.read(max_module_bytes + 1)

                def peek(info: zipfile.ZipInfo) -> bytes | None:
                    """A candidate's bytes for choosing the folder (an unreadable one counts as nothing)."""
                    try:
                        return read(info)
                    except (UploadError, *_ZIP_ERRORS):
                        return None

                depth = lambda p: len(p.parts)
                candidates = {
                    folder: {n: written_functions(peek(i)) for n, i in chosen[folder].items()}
                    for folder in shortlist(chosen, depth)
                }
                folder, why = choose_folder(candidates, depth)
                data: dict[str, bytes] = {}
                for name, info in sorted(chosen[folder].items()):
                    data[name] = read(info)
                # the folder's other top-level .py files: helper modules, as a folder's would be
                # (one that cannot be unpacked is left out: its import fails, as an unreadable file's would)
                for name, info in sorted(py_files.get(folder, {}).items())[:MAX_ZIP_HELPERS]:
                    helper = peek(info)
                    if helper is not None:
                        data[name] = helper
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
    return target, f"graded the modules in {inside} of {shown}" + (f" ({clean(why, 300)})" if why else "")
