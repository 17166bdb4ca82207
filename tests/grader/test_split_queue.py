"""runner/process/split.py: the two trusted processes of a run take its skills from one queue.

Each skill must run exactly once, whole, and the largest first; which process takes which
depends on timing, which is why the results may not (test_fairness compares one and two
processes).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.runner.process.split import SkillQueue, skills


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


class _Manifest:
    """What ``skills`` asks of the run manifest: the skill of a test id (None: not graded)."""

    def __init__(self, by_file: dict[str, str]) -> None:
        self.by_file = by_file

    def test(self, nodeid: str):
        skill = self.by_file.get(nodeid.split("::")[0])
        return SimpleNamespace(skill=skill) if skill else None


def _items(counts: dict[str, int]) -> list[_Item]:
    return [_Item(f"{skill}/test_{skill}.py::test_{i}") for skill, n in counts.items() for i in range(n)]


def test_skills_are_whole_in_collection_order_and_the_largest_comes_first():
    items = _items({"qkv": 3, "masks": 5, "row_softmax": 3, "sdpa_masks": 1})
    manifest = _Manifest({f"{s}/test_{s}.py": s for s in ("qkv", "masks", "row_softmax", "sdpa_masks")})
    groups = skills(items, manifest)
    assert [g[0].nodeid.split("/")[0] for g in groups] == ["masks", "qkv", "row_softmax", "sdpa_masks"]  # ties keep suite order
    assert [item.nodeid for item in groups[0]] == [f"masks/test_masks.py::test_{i}" for i in range(5)]
    assert sorted(item.nodeid for g in groups for item in g) == sorted(item.nodeid for item in items)


def test_the_skills_the_reference_spent_most_on_come_first_when_every_skill_has_that_figure():
    """Whichever process is free takes the next skill, so the costliest must not come last:
    by test count, custom_backward (few tests, each costly) came last and one process waited
    ~0.4 s for the other at the end of a full grade."""
    items = _items({"qkv": 5, "masks": 4, "custom_backward": 2})
    by_file = {f"{s}/test_{s}.py": s for s in ("qkv", "masks", "custom_backward")}
    manifest = _Manifest(by_file)
    manifest.skill_seconds = {"qkv": 0.6, "masks": 0.55, "custom_backward": 0.76}
    assert [g[0].nodeid.split("/")[0] for g in skills(items, manifest)] == ["custom_backward", "qkv", "masks"]
    manifest.skill_seconds = {"qkv": 0.6, "masks": 0.55}  # one without the figure: test counts for all
    assert [g[0].nodeid.split("/")[0] for g in skills(items, manifest)] == ["qkv", "masks", "custom_backward"]


def test_one_skill_is_not_split():
    items = _items({"qkv": 4})
    assert skills(items, _Manifest({"qkv/test_qkv.py": "qkv"})) is None


def test_two_processes_taking_from_the_queue_run_every_skill_exactly_once_largest_first():
    groups = [[_Item(f"skill{i}::t")] for i in range(40)]
    queue = SkillQueue(groups)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the second process: takes slowly, so both get some
        os.close(read_end)
        taken = []
        while group := queue.take():
            taken.append(group[0].nodeid)
            time.sleep(0.002)
        os.write(write_end, ",".join(taken).encode())
        os._exit(0)
    os.close(write_end)
    mine = []
    while group := queue.take():
        mine.append(group[0].nodeid)
        time.sleep(0.001)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as fh:
        theirs = [name for name in fh.read().decode().split(",") if name]
    queue.close()
    assert os.WEXITSTATUS(status) == 0
    assert sorted(mine + theirs) == sorted(f"skill{i}::t" for i in range(40))  # each once, none lost
    assert mine and theirs
    for taken in (mine, theirs):
        order = [int(name[len("skill") : -len("::t")]) for name in taken]
        assert order == sorted(order)  # each process took them in queue order: largest first


def test_an_empty_queue_gives_nothing_more():
    queue = SkillQueue([[_Item("a::t")], [_Item("b::t")]])
    assert [queue.take()[0].nodeid, queue.take()[0].nodeid, queue.take(), queue.take()] == ["a::t", "b::t", [], []]
    queue.close()


def test_the_childs_results_count_only_when_their_json_object_arrived_whole():
    """The parent no longer waits for the child's exit status: a whole JSON object — the
    child's last write before its exit — is the proof it delivered; anything cut short (it
    died mid-write) makes the parent run the child's skills itself."""
    from autograder.runner.process.split import _delivered

    whole = json.dumps({"tests": [{"nodeid": "a::t", "outcome": "passed"}], "testsfailed": 0, "final": True}).encode()
    assert _delivered(whole) == json.loads(whole)
    assert all(_delivered(whole[:cut]) is None for cut in range(len(whole)))
    assert _delivered(b"[1, 2]") is None and _delivered(b"") is None


