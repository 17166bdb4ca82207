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


# Points. The cells above each function's checks record whether it passed them all; the point cells at
# the end score the grader's tests (grading.toml) with the grader's rule, from those results.
CHECKS = {}  # function → True when every check in its cell passed
PROPERTIES = {}  # function → True when every check's call returned, with the reference's dtypes and errors
SCORES = {}  # grader test → its point cell's score
# The line a checks cell prints when its visible checks are done. In the feedback HTML a checks cell
# that holds hidden checks shows what it printed up to this line (the visible checks' results) and
# nothing after it (what the hidden checks' calls printed).
VISIBLE_END = "(hidden checks run when the notebook is graded; their results are not shown)"


def _kept(got, want):
    if isinstance(want, (tuple, list)):
        return isinstance(got, (tuple, list)) and len(got) == len(want) and all(map(_kept, got, want))
    if isinstance(want, torch.Tensor):
        return isinstance(got, torch.Tensor) and got.dtype == want.dtype
    if isinstance(want, str) or want is None:  # raises(...): the error's name, or None
        return got == want
    return True


class Checks:
    """``checks = Checks("apply_mask")``, then ``with checks:`` around each check,
    ``checks.report_visible()`` after the visible ones, then ``checks.report()``: a failed
    check is recorded and printed, not raised."""

    def __init__(self, name):
        self.name, self.run, self.failed = name, 0, []
        self.shown = self.shown_failed = 0  # checks (and failures) already reported by report_visible()
        self.kept, self.lost = False, 0  # this check's call kept its properties; calls that did not
        CHECKS[name] = PROPERTIES[name] = False  # until report() runs: a cell cut short by a timeout passes nothing

    def __enter__(self):
        self.kept = False
        return self

    def properties(self, got, want):
        """The properties a grader's property test checks whatever the values: the call returned
        (no error), each tensor with the reference's dtype, and the same error name as the
        reference's where the check is ``raises(...)``."""
        self.kept = _kept(got, want)

    def __exit__(self, kind, exc, tb):
        self.run += 1
        self.lost += not self.kept
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
        PROPERTIES[self.name] = not self.lost
        if not self.shown:
            self._say("", self.run, self.failed)
        elif self.run > self.shown:  # the hidden checks ran (when graded)
            self._say("hidden ", self.run - self.shown, self.failed[self.shown_failed :])


def credit(points, kinds, required=None, *, test=None, properties=False, others=()):
    """A grader test's score, by the grader's rule (autograder/testing/credit.py and
    runner/scoring.py): points × passed kinds / kinds, rounded to 4 decimals as the grader
    rounds each test, and 0 when a required kind fails. ``kinds`` and ``required``: the
    kind's name → the functions it uses; a kind passes when each of them passed its checks
    cell — for a property test (``properties=True``: dtype kept, errors raised, whatever the
    values) when each of them kept its properties there (PROPERTIES), and the test scores 0
    when none of the skill's ``others`` tests (scored by the point cells above) earned points."""
    table = PROPERTIES if properties else CHECKS

    def passes(uses):
        # a kind no single broken function fails ("uses" empty) is earned only by a notebook whose
        # every function passed: never by untouched stubs or code that computes nothing
        return all(table.get(name, False) for name in (uses or table))

    score = 0.0
    if all(passes(uses) for uses in (required or {}).values()):
        score = round(points * sum(passes(uses) for uses in kinds.values()) / len(kinds), 4)
    if properties and others and not any(SCORES.get(name, 0.0) > 0 for name in others):
        score = 0.0  # the grader's property rule: right dtypes alone, from code that computes nothing, earn nothing
    if test is not None:
        SCORES[test] = score
    return score
