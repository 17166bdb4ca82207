# Setup (locked): run this cell first. nbgrader scores a test cell that writes anything to
# stderr as 0, so warnings are silenced here; the helpers below are what the tests use.
import math
import warnings

warnings.filterwarnings("ignore")

import torch

torch.set_printoptions(precision=6, sci_mode=False)

# (the course's names for its checks: nbgrader_setup.py beside the suites, in place of this line)


def rand(*shape, seed):
    """Reproducible float64 test inputs."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def rand_bool(*shape, seed, p=0.6):
    """A reproducible bool mask, True with probability p."""
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) < p


def grads(fn, *inputs, seed=0):
    """Gradients of sum(fn(*inputs) * r) with respect to every input (r fixed by seed)."""
    xs = [x.detach().clone().requires_grad_(True) for x in inputs]
    out = fn(*xs)
    r = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    return torch.autograd.grad((out * r).sum(), xs)


def load_weights(module, weights):
    """Copy weights (name → tensor) into the module's parameters, by name. Its buffers (a
    causal mask registered as in the lessons, say) keep their own values: only the
    parameters are part of the exercise."""
    params = dict(module.named_parameters())
    missing, unexpected = sorted(set(params) - set(weights)), sorted(set(weights) - set(params))
    assert not missing and not unexpected, (
        f"parameter names differ from the exercise's: missing {missing}, unexpected {unexpected}"
    )
    with torch.no_grad():
        for name, value in weights.items():
            assert tuple(params[name].shape) == tuple(value.shape), (
                f"{name}: expected shape {list(value.shape)}, got {list(params[name].shape)}"
            )
            params[name].copy_(value)
    return module


def raises(fn, *args, **kwargs):
    """The name of the exception fn(*args, **kwargs) raises, or None."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # the name is what the test compares
        return type(exc).__name__
    return None


def check(got, want, what, rtol=1e-6, atol=1e-8):
    """True when got matches want (type, shape, dtype, then values); otherwise an
    AssertionError that says what differs."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want), (
            f"{what}: expected {len(want)} results, got {type(got).__name__}"
        )
        return all(check(g, w, f"{what}[{i}]", rtol, atol) for i, (g, w) in enumerate(zip(got, want)))
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{what}: expected a tensor, got {type(got).__name__}"
        assert tuple(got.shape) == tuple(want.shape), f"{what}: expected shape {list(want.shape)}, got {list(got.shape)}"
        if want.dtype == torch.bool:
            assert got.dtype == torch.bool, f"{what}: expected a bool tensor, got {got.dtype}"
        got = got.detach().to(torch.float64)
        want = want.to(torch.float64)
        assert not (torch.isnan(got) & ~torch.isnan(want)).any(), f"{what}: NaN where a number was expected"
        ok = torch.isclose(got, want, rtol=rtol, atol=atol) | (torch.isinf(want) & (got == want))
        if not bool(ok.all()):
            index = tuple(int(i) for i in (~ok).nonzero()[0])
            raise AssertionError(
                f"{what}: first mismatch at index {list(index)}: expected {want[index].item():.6g}, got {got[index].item():.6g}"
            )
        return True
    if isinstance(want, (bool, str)) or want is None:
        assert got == want, f"{what}: expected {want!r}, got {got!r}"
        return True
    if isinstance(want, (int, float)):
        assert isinstance(got, (int, float, torch.Tensor)), f"{what}: expected a number, got {type(got).__name__}"
        got = float(got)
        assert math.isclose(got, want, rel_tol=rtol, abs_tol=atol) or got == want, f"{what}: expected {want!r}, got {got!r}"
        return True
    raise TypeError(f"check: cannot compare {type(want).__name__}")


# Checks are the student's guide while working: each checks cell records whether its function
# passed every check. The points are the course autograder's (the score cell at the end): it
# grades this notebook's solution cell with its own tests, hidden ones included, when graded.
CHECKS = {}  # function → True when every check in its cell passed
# The line a checks cell prints when its visible checks are done. In the feedback HTML a checks cell
# that holds hidden checks shows what it printed up to this line (the visible checks' results) and
# nothing after it (what the hidden checks' calls printed).
VISIBLE_END = "(hidden checks run when the notebook is graded; their results are not shown)"


class Checks:
    """``checks = Checks("apply_mask")``, then ``with checks:`` around each check,
    ``checks.report_visible()`` after the visible ones, then ``checks.report()``: a failed
    check is recorded and printed, not raised."""

    def __init__(self, name):
        self.name, self.run, self.failed = name, 0, []
        self.shown = self.shown_failed = 0  # checks (and failures) already reported by report_visible()
        CHECKS[name] = False  # until report() runs: a cell cut short by a timeout passes nothing

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        self.run += 1
        if isinstance(exc, Exception):
            self.failed.append(f"check {self.run}: {type(exc).__name__}: {exc}")
            return True
        return False

    def _say(self, what, run, failed):
        if failed:
            print(f"{self.name}: {len(failed)} of {run} {what}checks failed", *failed, sep="\n")
        else:
            print(f"{self.name}: all {run} {what}checks passed")

    def report_visible(self):
        self._say("visible ", self.run, self.failed)
        print(VISIBLE_END, flush=True)
        self.shown, self.shown_failed = self.run, len(self.failed)

    def report(self):
        CHECKS[self.name] = not self.failed
        if not self.shown:
            self._say("", self.run, self.failed)
        elif self.run > self.shown:  # the hidden checks ran (when graded)
            self._say("hidden ", self.run - self.shown, self.failed[self.shown_failed :])


def summary(names):
    """What the score cell shows while the student works: which functions pass their checks
    here. No score: the points are the course autograder's, decided when the notebook is graded."""
    for name in names:
        state = {True: "passes its checks", False: "fails a check"}.get(CHECKS.get(name), "not checked yet (run its cell)")
        print(f"{name}: {state}")
    print(
        "Your points for this notebook are decided when it is graded, by the course autograder's own tests "
        "(hidden ones too) run on your solution cell; passing these checks is a good sign, not a score."
    )
