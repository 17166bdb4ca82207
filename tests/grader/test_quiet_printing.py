"""A tensor the code prints is formatted outside the operator recording (a debugging
``print`` in backward cost custom_backward 7 of 20 points: the formatter's hundreds of small
operators, each recorded with its Python stack, timed the calls out), and only where nothing
but torch's own code can run while it is paused (sandbox/probes/recorders.py
``_QuietPrinting``). Each case runs in a fresh interpreter: the pause is installed for good,
as in a worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import ROOT

SETUP = """
import torch
from autograder.sandbox.probes.recorders import DispatchRecorder, QUIET_PRINTING

QUIET_PRINTING.install()
a = torch.randn(2, 3, 40, 40, dtype=torch.float64)


def recorded(fn):
    entries, tampered = {}, set()
    with DispatchRecorder(entries, tampered, "/no/submission/"):
        fn()
    return {op for (_, op) in entries}, tampered


FORMATTING = "aten::masked_select"  # the formatter picks the finite non-zero values
"""


def _run(body: str) -> None:
    code = SETUP + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_printed_plain_tensor_is_formatted_unrecorded_and_the_recording_goes_on():
    _run("""
        ops, tampered = recorded(lambda: (a.exp(), print(a, file=open("/dev/null", "w")), a.sin()))
        assert "aten::exp" in ops and "aten::sin" in ops, ops
        assert FORMATTING not in ops, ops
        assert not tampered, tampered
        ops, tampered = recorded(lambda: str(a))  # nothing but the pause itself: a whole recording
        assert not tampered, tampered
    """)


def test_a_replaced_torch_function_a_subclass_a_dispatch_mode_or_odd_print_options_keep_the_recording():
    _run("""
        original = torch.isfinite
        torch.isfinite = lambda x: original(x)  # the scan allows it; the recorder must see what it runs
        ops, _ = recorded(lambda: str(a))
        assert FORMATTING in ops, ops
        torch.isfinite = original

        class Mine(torch.Tensor):
            pass

        ops, _ = recorded(lambda: str(a.as_subclass(Mine)))
        assert FORMATTING in ops, ops

        from torch.utils._python_dispatch import TorchDispatchMode

        class Passing(TorchDispatchMode):  # its handler would run inside the formatting
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        with Passing():
            ops, _ = recorded(lambda: str(a))
        assert FORMATTING in ops, ops

        class Precision(int):
            def __format__(self, spec):
                return "4"

        torch.set_printoptions(precision=Precision(4))
        ops, _ = recorded(lambda: str(a))
        assert FORMATTING in ops, ops
        torch.set_printoptions(precision=4)
        ops, _ = recorded(lambda: str(a))
        assert FORMATTING not in ops, ops
    """)
