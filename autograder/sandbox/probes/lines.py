"""Where the operators a ``DispatchRecorder`` records came from: markers a line trace of the
submission's own frames opens in the profiler's record (``LineMarks``)."""

from __future__ import annotations

import os
import sys
from typing import Any

from torch._C._profiler import _RecordFunctionFast

#: bound before any exercise code runs (see recorders.py)
_urandom, _settrace = os.urandom, sys.settrace


#: distinct lines a recording names: past this a line is recorded as no line (code a file
#: compiles at run time could make new lines without end)
MAX_LOCATED = 4096
#: calls of the trace function for the submission's frames a recording pays for (~1 µs each:
#: ~2 ms); past this, tracing stops for the rest of the window, and what runs after it has no
#: line (see LineMarks)
TRACE_BUDGET = 2000


class LineMarks:
    """Where each operator a ``DispatchRecorder`` records came from, without torch's Python
    stacks. The profiler can capture the whole Python stack of every operator, but that walks
    every frame — the worker's own ~15 included — for every operator: ~15 µs each in a worker,
    and a correct ``softmax_backward`` that loops over rows ran ~40× slower recorded than not
    (one that loops over elements ran out of its CPU limit: blind fairness tester R-BW).

    Instead a trace function, called for the submission's own frames only, opens and closes a
    marker each time one of them reaches a new line, and each time one returns (the line of
    the submission's frame it returns into holds again, or no line); an operator is placed at
    the last marker before it (``recorders.DispatchRecorder._collect``): the innermost frame of the
    submission's on the stack, as a stack would have given. A trace function changes nothing
    in what torch runs (a ``TorchFunctionMode`` would: ``nn.MultiheadAttention`` leaves its
    fast path under one, and its attention operator went unrecorded).

    Each call of the trace function for the submission's frames costs ~1 µs, operator or not,
    which code on Python numbers pays on every line and every generator step: so a window
    pays for ``TRACE_BUDGET`` of them, then a last marker says "no line" and tracing stops until the
    window ends; what runs after that has no line (never a wrong one). An operator's location
    is its first occurrence's, which a loop reaches early. Locations only word the feedback;
    the rule is judged from the operators' names alone.

    The markers' names carry a secret of their own (not the start and end markers') and end
    with the index of their line in ``lines``.

    The trace function calls the methods as this module defined them, bound when it is made
    (``_trace_functions``), and an instance takes no attribute of its own (``__slots__``): a
    ``_own`` set on the object, or on the class, would be handed every frame the return event
    walks up to the worker's ``serve`` (blind red-team tester R-CI read the reply key that way)."""

    __slots__ = ("own_files", "prefix", "lines", "_names", "_left", "_last")

    def __init__(self, own_files: str) -> None:
        self.own_files = own_files
        self.prefix = f"autograder::at-{_urandom(8).hex()}-"
        self.lines: list[tuple[Any, int] | None] = []  # (code, line) of each marker, by its index
        self._names: dict[tuple[int, int] | None, str] = {}  # by (id(code), line): a code's hash is costly
        self._left = TRACE_BUDGET  # calls of the trace function still paid for
        self._last: str | None = None  # the last marker opened: the same again changes nothing

    def _own(self, frame: Any) -> bool:
        file = frame.f_code.co_filename
        return type(file) is str and str.startswith(file, self.own_files)

    def _mark(self, code: Any, line: int) -> None:
        key = None if code is None else (id(code), line)
        name = self._names.get(key)
        if name is None:
            if len(self.lines) >= MAX_LOCATED:
                key, name = None, self._names.get(None)
            if name is None:
                name = self._names[key] = f"{self.prefix}{len(self.lines)}"
                self.lines.append(None if key is None else (code, line))  # keeps the code alive: its id stays its own
        if name is not self._last:
            self._last = name
            with _RecordFunctionFast(name):
                pass

    def _spend(self) -> bool:
        """Count one call of the trace function: False once the budget is spent, when the last
        marker ("no line") is opened and tracing stops for the rest of the window."""
        self._left -= 1
        if self._left > 0:
            return True
        if self._left == 0:
            self._mark(None, 0)
            _settrace(None)  # the window's end restores the trace function it found (recorders.py)
        return False

    def tracer(self) -> Any:
        """The trace function: a plain function, not a bound method ``sys.gettrace()`` would
        hand out with this object (see ``recorders._hook``). Other frames are not traced at all."""
        return _TRACER(self)

    def where(self, name: str) -> list | None:
        """[file relative to the submission, line, function] of marker ``name``, ["", 0, ""]
        for one of no line of the submission's; None when ``name`` is no marker of these."""
        if not name.startswith(self.prefix):
            return None
        index = name[len(self.prefix) :]
        key = self.lines[int(index)] if index.isdigit() and int(index) < len(self.lines) else None
        if key is None:
            return ["", 0, ""]
        code, line = key
        return [code.co_filename[len(self.own_files) :], line, code.co_name]


def _trace_functions(own_of: Any, spend_of: Any, mark_of: Any) -> Any:
    """``LineMarks.tracer``'s work, with the methods bound here, when this module is imported
    (before any exercise code runs), not looked up on the object or its class at each event."""

    def tracer(marks: LineMarks) -> Any:
        def local(frame: Any, event: str, arg: Any) -> Any:
            if not spend_of(marks):
                return None
            if event == "line":
                mark_of(marks, frame.f_code, frame.f_lineno or 0)
            elif event == "return":  # the line of the submission's frame it returns into, if any
                back = frame.f_back
                while back is not None and not own_of(marks, back):
                    back = back.f_back
                mark_of(marks, None if back is None else back.f_code, 0 if back is None else back.f_lineno or 0)
            return local

        def trace(frame: Any, event: str, arg: Any) -> Any:
            return local if own_of(marks, frame) and spend_of(marks) else None  # a library's frames cost ~0.3 µs, unbudgeted

        return trace

    return tracer


_TRACER = _trace_functions(LineMarks._own, LineMarks._spend, LineMarks._mark)
