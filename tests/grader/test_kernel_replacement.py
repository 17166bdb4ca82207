"""Forbidden kernels are replaced during a rule-checked call, not watched (issue 28 A).

``OpOverload.redispatch(DispatchKeySet(CPU), …)`` calls a kernel with no ``RecordFunction``
callback: the dispatcher's recording never sees it. So during a rule check the worker
*replaces* the kernels of the operators its rule forbids (``sandbox/probes.KernelBan``, the
patterns in ``autograder/testing/dispatch.py``) on every dispatch key they have a kernel
for; whoever calls one, by whatever route, runs the replacement, which records the use (with
the student's line) and raises. Leaving the call restores torch's kernels. And in
custom_backward's backward grad mode is off and cannot be switched on: no autograd graph
can be built there.

Everything here runs in this process: the replacement lasts only for each ``with`` block."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.autograd.forward_ad as fwd
from conftest import ROOT

from autograder.sandbox.probes import AUTOGRAD_TRIPWIRE, DispatchRecorder, KernelBan, PlainFunctionCtx
from autograder.testing import dispatch

# each rule's operators are the course's, kept beside its suites
sys.path.insert(0, str(ROOT / "tests/suites"))
from course import mha_reshape_data, row_softmax_data

HERE = str(Path(__file__).resolve().parent) + "/"
STYLES = [ROOT / "solutions"] + sorted(p for p in (ROOT / "tests/submissions/styles").iterdir() if p.is_dir())
DK = torch.DispatchKey
S = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0))
W = torch.softmax(S, -1)
_row_rule = dispatch.denies_parts(row_softmax_data.DENIED_PARTS)


def _record(fn, replace, phase="call", autograd_off=False, own=HERE):
    """Run ``fn`` as a rule-checked call: (what it returned or raised, operators recorded, tampered)."""
    entries: dict = {}
    tampered: set[str] = set()
    outcome: object
    with DispatchRecorder(entries, tampered, own, phase, tuple(replace), autograd_off):
        try:
            outcome = fn()
        except RuntimeError as exc:
            outcome = exc
    return outcome, {op: entry for (_, op), entry in entries.items()}, tampered


def _redispatch(op, key, *args):
    return lambda: op.redispatch(torch.DispatchKeySet(key), *args)


def _rows(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def _scripted():
    return torch.jit.script(_rows)  # compiled outside the call


SCRIPTED = None
LIBRARY_OP = "autograder_kernel_test::rows"


def _library_op(x):
    if not hasattr(torch.ops.autograder_kernel_test, "rows"):
        torch.library.define(LIBRARY_OP, "(Tensor x) -> Tensor")
        torch.library.impl(LIBRARY_OP, "CompositeExplicitAutograd", lambda t: torch.softmax(t, -1))
    return torch.ops.autograder_kernel_test.rows(x)


_library_op(S)  # defined outside any call, as an import would


def _node():
    with torch.enable_grad():
        leaf = S.clone().requires_grad_()
        return torch.softmax(leaf, -1).grad_fn  # built outside the call (e.g. at import)


NODE = _node()

#: route → (call, the operator whose replaced kernel must be named)
SOFTMAX_ROUTES = {
    "redispatch CPU": (_redispatch(torch.ops.aten._softmax.default, DK.CPU, S, -1, False), "aten::_softmax"),
    "redispatch AutogradCPU": (_redispatch(torch.ops.aten._softmax.default, DK.AutogradCPU, S, -1, False), "aten::_softmax"),
    "redispatch of a composite kernel to another backend": (
        _redispatch(torch.ops.aten._safe_softmax.default, DK.PrivateUse1, S, -1),
        "aten::_safe_softmax",
    ),
    "redispatch _log_softmax": (_redispatch(torch.ops.aten._log_softmax.default, DK.CPU, S, -1, False), "aten::_log_softmax"),
    "schema handle": (
        lambda: torch._C._dispatch_find_schema_or_throw("aten::_softmax", "").redispatch_boxed(
            torch.DispatchKeySet(DK.CPU), S, -1, False
        ),
        "aten::_softmax",
    ),
    "torch.softmax": (lambda: torch.softmax(S, -1), "aten::softmax"),
    "torch.ops.aten._softmax": (lambda: torch.ops.aten._softmax(S, -1, False), "aten::_softmax"),
    "cross_entropy": (
        lambda: torch.nn.functional.cross_entropy(S[0], torch.tensor([0, 1, 2])),
        "aten::cross_entropy_loss",
    ),
    "sparse softmax": (lambda: torch.sparse.softmax(S[0].to_sparse(), -1), "aten::_sparse_softmax"),
    "vmap": (lambda: torch.vmap(lambda r: torch.softmax(r, -1))(S), "aten::softmax"),
    "TorchScript": (lambda: SCRIPTED(S), "aten::softmax"),
    "a torch.library operator defined before the call": (lambda: _library_op(S), "aten::softmax"),
    "scaled_dot_product_attention": (
        lambda: torch.nn.functional.scaled_dot_product_attention(S, S, S),
        "aten::scaled_dot_product_attention",
    ),
}


@pytest.fixture(scope="module", autouse=True)
def scripted():
    global SCRIPTED
    SCRIPTED = _scripted()


@pytest.mark.parametrize("route", sorted(SOFTMAX_ROUTES))
def test_every_route_to_a_forbidden_kernel_raises_and_is_recorded_with_the_line(route):
    fn, op = SOFTMAX_ROUTES[route]
    outcome, recorded, tampered = _record(fn, row_softmax_data.REPLACED)
    assert isinstance(outcome, RuntimeError) and "the exercise's rule forbids it" in str(outcome), outcome
    assert not tampered, tampered
    replaced = {o: e for o, e in recorded.items() if not _row_rule(o)}
    assert op in replaced, sorted(recorded)
    assert any(e[1] == Path(__file__).name and e[2] > 0 for e in replaced.values()), replaced
    assert dispatch.violations(_parse(recorded), "call", _row_rule)


def _parse(recorded: dict, phase: str = "call"):
    return dispatch.parse([f"{phase}\t{o}\t{e[0]}\t{e[1]}\t{e[2]}\t{e[3]}" for o, e in recorded.items()])


def test_redispatch_is_invisible_to_the_recording_alone():
    """Why the kernels are replaced: without it, the recording sees nothing of a redispatch."""
    fn, _ = SOFTMAX_ROUTES["redispatch CPU"]
    outcome, recorded, _ = _record(fn, ())
    assert isinstance(outcome, torch.Tensor) and not recorded, sorted(recorded)


def test_torchs_kernels_are_back_after_the_call():
    _record(lambda: torch.softmax(S, -1), row_softmax_data.REPLACED)
    for route, (fn, _) in SOFTMAX_ROUTES.items():
        if route in ("cross_entropy", "scaled_dot_product_attention"):
            fn()
        elif route == "sparse softmax":
            assert torch.allclose(fn().to_dense(), W[0])
        else:
            assert torch.allclose(fn(), W if route != "redispatch _log_softmax" else W.log(), atol=1e-6), route


def test_the_replacement_reaches_every_key_with_a_kernel():
    """Backends, the composite alias keys (the kernel of every backend without its own),
    autograd and functorch: every registration of the matched operators is replaced."""
    for patterns in (row_softmax_data.REPLACED, mha_reshape_data.REPLACED, dispatch.NO_AUTOGRAD_REPLACED):
        with KernelBan(patterns, lambda op: None) as every:
            assert not every.failed, every.failed  # every registration of a matched operator is replaced
    ban = KernelBan(row_softmax_data.REPLACED, lambda op: None)
    keys = {key for _, key in ban.targets()}
    assert {"CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd", "Autograd", "FuncTorchBatched"} <= keys, keys
    names = {name for name, _ in ban.targets()}
    assert {"aten::_softmax", "aten::_log_softmax", "aten::_softmax_backward_data", "aten::_safe_softmax"} <= names
    assert not any("matmul" in n or n == "aten::exp" for n in names)


# --------------------------------------------------------------------------- custom_backward
def _derivative_routes():
    return {
        "redispatch of the derivative formula": (
            _redispatch(torch.ops.aten._softmax_backward_data.default, DK.CPU, S, W, -1, S.dtype),
            "aten::_softmax_backward_data",
        ),
        "a grad_fn node built before the call": (lambda: NODE(S), "aten::_softmax_backward_data"),
    }


@pytest.mark.parametrize("route", ["redispatch of the derivative formula", "a grad_fn node built before the call"])
def test_derivative_formulas_raise_in_backward_by_any_route(route):
    fn, op = _derivative_routes()[route]
    outcome, recorded, _ = _record(fn, dispatch.NO_AUTOGRAD_REPLACED, "backward", autograd_off=True)
    assert isinstance(outcome, RuntimeError), outcome
    assert op in recorded and recorded[op][1] == Path(__file__).name, sorted(recorded)
    assert dispatch.violations(_parse(recorded, "backward"), "backward", dispatch.backward_allows)


def test_forward_ad_raises_in_backward():
    def dual():
        with fwd.dual_level():
            return fwd.unpack_dual(torch.softmax(fwd.make_dual(S, S), -1)).tangent

    outcome, recorded, _ = _record(dual, dispatch.NO_AUTOGRAD_REPLACED, "backward", autograd_off=True)
    assert isinstance(outcome, RuntimeError) and "aten::_make_dual" in recorded, (outcome, sorted(recorded))


def test_no_autograd_graph_can_be_built_in_backward():
    """Grad mode is off and stays off: switching it on raises and is a fact of the call; a
    leaf that requires grad gets no graph."""
    AUTOGRAD_TRIPWIRE.install()

    def enable_grad_and_walk():
        with torch.enable_grad():
            leaf = S.clone().requires_grad_()
            return torch.softmax(leaf, -1).grad_fn(S)

    outcome, _, tampered = _record(enable_grad_and_walk, dispatch.NO_AUTOGRAD_REPLACED, "backward", autograd_off=True)
    assert isinstance(outcome, RuntimeError) and "grad mode cannot be switched on" in str(outcome), outcome
    assert any("no autograd graph can be built" in t for t in tampered), tampered

    def leaf_only():
        leaf = S.clone().requires_grad_()
        return torch.softmax(leaf, -1).grad_fn

    outcome, _, tampered = _record(leaf_only, dispatch.NO_AUTOGRAD_REPLACED, "backward", autograd_off=True)
    assert outcome is None and not tampered
    assert torch.is_grad_enabled()  # as it was before the call


def _load(folder: Path, module: str):
    spec = importlib.util.spec_from_file_location(f"_kernel_style_{folder.name}_{module}", folder / f"{module}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(folder))
    return mod


@pytest.mark.parametrize("folder", STYLES, ids=lambda p: p.name)
def test_correct_code_never_meets_a_replaced_kernel(folder):
    """Every correct style and the reference run their rule-checked calls with the kernels
    replaced and grad mode locked, with the same results as without."""
    own = str(folder) + "/"
    fn = _load(folder, "custom_backward").AttentionFunction
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 4, 3, generator=g, dtype=torch.float64) for _ in range(3))
    allowed = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    d_out = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    fctx = PlainFunctionCtx()
    with torch.no_grad():
        out, rec, t = _record(lambda: fn.forward(fctx, q, k, v, allowed), dispatch.NO_AUTOGRAD_REPLACED, "forward", own=own)
        assert isinstance(out, torch.Tensor) and not t, out
        grads, rec, t = _record(lambda: fn.backward(fctx, d_out), dispatch.NO_AUTOGRAD_REPLACED, "backward", True, own)
        assert isinstance(grads, (tuple, list)) and not t, grads
        plain = fn.backward(fctx, d_out)
    assert all(a is None and b is None or torch.equal(a, b) for a, b in zip(grads, plain))
    rows = _load(folder, "row_softmax")
    for call in (
        lambda: rows.softmax_rows(S),
        lambda: rows.log_softmax_rows(S),
        lambda: rows.cross_entropy(S[0], torch.tensor([0, 3, 2])),
    ):
        value, _, t = _record(call, row_softmax_data.REPLACED, own=own)
        assert isinstance(value, torch.Tensor) and not t, value
        assert torch.equal(value, call())
    mha = _load(folder, "mha_reshape").MultiHeadAttention(4, 2, 3).eval()
    x = torch.randn(2, 3, 4, generator=g)
    value, _, t = _record(lambda: mha(x), mha_reshape_data.REPLACED, own=own)
    assert isinstance(value, torch.Tensor) and not t, value


@pytest.mark.parametrize(
    "patterns",
    [
        dispatch.NO_AUTOGRAD_REPLACED,
        row_softmax_data.REPLACED,
        mha_reshape_data.REPLACED,
        ("[a-c]*", "_make_dual"),
        ("*softmax*.out",),  # names are matched without their overload: nothing
    ],
)
def test_the_replaced_kernels_are_exactly_the_registrations_whose_name_matches_a_pattern(patterns):
    """KernelBan.targets matches each operator name once with one regular expression (speed):
    what it finds is, in torch's registration order, every (operator, key) whose name without
    namespace and overload (an in-place ``add_`` read as ``add``) ``fnmatch`` matches."""
    import fnmatch

    from autograder.sandbox.probes import bans

    want = [
        (name, key)
        for name, key in bans.kernel_registrations()
        if any(fnmatch.fnmatchcase(bans._aten_base(name), p) for p in patterns)
    ]
    bans._TARGETS.pop(tuple(patterns), None)
    assert KernelBan(tuple(patterns), lambda op: None).targets() == want
    assert want or patterns == ("*softmax*.out",)


_STANDING = r"""
import gc, sys, warnings
import torch
from autograder.sandbox.probes import STANDING_BAN, remove_kernel_handles, remove_op_loaders

