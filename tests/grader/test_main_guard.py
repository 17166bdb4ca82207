"""A student's self-test under ``if __name__ == "__main__":`` never runs while a rule-checked
file is graded, so nothing in it is judged — its imports (doctest, unittest, matplotlib),
``print(globals())``, a comparison with torch's own softmax (fairness tester R-Z); but the
block is judged like the rest of the file wherever it *can* run: the file binds ``__name__``,
or imports itself (alone or through a fellow file), so code holding the half-imported module
can rename it before the guard is read; and the guard's ``else`` branch always runs."""

from __future__ import annotations

import pytest

from autograder.testing.failures import CheckFailed
from autograder.testing.source import check_no_banned
from autograder.testing.source.tree import import_cycles

SOFTMAX = ("softmax", "_softmax", "log_softmax", "cross_entropy", "Softmax")
HEAD = (
    "import torch\n\n\ndef softmax_rows(x, dim=-1):\n"
    "    e = (x - x.amax(dim, keepdim=True)).exp()\n    return e / e.sum(dim, keepdim=True)\n\n\n"
)

SELF_TESTS = {
    "doctest": 'if __name__ == "__main__":\n    import doctest\n\n    doctest.testmod()\n',
    "unittest": 'if __name__ == "__main__":\n    import unittest\n\n    unittest.main()\n',
    "matplotlib": (
        'if __name__ == "__main__":\n    import matplotlib.pyplot as plt\n\n'
        "    plt.imshow(softmax_rows(torch.randn(4, 4)))\n    plt.show()\n"
    ),
    "globals-and-getattr": 'if __name__ == "__main__":\n    print(sorted(globals()))\n    f = getattr(torch, "exp")\n',
    "against-torch": (
        'if __name__ == "__main__":\n    x = torch.randn(3, 4)\n'
        "    assert torch.allclose(softmax_rows(x), torch.softmax(x, -1))\n"
    ),
    "reversed-test": '"__main__" == __name__\nif "__main__" == __name__:\n    import inspect\n\n    print(inspect.stack())\n',
}
#: what may run the guard's body after all, each with the construct the scan then names
GUARDS_THAT_RUN = {
    "assigned": ("__name__ = '__main__'\n", "import inspect"),
    "global-in-a-function": ("def rename():\n    global __name__\n    __name__ = '__main__'\n\n\nrename()\n", "import inspect"),
    "import-as": ("import __main__ as __name__\n", "import inspect"),
    "for-target": ("for __name__ in ['__main__']:\n    pass\n", "import inspect"),
    "walrus": ("(__name__ := '__main__')\n", "import inspect"),
    "match-star": ("match ['__main__']:\n    case [*__name__]:\n        pass\n", "import inspect"),
    "match-rest": ("match {}:\n    case {**__name__}:\n        pass\n", "import inspect"),
    "self-import": ("import row_softmax as me\n\nme.__init__('__main__')\n", "import inspect"),
}
INSPECT_GUARD = 'if __name__ == "__main__":\n    import inspect\n\n    inspect.currentframe()\n'


def _refusal(source: str, imports: dict[str, str] | None = None) -> CheckFailed | None:
    try:
        check_no_banned(source, "row_softmax.py", SOFTMAX, what="rule", imports=imports or {})
    except CheckFailed as failed:
        return failed
    return None


@pytest.mark.parametrize("name", sorted(SELF_TESTS))
def test_a_self_test_under_a_main_guard_that_never_runs_is_not_judged(name):
    failed = _refusal(HEAD + SELF_TESTS[name])
    assert failed is None, failed.feedback.detail


@pytest.mark.parametrize("name", sorted(GUARDS_THAT_RUN))
def test_a_main_guard_that_can_run_is_judged_like_the_rest_of_the_file(name):
    prelude, named = GUARDS_THAT_RUN[name]
    failed = _refusal(HEAD + prelude + INSPECT_GUARD)
    assert failed is not None and named in failed.feedback.detail, failed and failed.feedback.detail


def test_a_fellow_file_that_imports_the_exercise_back_makes_its_main_guard_count():
    """helper.py, imported by row_softmax.py, imports row_softmax (half-imported then) and renames it."""
    helper = "import row_softmax\n\nrow_softmax.__init__('__main__')\n\n\ndef scale(x):\n    return x\n"
    source = "from helper import scale\n" + HEAD + INSPECT_GUARD
    failed = _refusal(source, {"helper": helper})
    assert failed is not None and "import inspect" in failed.feedback.detail
    assert _refusal(source, {"helper": "def scale(x):\n    return x\n"}) is None  # no cycle: the guard never runs


def test_a_fellow_files_main_guard_is_not_judged_and_its_else_branch_is():
    helper = "def scale(x):\n    return x\n\n\n" + INSPECT_GUARD
    assert _refusal("from helper import scale\n" + HEAD, {"helper": helper}) is None
    failed = _refusal("from helper import scale\n" + HEAD, {"helper": helper + "else:\n    import inspect\n"})
    assert failed is not None and "helper.py" in failed.feedback.detail


@pytest.mark.parametrize(
    ("branch", "named"),
    [
        ("else:\n    import inspect\n", "import inspect"),
        ("elif torch.softmax(torch.ones(2), 0) is None:\n    pass\n", "torch.softmax"),
    ],
)
def test_the_else_branch_of_a_main_guard_runs_on_import_and_is_judged(branch, named):
    failed = _refusal(HEAD + 'if __name__ == "__main__":\n    pass\n' + branch)
    assert failed is not None and named in failed.feedback.detail, failed and failed.feedback.detail


def test_an_import_off_the_list_gets_the_hint_that_names_the_list_and_the_fix():
    failed = _refusal("import doctest\n" + HEAD)
    assert failed is not None and failed.feedback.hints == ["general/import-not-allowed"]
    assert 'if __name__ == "__main__":' in failed.feedback.detail
    mixed = _refusal("import doctest\n" + HEAD + "f = getattr(torch, 'e' + 'xp')\n")
    assert mixed is not None and mixed.feedback.hints == ["general/dynamic-code"]


def test_import_cycles_are_found_through_any_number_of_files():
    sources = {
        "a": "import b\n",
        "b": "from c import f\n",
        "c": "def f():\n    import a\n",
        "d": "import a\n",
        "e": "import e\n",
        "f": "this does not parse (\n",
    }
    assert import_cycles(sources) == {"a", "b", "c", "e"}


@pytest.mark.slow  # one grade of one skill
def test_a_main_guard_made_to_run_in_a_worker_runs_nothing(tmp_path):
    """Blind red-team tester R-AC renamed the module (enum's ``_convert_``) so that its guard
    ran the body the scan had not read. A worker compiles the submission's files without their
    main guards' bodies (sandbox/mainguard.py): a guard made true by any means runs ``pass``.
    Here the file says so plainly (``__name__ = "__main__"``, so the scan reads the body and
    passes it), and the body would replace the softmax with a wrong one."""
    import shutil

    from conftest import ROOT, grade

    folder = tmp_path / "submission"
    shutil.copytree(ROOT / "solutions", folder)
    with open(folder / "row_softmax.py", "a", encoding="utf-8") as fh:
        fh.write('\n\n__name__ = "__main__"\nif __name__ == "__main__":\n    softmax_rows = lambda scores, dim=-1: scores * 0\n')
    graded = grade(folder, "--skill", "row_softmax", "--reveal-hidden", output=tmp_path / "r.json")
    assert graded.rc == 0, graded.stderr[-2000:]
    assert graded.score("row_softmax") == 15, [(t["name"], t["summary"]) for t in graded.tests() if not t["score"]][:3]
