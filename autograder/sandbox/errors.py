"""An exception raised in a worker as facts the trusted side may read: its type, message,
the submission's own frames (file, line, function) and which submission file raised it."""

from __future__ import annotations

from typing import Any


def safe_str(value: Any, limit: int = 4000) -> str:
    try:
        text = str(value)
    except BaseException:  # a hostile __str__ must not crash the reply
        text = "<unprintable>"
    return text[:limit]


def error_facts(exc: BaseException, copy_dir: str) -> dict:
    tp = type(exc)
    facts: dict[str, Any] = {
        "type": tp.__name__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__qualname__}",
        "message": safe_str(exc),
        "base": next((c.__name__ for c in tp.__mro__ if c.__module__ == "builtins"), "BaseException"),
        "frames": [],
    }
    prefix = copy_dir.rstrip("/") + "/"
    try:
        # the traceback's entries as traceback.extract_tb(tb, limit=64) lists them, without the
        # source lines it would look up for each (a stat and a read per file: 66 against 11 µs
        # a call that raised, and a stub's every call raises); only file, line and function are sent
        tb, seen = exc.__traceback__, 0
        while tb is not None and seen < 64:
            code = tb.tb_frame.f_code
            if code.co_filename.startswith(prefix):
                facts["frames"].append({"file": code.co_filename[len(prefix) :], "line": tb.tb_lineno, "function": code.co_name})
            tb, seen = tb.tb_next, seen + 1
        if isinstance(exc, SyntaxError) and exc.filename and str(exc.filename).startswith(prefix):
            facts["frames"].append({"file": str(exc.filename)[len(prefix) :], "line": exc.lineno or 0, "function": "<module>"})
            facts["message"] = safe_str(exc.msg)
        if isinstance(exc, SystemExit):
            facts["exit_code"] = safe_str(repr(exc.code), 200)
        facts["raised_in"] = _raised_in(exc, prefix)
    except BaseException:
        pass
    return facts


def _raised_in(exc: BaseException, prefix: str) -> str:
    """The submission file whose own frame raised ``exc`` ("" when the innermost frame is
    torch's or the library's): the grader calls an error a TODO stub only when it was
    raised by the exercise module itself."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    filename = tb.tb_frame.f_code.co_filename if tb is not None else ""
    return filename[len(prefix) :] if filename.startswith(prefix) else ""
