"""A worker's reply as the trusted side keeps it: ``Reply``, and the checks that take only
the fields we know, of the types we expect and of bounded size, from whatever the worker
sent (``sandbox/client.py`` parses; a worker runs submission code and may send anything)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    ok: bool
    value: Any = None
    error: dict | None = None
    out: str = ""
    out_dropped: int = 0
    ops: list[str] = field(default_factory=list)
    autograd: list[str] = field(default_factory=list)
    #: ways the code switched off the worker's recorders during the call (see probes.py)
    tampered: list[str] = field(default_factory=list)
    #: operators the dispatcher ran under a DispatchRecorder (probes.py), one tab-separated
    #: line each: phase, operator, count, file, line, function — data, judged by the tests
    dispatched: list[str] = field(default_factory=list)


def str_list(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def clean_error(error: Any) -> dict:
    """Keep only the fields we know, as plain strings/ints of bounded size."""
    if type(error) is not dict:
        return {"type": "UnknownError", "message": "", "base": "Exception", "frames": []}
    frames = []
    raw_frames = error.get("frames")
    for frame in raw_frames[:64] if type(raw_frames) is list else []:
        if type(frame) is dict and type(frame.get("file")) is str and type(frame.get("line")) is int:
            frames.append({"file": frame["file"][:200], "line": frame["line"], "function": str(frame.get("function", ""))[:200]})
    return {
        "type": str(error.get("type", "Exception"))[:200],
        "message": str(error.get("message", ""))[:4000],
        "base": str(error.get("base", "Exception"))[:100],
        "exit_code": str(error["exit_code"])[:200] if "exit_code" in error else None,
        "raised_in": str(error.get("raised_in") or "")[:200],
        "frames": frames,
    }
