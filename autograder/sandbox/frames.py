"""Frames stay out of a worker's exercise code: no frame object reaches it.

A frame leads up the stack (``f_back``) to the worker's own frames, and their locals hold
what every rule rests on: the key that signs a reply, the records of what the code ran, the
request (a hidden probe's source). Blind red-team tester R-P took a frame from
``traceback.walk_stack`` and read the key through a format string
(``"{0.f_locals[auth]._key}".format(frame)``: the scan skips a string, and ``str.format``
looks attributes up in C), and through ``pdb``'s frame APIs cleared the records: 20/20 in
custom_backward with autograd in backward. Neither ``f_back`` nor ``f_locals`` raises an audit
event, but every way to a first frame does: ``sys._getframe`` and the attributes
``tb_frame``, ``gi_frame``, ``cr_frame``, ``ag_frame`` (event ``object.__getattr__``). A
serving worker refuses those events (audit.py) unless the frame stays in code that hands out
no frame: the grader's own files, and a library that uses the frame itself — logging's
caller lookup, namedtuple's, typing's and enum's module names, ``traceback.print_exc`` and
its kin, which return text — when the library function the exercise called is not one that
returns frames (``traceback.walk_stack``, ``walk_tb``, ``logging.currentframe``, ``inspect``,
``pdb``/``bdb``, ``sys._getframe`` itself). Written here: no library removes frames from part
of a process.
"""

from __future__ import annotations

import os
import sys
from types import CodeType, FrameType

from .everywhere import replace_everywhere

#: attributes whose read gives a frame (each raises the audit event ``object.__getattr__``)
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
#: library functions that hand the frames they find to their caller: an exercise may not call them
FRAME_RETURNING = frozenset(
    {"walk_stack", "walk_tb", "currentframe", "<lambda>", "get_frame"}  # numpy.distutils.misc_util.get_frame: R-DM
)
MESSAGE = "frames are not available to exercise code (they reach the grader's own objects)"


def asks_for_frame(event: str, args: tuple) -> bool:
    """Whether an audit event hands a frame to whoever raised it."""
    # the name's type first: a set's `in` would ask an object of the exercise's class its __hash__
    return event == "sys._getframe" or (
        event == "object.__getattr__" and len(args) > 1 and type(args[1]) is str and args[1] in FRAME_ATTRIBUTES
    )


