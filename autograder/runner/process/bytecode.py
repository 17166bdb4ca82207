"""Runs without .pyc: the grader's and the suites' modules compiled ahead, on an idle core.

With ``PYTHONDONTWRITEBYTECODE`` set (Gradescope's run, a CI job on a fresh checkout, a
student who sets it) and no ``__pycache__`` beside the sources (a fresh copy), the trusted
process compiles every module it imports after torch — the grading plugin's parts and
~0.5 MB of suites — from source, ~0.2 s on the critical path of every run. Meanwhile the
command line, which only waits for the run once it has sent the manifest, has a core to
spare. So when it starts the early trusted process (early.Early.launch) it compiles those
sources into the run's private folder (``compile_ahead``, a background thread), and the
trusted process, told the folder in its header, reads them from there (``install``) —
through a loader for the grading root's folders only, so every other module (torch's,
pytest's) keeps its own ``__pycache__``.

Nothing is written next to the sources (what ``PYTHONDONTWRITEBYTECODE`` asks), and the
folder goes with the run folder. A compiled file is used only while its source has the
size and modification time it was compiled from (the check ``.pyc`` files get); a file not
compiled yet, or stale, is compiled from source as before. Nothing here changes what runs,
only when its compilation happens.

Written here rather than with ``sys.pycache_prefix``: that moves every module's cache,
torch's included, so each lazy torch import during the tests would compile from source.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import marshal
import os
import sys
import threading

#: the grader's folders a trusted process never imports (a course repository's instructors' commands)
SKIP_DIRS = frozenset({"instructor", "__pycache__"})
HEADER_SIZE = 16  # magic, flags, source mtime, source size (importlib's .pyc layout, PEP 552)


def cached_path(folder: str, source: str) -> str:
    """Where ``source``'s code compiled ahead lies in ``folder`` (one flat folder)."""
    return os.path.join(folder, hashlib.sha1(os.path.abspath(source).encode()).hexdigest()[:24] + ".pyc")


def _fresh(data: bytes, source: str) -> bool:
    """``data`` (a .pyc file's bytes) is this Python's and compiled from ``source`` as it is now."""
    if len(data) < HEADER_SIZE or data[:4] != importlib.util.MAGIC_NUMBER:
        return False
    flags = int.from_bytes(data[4:8], "little")
    if flags:  # hash-based (compileall --invalidation-mode): valid as written (unchecked) or checked on import
        return True
    try:
        st = os.stat(source)
    except OSError:
        return False
    return (
        int.from_bytes(data[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF
        and int.from_bytes(data[12:16], "little") == st.st_size & 0xFFFFFFFF
    )


def _has_fresh_pyc(source: str) -> bool:
    try:
        with open(importlib.util.cache_from_source(source), "rb") as fh:
            return _fresh(fh.read(HEADER_SIZE), source)
    except (OSError, ValueError, NotImplementedError):
        return False


def uncompiled(folders: list[str]) -> list[str]:
    """The ``.py`` files under ``folders`` without a fresh ``.pyc`` beside them, in order."""
    found = []
    for top in folders:
        for parent, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            found += [os.path.join(parent, f) for f in sorted(files) if f.endswith(".py")]
    return [source for source in dict.fromkeys(found) if not _has_fresh_pyc(source)]


def wanted(root: str, suites: str) -> list[str]:
    """What a run graded from ``root`` would compile from source (empty when it writes or has
    bytecode): the grader's package and the suites."""
    if not sys.dont_write_bytecode:
        return []  # the run writes its .pyc beside the sources, once
    return uncompiled(roots(root, suites))


#: compile-ahead threads still running, by folder (``stop_under``)
_RUNNING: dict[str, tuple[threading.Event, threading.Lock]] = {}


def compile_ahead(folder: str, root: str, suites: str) -> threading.Thread:
    """Compile what a run from ``root`` would compile from source (``wanted``) into
    ``folder`` (made here, private) in a daemon thread. Each file is written whole (a
    temporary file, then renamed) and never a folder: once the run folder is removed
    (``stop_under``, called by trusted.remove_run_dir) nothing reappears. A source that
    does not compile is left to the import, which reports it as always."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    stop, lock = threading.Event(), threading.Lock()

    def run() -> None:
        try:
            for source in wanted(root, suites):
                with lock:
                    if stop.is_set() or not _write(folder, source):
                        return
        finally:
            _RUNNING.pop(folder, None)

    thread = threading.Thread(target=run, name="autograder-compile-ahead", daemon=True)
    _RUNNING[folder] = (stop, lock)
    thread.start()
    return thread


def _write(folder: str, source: str) -> bool:
    """``source``'s code, as a ``.pyc`` (importlib's layout), in ``folder``; False once the
    folder is gone. A source that cannot be read or compiled is skipped."""
    try:
        st = os.stat(source)
        with open(source, "rb") as fh:
            code = compile(fh.read(), source, "exec", dont_inherit=True)
    except (OSError, SyntaxError, ValueError):
        return True
    header = importlib.util.MAGIC_NUMBER + b"\0\0\0\0"
    header += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    target = cached_path(folder, source)
    try:
        fd = os.open(target + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return False  # the folder is gone (the run ended): stop
    with os.fdopen(fd, "wb") as fh:
        fh.write(header + marshal.dumps(code))
    os.replace(target + ".tmp", target)
    return True


def stop_under(folder: str) -> None:
    """Stop every compile-ahead writing under ``folder`` (after the file it is writing)."""
    top = os.path.abspath(folder)
    for path, (stop, lock) in list(_RUNNING.items()):
        if os.path.abspath(path).startswith(top + os.sep):
            with lock:
                stop.set()


class _AheadLoader(importlib.machinery.SourceFileLoader):
    """A source file's loader that takes its code from the folder compiled ahead when the
    code there is fresh, and compiles the source otherwise (``SourceFileLoader``)."""

    folder = ""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        try:
            with open(cached_path(self.folder, path), "rb") as fh:
                data = fh.read()
            if _fresh(data, path):
                return marshal.loads(memoryview(data)[HEADER_SIZE:])
        except (OSError, ValueError, EOFError, TypeError):
            pass
        return super().get_code(fullname)


def roots(root: str, suites: str) -> list[str]:
    """The folders whose modules are compiled ahead (never the root itself: it may hold the
    virtual environment)."""
    return [os.path.join(root, "autograder"), suites]


def install(folder: str, roots: list[str]) -> None:
    """From now on, modules under ``roots`` are loaded from ``folder`` where it has their code
    (see the module's docstring); modules already imported stay as they are."""
    loader = type("AheadLoader", (_AheadLoader,), {"folder": folder})
    tops = [os.path.abspath(r) for r in roots]
    details = [
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
        (loader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
    ]

    def inside(path: str) -> bool:
        full = os.path.abspath(path or os.getcwd())
        return any(full == top or full.startswith(top + os.sep) for top in tops)

    def hook(path: str):
        if not inside(path):
            raise ImportError("not a folder compiled ahead")  # the next hook (the default FileFinder) takes it
        return importlib.machinery.FileFinder(path, *details)

    sys.path_hooks.insert(0, hook)
    for path in [p for p in sys.path_importer_cache if inside(p)]:
        del sys.path_importer_cache[path]  # found again, through the hook
