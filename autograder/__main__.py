import sys

from .core import timeline
from .core.host import RECEIVED, interrupt_on_termination, unsupported_system

early = None
GRADE = sys.argv[1:2] == ["grade"]
if GRADE:
    interrupt_on_termination()  # from here on SIGTERM and SIGHUP end a grade as Ctrl-C does
timeline.mark("command line: started")
if GRADE and unsupported_system():  # native Windows: say where to grade, no traceback
    print(unsupported_system(), file=sys.stderr)
    sys.exit(2)


def _start_ahead():
    """The trusted pytest process first, with nothing imported but os and struct: its torch
    import overlaps everything this process does before grading (runner/process/early.py);
    a failure here only costs that head start."""
    try:
        from .runner.process.early import Early, early_root

        root = early_root(sys.argv[2:])
        if root is None:
            return None
        # a warm server this user left running (runner/process/warm.py): the run is forked
        # from it, torch already imported; else the trusted process starts now
        try:
            from .runner.process import warm

            ready = warm.connect(root)
        except Exception:
            ready = None
        return ready or Early(root)
    except Exception:
        return None


def _interrupted_before_start(exc: KeyboardInterrupt) -> int:
    """Ctrl-C (or SIGTERM, SIGHUP) before the command line was imported: the results say so."""
    try:
        from .cli import interrupted_before_start

        return interrupted_before_start(sys.argv[1:], exc)
    except BaseException:
        print("autograder: grading was interrupted before it began: nothing was graded", file=sys.stderr)
        return 130


try:
    if GRADE:
        early = _start_ahead()
        timeline.mark("command line: " + ("trusted process started" if type(early).__name__ == "Early" else "launcher ready"))
    from .cli import main
except KeyboardInterrupt as exc:  # the process started ahead goes too
    if early is not None:
        early.release()
    sys.exit(_interrupted_before_start(exc))
except BaseException:
    if early is not None:
        early.release()
    if RECEIVED:  # an interrupt Python wrapped in another error (raised in a class's __set_name__ while a module loaded)
        sys.exit(_interrupted_before_start(RECEIVED[0]))
    raise

status = main(early=early)
timeline.mark("command line: done")
# What the run left (its report, results, ~10^5 objects) is never collected: the interpreter's
# exit would otherwise walk it all in a last garbage collection (~0.1 s), after the results are written.
__import__("gc").freeze()
sys.exit(status)