def allowed(exercise: str, grader: str, depth: int = 2) -> bool:
    """Whether the frame raising the event (``depth`` frames up from here: past this function
    and the hook, the code that asked) may have it: the grader's own code, or a library called by
    the exercise through a function that does not return frames. Walks up from that frame to
    the first frame of the exercise's own files; none: not the exercise's doing."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return True
    if not _kept_by_its_library(frame):
        return False
    walk_ends_in_exercise = _walk_ends_in_exercise(frame, exercise, grader)
    entry = None  # the outermost library frame: the function the exercise called
    debugger = False  # a debugger's frame on the way: it keeps what it reads where its caller reads it
    up: FrameType | None = frame
    while up is not None:
        frame = up
        path = frame.f_code.co_filename
        if path.startswith(grader):
            return True
        if path.startswith(exercise):
            if not walk_ends_in_exercise:
                return False
            if debugger:
                # pdb/bdb anywhere between the exercise and the frame read, however they were
                # called: Counter(map(pdb.Pdb().setup, [None], [tb])) kept every frame up to the
                # worker's serve in the debugger's stack (blind red-team tester R-CD)
                return False
            if entry is None:
                return False  # the exercise asked itself
            name = entry.f_code.co_name
            module = os.path.basename(entry.f_code.co_filename)
            return name not in FRAME_RETURNING and module not in ("pdb.py", "bdb.py", "inspect.py")
        entry = frame  # a library's: neither the grader's nor the exercise's
        debugger = debugger or os.path.basename(path) in ("pdb.py", "bdb.py")
        up = frame.f_back
    return True


def frameless_signal_handlers() -> int:
    """Make every name that holds ``signal.signal`` (the ``signal`` module's and ``_signal``'s,
    in every module: ``pdb.signal.signal`` too) install a handler that is handed no frame:
    Python calls a handler with the frame it interrupted, the worker's own included, and no
    audit event says so (blind red-team tester R-CB: ``pdb.signal.signal(10, grab)`` then
    ``os.kill(os.getpid(), 10)`` gave a frame, and ``pdb`` walked it to the worker's reply key
    and recorders: custom_backward 20/20 with autograd in backward). The handler gets ``None``
    where the frame was; the signal and everything else are as before. The worker's own
    handlers keep their frames: they are installed with the functions it bound before (fresh.py)
    or before any exercise code. Called in the fork server before it forks (zygote.spawn) and
    again in a worker before any exercise code, where it finds the fork server's wrapper and
    walks nothing; the number of names replaced."""
    import _signal
    import signal as signal_module

    if signal_module.signal in _WRAPPERS:  # the fork server did it before it forked: no walk (~8 ms) a worker
        return 0
    originals = {id(_signal.signal), id(signal_module.signal)}
    install = _signal.signal

    def signal(signalnum: int, handler):  # the same arguments and result as signal.signal
        if callable(handler):
            handler = _frameless(handler)
        previous = install(int(signalnum), int(handler) if isinstance(handler, signal_module.Handlers) else handler)
        try:
            return signal_module.Handlers(previous)
        except (ValueError, TypeError):
            return previous

    _WRAPPERS.append(signal)
    return replace_everywhere(dict.fromkeys(originals, signal))


#: the wrapper ``frameless_signal_handlers`` installed in this process (and its forks)
_WRAPPERS: list = []


def _frameless(handler):
    def handle(signum: int, _frame: object) -> object:
        return handler(signum, None)

    return handle


#: library functions that ask for a frame only to hand it to their caller (file suffix → names):
#: traceback's generators, logging's ``currentframe``
FRAME_HANDERS = {
    os.sep + "traceback.py": frozenset({"walk_stack", "walk_tb", "_walk_tb_with_full_positions"}),
    os.path.join(os.sep + "logging", "__init__.py"): frozenset({"currentframe", "<lambda>"}),
    # Task.get_stack: a running task's frames, up to the worker's own (asyncio is importable)
    os.path.join(os.sep + "asyncio", "base_tasks.py"): frozenset({"_task_get_stack"}),
    # Bdb.set_trace keeps the outermost frame as botframe, from wherever it is called
    os.sep + "bdb.py": frozenset({"set_trace"}),
    # inspect's functions that return frames, however they are reached: a library calling one on
    # the exercise's behalf hands its result back (blind red-team tester R-DL:
    # `functools.cached_property(inspect.stack)`, whose __get__ was the function the exercise
    # called, returned the stack up to the worker's serve)
    os.sep + "inspect.py": frozenset({"stack", "currentframe", "trace", "getouterframes", "getinnerframes"}),
}


def _kept_by_its_library(frame: FrameType) -> bool:
    """A frame asked for by one of ``FRAME_HANDERS`` is kept only where its own library uses
    it (traceback makes text of its generators' frames, logging's ``findCaller`` reads its
    ``currentframe``): the function's caller is a frame of the same file. Called from anywhere
    else, the frame goes to whoever called — the exercise, or a library calling on its behalf
    from C code or a generated function, whose own name returns no frame: blind red-team
    tester R-CC's ``collections.Counter(traceback.walk_stack(None))`` kept every frame up to
    the worker's ``serve``; a dataclass field's ``default_factory=logging.currentframe``
    stored one."""
    code = frame.f_code
    names = next((n for suffix, n in FRAME_HANDERS.items() if code.co_filename.endswith(suffix)), None)
    if names is None or code.co_name not in names:
        return True
    caller = frame.f_back
    if caller is not None and _is_frame_walker(caller.f_code):
        return True  # TorchScript's resolution callback: its walk is judged by _walk_ends_in_exercise
    if caller is None or caller.f_code.co_filename != code.co_filename:
        return False
    # traceback keeps its frames for text, but with ``capture_locals`` that text is the repr of
    # every local up to the worker's serve — the request, its probe's source (blind red-team
    # tester R-CJ: ``StackSummary.extract(walk_stack(None), capture_locals=True)``)
    up: FrameType | None = caller
    while up is not None and up.f_code.co_filename == code.co_filename:
        wanted = up.f_locals.get("capture_locals")
        # read without asking the value: its __bool__ would be the exercise's code, run inside the
        # audit hook while its checks are off (blind red-team tester R-DK's family of attacks)
        if wanted is not None and not ((type(wanted) is bool or type(wanted) is int) and not wanted):
            return False
        up = up.f_back
    return True


#: library functions that walk a number of frames up from their own and keep what they find
#: there (file suffix, function name → the local holding the count). TorchScript's resolution
#: callback looks names up in the locals and globals of the frame ``frames_up + 1`` above its
#: own; from an exercise's direct call of ``torch.jit.script_method`` that frame is the
#: worker's probe (blind red-team tester R-CF read its context, and through it the grader's
#: modules: custom_backward 20/20 with autograd). Only the frames it walks are judged: a
#: script method of a class body, where the walk ends in the exercise, still compiles.
FRAME_WALKERS = {(os.path.join(os.sep + "torch", "_jit_internal.py"), "createResolutionCallbackFromFrame"): "frames_up"}


def _is_frame_walker(code: CodeType) -> bool:
    return any(code.co_name == name and code.co_filename.endswith(suffix) for suffix, name in FRAME_WALKERS)


def _walk_ends_in_exercise(frame: FrameType, exercise: str, grader: str) -> bool:
    """Whether a ``FRAME_WALKERS`` function asking for a frame (``frame`` is its own, or the
    helper's it called: ``inspect.currentframe``) ends its walk in the exercise's code, or in a
    library's called from there — not at or above the grader's frames. True when none asks."""
    for walker in (frame, frame.f_back):
        if walker is None:
            continue
        code = walker.f_code
        key = next((k for k in FRAME_WALKERS if code.co_name == k[1] and code.co_filename.endswith(k[0])), None)
        if key is None:
            continue
        steps = walker.f_locals.get(FRAME_WALKERS[key])
        if type(steps) is not int or not 0 <= steps < 1000:
            return False
        target: FrameType | None = walker
        for _ in range(steps + 1):
            target = target.f_back if target is not None else None
        return _exercise_first(target, exercise, grader) is not False
    return True


def _exercise_first(frame: FrameType | None, exercise: str, grader: str) -> bool | None:
    """Walking up from ``frame``: True when a frame of the exercise's files comes before any of
    the grader's, False when one of the grader's comes first, None when neither is met."""
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(grader):
            return False
        if path.startswith(exercise):
            return True
        frame = frame.f_back
    return None


#: audit events that install a function Python hands every frame it runs next
TRACE_EVENTS = frozenset({"sys.settrace", "sys.setprofile"})
TRACE_MESSAGE = (
    "a trace or profile function is handed every frame that runs next, the grader's own included: "
    "not in a rule-checked file (EXERCISES.md: profile in a self-test under the main guard)"
)


def exercise_asked(exercise: str, grader: str, depth: int = 2) -> bool:
    """Whether the exercise's own code is on the stack above the frame raising the event
    (``depth`` frames up) before any of the grader's: a trace or profile function it set, itself
    or through a library (``profile.Profile.runcall``, ``cProfile``), would be handed frames."""
    try:
        frame: FrameType | None = sys._getframe(depth)
    except ValueError:
        return False
    return _exercise_first(frame, exercise, grader) is True
