"""General hints named by a submission's raised error alone (its type and message), for every
skill: what ``SubmissionRaised`` carries before any test looks at it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .failures import thread_refused


def hints_for(error: dict) -> list[str]:
    """The general hints a raised error's facts prove by themselves (its type and message):
    the stub's TODO, an exit, a syntax or import error, a refused thread, autograd's and
    torch's own refusals. Checked against torch's messages in tests/grader/test_feedback_rules.py."""
    kind = error.get("type")
    if error.get("todo"):
        return ["general/todo"]
    if FLOAT_IN_BITWISE.search(str(error.get("message", ""))) and kind in ("NotImplementedError", "TypeError"):
        return ["general/float-in-bitwise"]  # `mask.float() & causal`: torch's refusal, not a stub (blind tester R-BJ)
    if kind == "NotImplementedError":
        return []
    if kind in ("SystemExit", "KeyboardInterrupt"):
        return ["general/exit"]
    if kind == "SyntaxError" or error.get("base") == "SyntaxError":
        return ["general/syntax"]
    if NO_CTYPES in str(error.get("message", "")):
        return ["general/no-ctypes"]  # torch.compile's C code, or ctypes itself (blind tester R-M)
    if kind in ("ModuleNotFoundError", "ImportError"):
        message = str(error.get("message", ""))
        if SIBLING_AS_PACKAGE.search(message):
            return ["general/import-sibling"]  # `from exercises.masks import …`, `from .masks import …` (blind tester R-K)
        return ["general/import"]
    if kind in ("TypeError", "AttributeError") and NONE_MASK.search(str(error.get("message", ""))):
        return ["general/none-mask"]  # `~allowed` with allowed=None: the optional mask used unchecked (blind tester R-BL)
    if kind in ("TypeError", "AttributeError") and MAX_PAIR.search(str(error.get("message", ""))):
        return ["general/max-returns-pair"]  # `s - s.max(dim, keepdim=True)`: a (values, indices) pair (blind tester R-BO)
    if thread_refused(error):
        return ["general/one-thread"]
    if kind == "RuntimeError" and LEAF_IN_PLACE in str(error.get("message", "")):
        return ["general/in-place"]  # autograd's own refusal: an input that requires grad was changed in place
    if kind == "RuntimeError" and SAVED_IN_PLACE in str(error.get("message", "")):
        return ["general/in-place-saved"]  # a tensor autograd saved was changed since (blind tester I)
    if kind == "RuntimeError" and CANNOT_GROW in str(error.get("message", "")):
        return ["general/in-place-broadcast"]  # an in-place op whose result needs a larger, broadcast shape (blind tester N)
    if kind == "RuntimeError" and DTYPE_MIXED.search(str(error.get("message", ""))):
        return ["general/dtype-changed"]  # torch's refusal to mix dtypes: the inputs of a call share one (blind tester F)
    if kind == "RuntimeError" and BMM_NOT_3D.search(str(error.get("message", ""))):
        return ["general/bmm-three-axes"]  # bmm (or baddbmm) given a tensor of other than three axes
    if kind == "RuntimeError" and ONE_HOT_LONG in str(error.get("message", "")):
        return ["general/one-hot-needs-int64"]  # F.one_hot on int32 ids (blind tester R-CW: no hint)
    return []


#: a worker's refusal of ctypes (sandbox/rawmemory.py), which torch.compile's code generation imports
NO_CTYPES = "ctypes is not available to exercise code"
#: autograd's error when code changes a tensor that requires grad (the test's input, or a view of it) in place
LEAF_IN_PLACE = "requires grad is being used in an in-place operation"
#: autograd's error in backward when a tensor it saved in forward was changed in place afterwards
SAVED_IN_PLACE = "needed for gradient computation has been modified by an inplace operation"
#: an exercise module imported as part of a package: the grader runs them as top-level modules
SIBLING_AS_PACKAGE = re.compile(r"relative import with no known parent package|No module named 'exercises'")
#: torch.bmm's and baddbmm's refusal of an operand without exactly three axes
BMM_NOT_3D = re.compile(r"\bbatch[12] must be a 3D tensor")
#: F.one_hot's refusal of any index dtype but int64
ONE_HOT_LONG = "one_hot is only applicable to index tensor of type LongTensor"
#: torch's refusal to write an in-place result of a larger, broadcast shape into its left operand
CANNOT_GROW = "doesn't match the broadcast shape"
#: torch's refusals of &, |, ^ and ~ on a floating-point tensor ("bitwise_and_cpu" not implemented
#: for 'Float'; ~ raises a TypeError of its own)
FLOAT_IN_BITWISE = re.compile(
    r"\"bitwise_(?:and|or|xor|not)\w*\" not implemented for '(?:Float|Double|Half|BFloat16)'"
    r"|~ \(operator\.invert\) is only implemented on integer and Boolean-type tensors"
)
#: a mask argument that was None (the optional `allowed=None`) inverted or used as a mask:
#: `~None`, `None.logical_not()`, `masked_fill(None, …)`, `torch.where(None, …)`
NONE_MASK = re.compile(
    r"bad operand type for unary ~: 'NoneType'"
    r"|'NoneType' object has no attribute '(?:logical_not|bool|to|unsqueeze|expand)'"
    r"|(?:masked_fill|masked_fill_|where)\(\) received an invalid combination of arguments - got \(NoneType"
)
#: a (values, indices) pair of torch.max/min/median/mode/kthvalue with a dim, used as a tensor
MAX_PAIR = re.compile(r"torch\.return_types\.(?:max|min|median|nanmedian|mode|kthvalue|sort|topk)\b")
#: torch's refusals to compute with two dtypes at once (a matmul, linear, bmm or einsum of a
#: float32 tensor the code made and the float64 input it was given)
DTYPE_MIXED = re.compile(
    r"expected scalar type \w+ but found \w+|expected m1 and m2 to have the same dtype|mat1 and mat2 must have the same dtype"
)


def unit_axes(got: Iterable[int], want: Iterable[int]) -> list[str]:
    """The shapes agree but for axes of size 1 (``[1, 5, 9]`` for ``[5, 9]``): an axis a
    ``.squeeze()`` dropped or an ``unsqueeze`` left out, whatever the check's own hints say of
    its values (a squeezed batch of one was told its examples read each other: blind tester R-BS)."""
    got, want = tuple(got), tuple(want)
    if got == want or tuple(n for n in got if n != 1) != tuple(n for n in want if n != 1):
        return []
    return ["general/unit-axes"]