def _bare(cls):
    made = object.__new__(cls)
    torch.nn.Module.__init__(made) if issubclass(cls, torch.nn.Module) else None
    made.dim = -1
    return made

def _custom_softmax(name, module="torch.nn.modules.made_here"):
    def body(t: torch.Tensor) -> torch.Tensor:
        e = (t - t.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    body.__module__ = module  # torch's own custom operators are defined in torch's modules
    return torch.library.custom_op(f"mylib::{name}", mutates_args=())(body)


def _custom_opdef(name):
    return sys.modules["torch._library.custom_ops"].OPDEFS[f"mylib::{name}"]


_custom_softmax("early_softmax")  # a custom operator of the rule's name, registered before the ban
remove_kernel_handles()
remove_op_loaders()
replaced = STANDING_BAN.install(("*softmax*",))
assert replaced > 0, replaced
x = torch.randn(2, 3)
_custom_softmax("late_softmax")  # and one registered after it
routes = {
    # a custom operator's Python body, handed out by OPDEFS, runs allowed kernels (blind red-team
    # tester R-CU: torch's chunked linear cross-entropy, ONNX's Attention-23 reference)
    "OPDEFS early._init_fn": lambda: _custom_opdef("early_softmax")._init_fn(x),
    "OPDEFS late._init_fn": lambda: _custom_opdef("late_softmax")._init_fn(x),
    "torch.ops.import_module": lambda: torch.ops.import_module("torch.nn.modules.linear"),
    "torch.softmax": lambda: torch.softmax(x, -1),
    "Tensor.softmax": lambda: x.softmax(-1),
    "torch.ops": lambda: torch.ops.aten._softmax(x, -1, False),
    "log_softmax": lambda: torch.nn.functional.log_softmax(x, -1),
    # torch's Python softmaxes made of allowed kernels (amax, exp, sum, div): replaced by name
    # in their modules (blind red-team tester R-D reached torch._refs.softmax and kept 6.25/6.25)
    "torch._refs.softmax": lambda: __import__("torch._refs").__dict__["_refs"].softmax(x, -1),
    "torch._refs.special": lambda: sys.modules["torch._refs.special"].log_softmax(x, -1),
    "decompositions._softmax": lambda: sys.modules["torch._decomp.decompositions"]._softmax(x, -1, False),
    # its classes refuse to be built, wherever the class object comes from (blind red-team tester R-E)
    "nn.Softmax": lambda: torch.nn.Softmax(-1)(x),
    "SoftmaxTransform": lambda: sys.modules["torch.distributions.transforms"].SoftmaxTransform()(x),
    # and their methods refuse too: an instance made with object.__new__ runs no __init__ (tester R-F)
    "Softmax.forward, no __init__": lambda: torch.nn.Softmax.forward(_bare(torch.nn.Softmax), x),
    "SoftmaxTransform._call, no __init__": lambda: _bare(sys.modules["torch.distributions.transforms"].SoftmaxTransform)._call(x),
}
for name, route in routes.items():
    try:
        route()
    except RuntimeError as exc:
        assert "switched off in this exercise" in str(exc) or "loads no modules" in str(exc), (name, exc)
    else:
        raise AssertionError(f"{name} ran")
# the handle that holds the registrations is out of reach: no Python object refers to it
assert not [o for o in gc.get_objects() if type(o).__name__ == "_DispatchModule"]
# a kernel registered on top is the caller's own code; dropping it brings back the ban, not torch's kernel
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    lib = torch.library.Library("aten", "IMPL")
    lib.impl("_softmax", lambda *a, **k: "mine", "CPU")
for _ in range(2):  # with the caller's kernel on top, then without it
    try:
        got = torch.ops.aten._softmax(x, -1, False)
    except RuntimeError as exc:
        assert "switched off in this exercise" in str(exc), exc
    else:
        assert got == "mine", "torch's kernel came back"
    lib._destroy()
# a second ban is refused, and operators outside the patterns run as before
try:
    STANDING_BAN.install(("*attention*",))
except RuntimeError:
    pass
else:
    raise AssertionError("installed twice")
assert torch.logsumexp(x, -1).shape == (2,)
assert torch.nn.functional.relu(x).shape == (2, 3)  # the functional API's other functions stay


@torch.library.custom_op("mylib::scale_rows", mutates_args=())
def _scale(t: torch.Tensor) -> torch.Tensor:
    return t * 2


assert torch.equal(_custom_opdef("scale_rows")._init_fn(x), x * 2)  # a custom operator of another name runs
_custom_softmax("students_softmax", module="row_softmax")  # and the exercise's own, by any name
assert torch.allclose(_custom_opdef("students_softmax")._init_fn(x).sum(-1), torch.ones(2))
print("ok")
"""


def test_kernels_replaced_for_a_workers_life_cannot_be_brought_back():
    """A rule's kernels replaced for good (the worker's ``ban`` request, before any
    submission code): every route raises, the registration's handle is out of Python's
    reach, and code that registers its own kernel on top gets only its own code."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _STANDING], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_batch_reads_the_kernel_registry_once_and_reads_what_a_single_grades_server_reads():
    """A batch's preloaded process reads torch's kernel registry once (every run's fork
    server inherits it); the list must be the one a single grade's fork server reads after
    its warm-up, which runs every kind of operation the suites use."""
    script = (
        "import io, sys\n"
        "from autograder.runner.process import preloaded\n"
        "from autograder.sandbox.probes import bans\n"
        "preloaded._preload(['torch.fx.experimental.symbolic_shapes'])\n"
        "assert bans._REGISTRATIONS, 'not read by the preloaded process'\n"
        "batch = (list(bans._REGISTRATIONS), list(bans._NAMES))\n"
        "bans._REGISTRATIONS = bans._NAMES = None\n"
        "from autograder.sandbox import zygote\n"
        "sys.stdout = io.StringIO()\n"
        "zygote._warm_up()\n"
        "sys.stdout = sys.__stdout__\n"
        "assert (bans._REGISTRATIONS, bans._NAMES) == batch, 'the lists differ'\n"
        "print(len(batch[0]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout) > 1000