def test_the_childs_visible_results_count_where_it_stopped_among_its_hidden_tests():
    """The child writes its visible tests' results before the barrier, then everything last:
    the last, where it arrived whole; else the first, marked partial (the parent reruns only
    the hidden tests, so no visible test runs after a hidden one: blind red-team tester R-DG)."""
    from autograder.runner.process.split import _delivered

    visible = json.dumps({"tests": [{"nodeid": "a/v::t"}], "testsfailed": 0}).encode() + b"\n"
    final = json.dumps({"tests": [{"nodeid": "a/v::t"}, {"nodeid": "a/h::t"}], "testsfailed": 1, "final": True}).encode()
    assert _delivered(visible + final + b"\n") == json.loads(final)
    for cut in range(len(final)):
        assert _delivered(visible + final[:cut]) == {**json.loads(visible), "partial": True}
    assert all(_delivered(visible[:cut]) is None for cut in range(len(visible) - 1))


def test_partial_results_of_tests_the_parent_ran_again_are_dropped_whole():
    """A child that stopped after handing over its visible results but before arriving: the
    parent took those tests over, and its own runs count, once (R-DH: merged too, the tests'
    failures and CPU counted twice)."""
    from autograder.runner.process.split import _not_rerun

    partial = {"tests": [{"nodeid": "b/v::t0"}], "testsfailed": 1, "spent": {"b": 0.5}, "partial": True}
    assert _not_rerun(partial, {"a/v::t0", "b/v::t0"}) is None
    assert _not_rerun(partial, {"a/v::t0"}) is partial  # arrived, then stopped: its visible results stand
    final = {**partial, "partial": False, "final": True}
    assert _not_rerun(final, {"b/v::t0"}) is final
    assert _not_rerun(None, set()) is None


