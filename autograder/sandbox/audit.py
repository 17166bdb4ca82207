"""The worker's audit hook (PEP 578): what exercise code may not do at all, refused at the
event itself — gc's lists of live objects and other threads' frames, ``exec`` of code the
rule scan did not read (codegate.py), and, once the worker serves, ctypes and the files under
/proc that show a process's memory (rawmemory.py), and frames (frames.py). An audit hook
cannot be removed."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from . import frames, rawmemory
from .codegate import CodeGate, caller_file

#: audit events (PEP 578) refused in a worker: gc's lists of live objects (a walk from them
#: reaches the worker's recorders and its reply, however well the modules are hidden: blind
#: red-team tester H) and other threads' frames
_REFUSED_EVENTS = frozenset(
    {"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames"}
    # an audit hook of the exercise's own: refused, it is not added (PEP 578: a hook that raises
    # RuntimeError stops the new one). It was handed every frame a library asked for on the
    # exercise's behalf (``namedtuple``'s ``sys._getframe``), a walk from which reached the
    # worker's recorders: blind red-team tester R-BQ, custom_backward 20/20 with autograd
    | {"sys.addaudithook"}
)
#: audit events that make code objects or functions from them, refused once the worker serves:
#: every other check of a worker (the code gate, the frame check) knows code by the file its
#: code object names, and code the exercise built itself names any file it likes (blind
#: red-team tester R-Y: a generator's code ``.replace(co_filename=<logging>, co_names=…)``,
#: made a function with ``type(f)(code, {})``, took frames and ran torch's own softmax, three
#: rules broken, 100/100). ``code.replace`` and ``copy.replace`` raise ``code.__new__`` too.
CODE_EVENTS = frozenset({"code.__new__", "function.__new__", "marshal.loads", "marshal.load"})
#: the one caller that unmarshals code in a serving worker: the import machinery reading the
#: cached bytecode of a source file (``_compile_bytecode``, given the file's ``source_path``)
_UNMARSHALS = ("<frozen importlib._bootstrap_external>", "_compile_bytecode")


def _plain(value: object) -> object:
    """A ``str`` or ``bytes`` subclass as the plain ``str`` or ``bytes`` it holds — read by
    ``join``, which copies the characters without calling any method of the object (its
    ``startswith``, ``__hash__``, ``__eq__``… are the exercise's code); anything else as it is."""
    # by its type, never isinstance: that asks an object for its __class__, which the exercise's
    # class may define as a descriptor of its own — code run inside the hook (blind red-team
    # tester R-DL: functools.cached_property(inspect.stack) took the worker's frames from here)
    kind = type(value)
    if kind is not str and issubclass(kind, str):
        return "".join([value])  # type: ignore[list-item]
    if kind is not bytes and issubclass(kind, bytes):
        return b"".join([value])  # type: ignore[list-item]
    return value


def _same_as_file(path: str, data: object, skip: int = 0) -> bool:
    """Whether ``data`` (bytes-like) is what the file at ``path`` holds, past its first
    ``skip`` bytes."""
    if not (type(data) is bytes or type(data) is memoryview):  # the machinery's own: never an object's buffer
        return False
    try:
        expected = memoryview(data).tobytes()
        with open(path, "rb") as fh:
            fh.seek(skip)
            return fh.read(len(expected) + 1) == expected
    except (OSError, TypeError, ValueError):
        return False


def _compile_refusal(gate: CodeGate, args: tuple) -> str:
    """Why a ``compile`` in a serving worker may not go on ("" where it may). Code compiled
    under a library file's name must be that file's own text; a syntax tree (whose event names
    no file) is compiled only by the grader (the submission's files, without their main guards:
    mainguard.py). Blind red-team tester R-DJ subclassed the import machinery's loader, gave it
    a ``get_data`` of its own and had it compile a string as an unimported library file: the
    gate ran it as that library's module (unscanned code, frames up to the worker's own)."""
    source, filename = (tuple(args) + (None, None))[:2]
    if filename is not None and not (type(filename) is str or type(filename) is bytes):
        # the code object would keep the object as its file name, and every check that reads the
        # name would ask that object's methods (blind red-team tester R-DK)
        return "compile: a file name is a plain str in a worker"
    if not (type(source) is bytes or type(source) is str):
        if caller_file(depth=3).startswith(gate.grader):
            return ""
        return "compile: a syntax tree is compiled only by the grader in a worker; write the code out"
    if type(filename) is bytes:
        filename = os.fsdecode(filename)
    if type(filename) is str and not filename.startswith("<") and gate.is_library_file(filename):
        text = source.encode("utf-8") if type(source) is str else source
        if not _same_as_file(filename, text):
            return (
                f"compile: code under a library file's name ({filename}) is compiled only from that file's own "
                "text in a worker: its rule check reads only the exercise's files"
            )
    return ""


def _reads_a_librarys_bytecode(gate: CodeGate, args: tuple) -> bool:
    """Whether the ``marshal`` event being handled comes from the import machinery reading a
    ``.pyc`` among the installed libraries: a source file's cached bytecode (its code is then
    named by that file, ``_imp._fix_co_filename``, which the code gate judges) or a sourceless
    one (an image may ship them without their sources). Not one anywhere else: compiled code
    alone names whatever file its author chose, and one written to the scratch folder and put
    on ``sys.path`` ran as "<frozen zzrows>", unscanned, with frames up to the worker's own
    (blind red-team tester R-DH)."""
    try:
        frame = sys._getframe(2)  # this function, the hook, then the caller of marshal
    except ValueError:
        return False
    code = frame.f_code
    if (code.co_filename, code.co_name) != _UNMARSHALS:
        return False
    # the .pyc itself must lie among the libraries (or in the interpreter's cache folder, where
    # PYTHONPYCACHEPREFIX puts theirs), the source or not: a scratch folder's link to a library's
    # file with a __pycache__ written beside it ran as that file (blind red-team tester R-DI)
    bytecode = frame.f_locals.get("bytecode_path")
    if not (type(bytecode) is str and (gate.is_library_file(bytecode) or gate.in_pycache_prefix(bytecode))):
        return False
    # and the bytes are that file's, past its 16-byte header: a loader of the exercise's own
    # (R-DJ: a subclass with its own get_data) hands the machinery any bytes under any name
    return bool(args) and _same_as_file(bytecode, args[0], skip=16)


CODE_MESSAGE = (
    "code objects and functions cannot be built at run time in exercise code (the grader's checks "
    "know code by the file it comes from); write the function out"
)


def forbid_introspection(gate: CodeGate) -> Callable[[], None]:
    """Refuse ``_REFUSED_EVENTS`` for the rest of the worker's life, before any submission
    code runs, and let ``gate`` judge every ``exec`` (codegate.py). An audit hook cannot be
    removed, and with gc's lists refused no code can reach the hook's function to change it.
    No exercise, and nothing of torch's that an exercise runs, needs these; the gate keeps
    unscanned code out.

    Returns ``seal``: from its call on (the first request that may run exercise code), ctypes,
    a process's memory under /proc (rawmemory.py), frames (frames.py: libraries that only
    use one keep theirs) and building code objects or functions (``CODE_EVENTS``) are refused
    too; until then the worker's own setup uses them (a standing ban keeps its library handle
    alive with ctypes)."""
    sealed: list[bool] = []
    busy: list[bool] = []  # a frame check asks for frames itself: its own events pass

    def refuse(event: str, args: tuple) -> None:
        # never a method of an argument: a str subclass's own startswith ran inside this hook, with
        # its checks off, walked the stack to the worker's serve and lied past the compile check
        # (blind red-team tester R-DK); its text is read as the plain str (or bytes) it holds
        raw, args = args, tuple(map(_plain, args))
        if sealed and not busy and frames.asks_for_frame(event, args):
            busy.append(True)
            try:
                ok = frames.allowed(gate.prefix, gate.grader)
            finally:
                busy.pop()
            if not ok:
                raise RuntimeError(f"{event}: {frames.MESSAGE}")
        if event in _REFUSED_EVENTS:
            raise RuntimeError(f"{event} is not available to exercise code: it reaches the grader's own objects")
        # a rule-checked worker: a trace or profile function of the exercise's would be handed the
        # worker's frames (blind red-team tester R-CB, after signal handlers: frames.py)
        if sealed and event in frames.TRACE_EVENTS and gate.allowed is not None and not busy:
            busy.append(True)
            try:
                asked = frames.exercise_asked(gate.prefix, gate.grader)
            finally:
                busy.pop()
            if asked:
                raise RuntimeError(f"{event}: {frames.TRACE_MESSAGE}")
        if event == "exec" and gate.allowed is not None:
            gate.check(args[0], caller_file())
        # a compiled extension (the import machinery names its file here, before it loads it) runs
        # native code no check can see: only the installed libraries' (blind red-team tester R-DI's
        # round: with sys.path allowed, a .so written to the scratch folder would import)
        if event == "import" and len(args) > 1 and type(args[1]) is str and not gate.is_library_file(args[1]):
            raise ImportError(f"{args[1]} is not an installed library's extension: only those load in a worker")
        setting_code = event == "object.__setattr__" and len(args) > 1 and type(args[1]) is str and args[1] == "__code__"
        if sealed and (event in CODE_EVENTS or setting_code):
            if not (event.startswith("marshal.") and _reads_a_librarys_bytecode(gate, args)):
                raise RuntimeError(f"{event}: {CODE_MESSAGE}")
        if sealed and event == "compile" and not busy:
            busy.append(True)
            try:
                refusal = _compile_refusal(gate, raw)
            finally:
                busy.pop()
            if refusal:
                raise RuntimeError(refusal)
        if sealed and rawmemory.is_ctypes_event(event):
            raise RuntimeError(f"{event}: ctypes is not available to exercise code (it reaches raw memory)")
        if sealed and event == "open" and args and rawmemory.is_process_memory_path(args[0]):
            if type(args[0]) is str or type(args[0]) is bytes:
                raise PermissionError(f"{args[0]!r}: a process's memory is not available to exercise code")
            raise PermissionError("open: a path is a str, bytes or pathlib path in a worker, not an object of the exercise's own")

    def seal() -> None:
        if not sealed:
            sealed.append(True)

    sys.addaudithook(refuse)
    return seal