def _child_writing(payload: bytes, then) -> tuple[int, bytes]:
    """A forked child that writes ``payload`` on a pipe, then ``then()`` (its end); the pid and
    what the parent read."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_end)
            os.write(write_end, payload)
            os.close(write_end)
            then()
        finally:
            os._exit(3)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        return pid, fh.read()


def _reaped_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)  # a zombie still answers; a reaped pid does not (no reuse this fast)
        except ProcessLookupError:
            return True
        time.sleep(0.01)
    return False


def test_a_child_that_delivered_counts_whatever_its_exit_and_is_reaped():
    """Results that arrived whole count even if the child then dies by a signal (its exit
    status is not waited for); the child is reaped all the same, in the background."""
    from autograder.runner.process.split import _collect

    whole = json.dumps({"tests": [], "testsfailed": 0, "final": True}).encode()
    pid, payload = _child_writing(whole, lambda: os.kill(os.getpid(), signal.SIGKILL))
    assert _collect(pid, payload) == {"tests": [], "testsfailed": 0, "final": True}
    assert _reaped_within(pid, 10)


def test_a_child_that_stopped_mid_write_gives_nothing_and_is_reaped_at_once():
    from autograder.runner.process.split import _collect

    whole = json.dumps({"tests": [{"nodeid": "a::t"}], "testsfailed": 0}).encode()
    pid, payload = _child_writing(whole[: len(whole) // 2], lambda: os._exit(1))
    assert _collect(pid, payload) is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped, before _collect returned


class _Hook:
    def __init__(self, events: list) -> None:
        self.events = events

    def pytest_runtest_protocol(self, item, nextitem) -> None:
        self.events.append(("run", item.nodeid, nextitem.nodeid if nextitem else None))


class _PlanningGrading:
    """What ``run_queue`` asks of the grading session: the session's own planning
    (``GradingSession.plan``/``spares_*``, skills by file name), and a sandbox that records
    how many spare workers it was asked to have forked, and when."""

    def __init__(self, events: list) -> None:
        from autograder.runner.plugin.session import GradingSession

        self._fresh_after: dict[str, int] = {}
        self.events = events
        self.sandbox = SimpleNamespace(prefork=lambda count: events.append(("prefork", count)))
        for name in ("plan", "spares_at_start", "spares_after"):
            setattr(self, name, getattr(GradingSession, name).__get__(self))

    def group(self, nodeid: str) -> tuple[str, int]:
        return nodeid.split("/")[0], 0


def test_the_next_skills_first_worker_is_forked_before_the_current_skills_last_test():
    """A worker takes tens of ms to fork and confine: the next skill's first worker must be
    asked for while the current skill's last tests run, not after them (the first test of
    every skill but the first would wait for its worker)."""
    from autograder.runner.process import split

    events: list = []
    session = SimpleNamespace(shouldfail=False, shouldstop=False)
    hook = _Hook(events)
    groups = [_items({"qkv": 4}), _items({"masks": 1}), _items({"sdpa": 3})]
    for group in groups:
        for item in group:
            item.config = SimpleNamespace(hook=hook)
            item.fixturenames = ["sub"]
    queue = SkillQueue(groups[1:])
    ran = split.run_queue(session, _PlanningGrading(events), queue, groups[0])
    queue.close()
    assert [item.nodeid for item in ran] == [item.nodeid for group in groups for item in group]
    runs = [e for e in events if e[0] == "run"]
    assert [nextitem for _, _, nextitem in runs] == [item.nodeid for group in groups for item in group][1:] + [None]
    order = [item.nodeid for group in groups for item in group]
    ran_at = {e[1]: i for i, e in enumerate(events) if e[0] == "run"}
    for previous in groups[:-1]:
        # from the start of the previous skill's first test (a one-test skill: the test before it)...
        start = ran_at[previous[0].nodeid] if len(previous) > 1 else ran_at[order[order.index(previous[0].nodeid) - 1]]
        # ...to its last test: a spare was asked for meanwhile
        window = events[start + 1 : ran_at[previous[-1].nodeid]]
        assert any(e[0] == "prefork" and e[1] >= 1 for e in window), (previous[-1].nodeid, events)
    assert not [e for e in events[ran_at[order[-1]] :] if e[0] == "prefork"]  # none forked to be thrown away


def test_a_process_runs_the_visible_tests_of_every_skill_it_takes_before_their_hidden_ones():
    """``segments``: the visible part of each skill as it is taken, then — once the queue is
    empty — the hidden parts of the same skills, in the order taken (a skill's tests all run
    in one process, so its trusted-side state stays whole)."""
    from autograder.runner.process.split import segments

    def skill(name, visible, hidden):
        return [_Item(f"{name}/v::t{i}") for i in range(visible)] + [_Item(f"{name}/h::t{i}") for i in range(hidden)]

    queue = SkillQueue([skill("b", 1, 2), skill("c", 2, 0), skill("d", 0, 1)])
    parts = [[item.nodeid for item in part] for part in segments(queue, skill("a", 2, 1), lambda item: "/h::" in item.nodeid)]
    queue.close()
    assert parts == [
        ["a/v::t0", "a/v::t1"],
        ["b/v::t0"],
        ["c/v::t0", "c/v::t1"],
        ["a/h::t0"],
        ["b/h::t0", "b/h::t1"],
        ["d/h::t0"],
    ]


def _barrier_child(barrier, before_arriving) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            barrier.take_side(child=True)
            before_arriving()
            barrier.wait()
        finally:
            os._exit(0)
    barrier.take_side(child=False)
    return pid


@pytest.mark.parametrize("how", ["arrives", "dies"])
def test_the_barrier_lets_a_process_on_only_once_the_other_arrived_or_is_gone(how):
    """``Barrier.wait`` returns once the other process has run its last visible test (True) —
    or has ended without arriving (False: it died; nothing is left to wait for)."""
    from autograder.runner.process.split import Barrier

    barrier = Barrier()
    pid = _barrier_child(barrier, (lambda: time.sleep(0.3)) if how == "arrives" else (lambda: os._exit(1)))
    start = time.monotonic()
    arrived = barrier.wait()
    waited = time.monotonic() - start
    os.waitpid(pid, 0)
    barrier.close()
    assert arrived == (how == "arrives")
    assert waited >= 0.25 if how == "arrives" else waited < 5, waited


class _StagedGrading(_PlanningGrading):
    def group(self, nodeid: str) -> tuple[str, int]:
        return nodeid.split("/")[0], int("/h::" in nodeid)


@pytest.mark.parametrize("takeover", [True, False])
def test_where_the_other_process_died_before_the_barrier_its_visible_tests_run_before_any_hidden_one(takeover):
    """The parent, told at the barrier that the child stopped without arriving, runs the
    visible tests of the skills the child took before its own first hidden test: rerun at
    the end, they would run after hidden ones and could time them (blind red-team tester
    R-DG). Skills the parent took are not run twice, and the child's hidden tests are left
    for the end (``runtestloop``'s rerun)."""
    from autograder.runner.process import split

    events: list = []
    teardown = SimpleNamespace(teardown_exact=lambda nextitem: events.append(("teardown for", nextitem.nodeid)))
    session = SimpleNamespace(shouldfail=False, shouldstop=False, _setupstate=teardown)
    hook = _Hook(events)

    def skill(name, visible, hidden):
        group = [_Item(f"{name}/v::t{i}") for i in range(visible)] + [_Item(f"{name}/h::t{i}") for i in range(hidden)]
        for item in group:
            item.config, item.fixturenames = SimpleNamespace(hook=hook), ["sub"]
        return group

    groups = [skill("a", 2, 2), skill("b", 2, 1), skill("c", 1, 1), skill("d", 0, 1)]
    queue = SkillQueue(groups)
    mine = queue.take()  # a: the parent's; the child takes b and c, then dies
    assert [queue.take()[0].nodeid, queue.take()[0].nodeid] == ["b/v::t0", "c/v::t0"]
    barrier = split.Barrier()
    pid = _barrier_child(barrier, lambda: os._exit(1))
    ran = split.run_queue(session, _StagedGrading(events), queue, mine, barrier, takeover=takeover)
    os.waitpid(pid, 0)
    queue.close()
    order = [e[1] for e in events if e[0] == "run"]
    assert [item.nodeid for item in ran] == order
    taken_over = ["b/v::t0", "b/v::t1", "c/v::t0"] if takeover else []
    assert order == ["a/v::t0", "a/v::t1", *taken_over, "a/h::t0", "a/h::t1", "d/h::t0"]  # d: left in the queue
    # the parent's last visible test ran before the barrier told it: torn down for its first hidden
    # test, then (a second teardown, as pytest's own) for the first test taken over
    nextitems = order[1:] + [None]
    if takeover:
        nextitems[1] = "a/h::t0"
        steps = [e for e in events if e[0] != "prefork"]
        assert steps[steps.index(("run", "a/v::t1", "a/h::t0")) + 1 :][:2] == [
            ("teardown for", "b/v::t0"),
            ("run", "b/v::t0", "b/v::t1"),
        ]
    assert [nextitem for _, _, nextitem in (e for e in events if e[0] == "run")] == nextitems
    assert all(e[0] != "teardown for" for e in events) or takeover


TAKEOVER_CONFTEST = """
import os, sys
from types import SimpleNamespace
from autograder.runner.process import split

def pytest_runtestloop(session):
    items = session.items
    groups = [[i for i in items if f"/{name}/" in f"/{i.nodeid}"] for name in ("a", "b")]
    queue = split.SkillQueue(groups)
    mine = queue.take()
    queue.take()  # b: the child's, which dies before the barrier
    barrier = split.Barrier()
    pid = os.fork()
    if pid == 0:
        barrier.take_side(child=True)
        os._exit(1)
    barrier.take_side(child=False)
    grading = SimpleNamespace(
        group=lambda nodeid: (nodeid.split("/")[0], int("_hidden" in nodeid)),
        plan=lambda items: None,
        spares_at_start=lambda: 0,
        spares_after=lambda nodeid: 0,
        sandbox=SimpleNamespace(prefork=lambda count: None),
    )
    split.run_queue(session, grading, queue, mine, barrier, takeover=True)
    os.waitpid(pid, 0)
    queue.close()
    return True
"""

FIXTURES = """
import pytest

@pytest.fixture(scope="package")
def package_state():
    yield "package"

@pytest.fixture(scope="module")
def module_state(package_state):
    yield "module"
"""


def test_tests_taken_over_at_the_barrier_run_under_pytests_own_setup_and_teardown(tmp_path):
    """A real pytest session: the parent's last visible test was torn down for its first
    hidden one (the same package); the taken-over tests of another package then set up and
    tear down cleanly (pytest checks that the previous test was torn down properly)."""
    import subprocess
    import sys

    for package, files in {"a": ("test_visible", "test_hidden"), "b": ("test_visible", "test_hidden")}.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "conftest.py").write_text(FIXTURES)
        for name in files:
            body = "".join(f"def test_{i}(module_state):\n    print('RAN {package}/{name}/{i}')\n" for i in range(2))
            (tmp_path / package / f"{name}.py").write_text(body)
    (tmp_path / "conftest.py").write_text(TAKEOVER_CONFTEST)
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-s", "-q", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": root},
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    ran = re.findall(r"RAN (\S+)", done.stdout)
    assert ran == [
        "a/test_visible/0",
        "a/test_visible/1",
        "b/test_visible/0",
        "b/test_visible/1",
        "a/test_hidden/0",
        "a/test_hidden/1",
    ]
