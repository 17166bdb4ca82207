"""Run a grading session's tests on two cores: two trusted processes, one fork server.

A test is a conversation between the trusted process (inputs, reference, comparison) and
its worker (the submission's code): one of them waits while the other computes, so one
grading run keeps one core busy. With two cores to use (``usable_cpus``), the trusted
pytest process forks once its tests are collected — torch imported, nothing computed —
and the two take the run's skills in turn from a queue (``SkillQueue``: largest first,
whichever process is free takes the next), so they end close together whatever each
skill costs this submission. Both get workers from the same fork server (the
child over its own connection), so the isolation of the submission is exactly as before.

Every visible test runs before any hidden one, in both processes (``Barrier``): a visible
test's output is shown where a hidden test's details are not, and a visible test that ran
after a hidden one — in its own process, or in the other while both ran — could read off the
wall clock what that one did (red team R-CZ). So a process runs the visible tests of each
skill it takes, until the queue is empty; then it waits until the other has run its visible
tests too, and runs the hidden tests of the same skills, in the order it took them.

Results do not depend on the split:

- a skill's tests all run in the process that took it, in their order (so does each
  module's state on the trusted side: the time budget, functions that timed out, a module
  that failed to import — a skill's tests only call its own module), and each test's seed
  comes from its id;
- the child sends the pytest-json-report entries of its tests, and the parent puts them
  into its own report in collection order, before the report is written;
- the run's cap on printed output (``PRINTED_PER_RUN``) is shared by halves: each process
  may keep half of it (so a run that prints more than that — 512 KiB by default — may keep
  the text of different tests from one run to the next; scores and hints never depend on it).

If the child does not deliver (it crashed, or was killed), the parent runs the skills the
child took itself, after its own, so a result is never lost, only later. Which process
ran a skill varies from run to run; what the skill's tests give does not.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest

from ...core import timeline
from ...sandbox import features
from ...sandbox.confine import set_parent_death_signal


def usable_cpus() -> int:
    """Cores this process may use: its CPU affinity, capped by a cgroup CPU quota, v2 or v1
    (a container with half a CPU, like Gradescope's, gains nothing from a second process)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        cpus = min(cpus, max(1, int(quota)))
    return cpus


def _cgroup_quota() -> float | None:
    """CPUs the cgroup's quota allows (quota / period), None without a quota."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as fh:  # v2: "max 100000" or "50000 100000"
            quota, period = fh.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:  # v1: -1 means no quota
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as fq, open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as fp:
            quota_us, period_us = int(fq.read()), int(fp.read())
        return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None


def skills(items: list[pytest.Item], manifest: Any) -> list[list[pytest.Item]] | None:
    """The run's tests by skill, each skill's tests in collection order, the costliest skills
    first — by what the reference's tests took (``manifest.skill_seconds``, from each skill's
    reference_cpu.toml) where every skill has that figure, else by number of tests (ties keep
    suite order); None when there are not two skills. Whichever process is free takes the
    next, so the costliest last would leave one process waiting for the other at the end."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        spec = manifest.test(item.nodeid)
        groups.setdefault(spec.skill if spec else item.nodeid.split("::")[0], []).append(item)
    if len(groups) < 2 or len(groups) > SkillQueue.MAX:
        return None
    seconds = getattr(manifest, "skill_seconds", None) or {}
    if all(skill in seconds for skill in groups):
        return [groups[skill] for skill in sorted(groups, key=lambda skill: seconds[skill], reverse=True)]
    return sorted(groups.values(), key=len, reverse=True)


class SkillQueue:
    """The skills still to run, in a pipe both processes read: whichever finishes its skill
    first takes the next (largest first), so the two end close together whatever each
    skill costs — a skill's cost depends on the submission, not on its number of tests.

    Written here rather than with ``multiprocessing``: the queue is filled before the fork
    and only ever read, and a read of a pipe is atomic, so each skill's index (two bytes)
    goes to exactly one process — no lock, no manager process, nothing to clean up.
    """

    MAX = 4096  # indices written at once must fit the pipe's buffer (64 KiB on Linux)
    _INDEX = struct.Struct(">H")

    def __init__(self, groups: list[list[pytest.Item]]) -> None:
        self.groups = groups
        self._read, write = os.pipe()
        try:
            os.write(write, b"".join(self._INDEX.pack(i) for i in range(len(groups))))
        finally:
            os.close(write)

    def take(self) -> list[pytest.Item]:
        """The next skill's tests; empty once every skill is taken."""
        data = os.read(self._read, self._INDEX.size)
        return self.groups[self._INDEX.unpack(data)[0]] if len(data) == self._INDEX.size else []

    def close(self) -> None:
        os.close(self._read)


def run_loop(session: pytest.Session, items: list[pytest.Item]) -> None:
    """pytest's own ``pytest_runtestloop`` body, over ``items``."""
    for i, item in enumerate(items):
        nextitem = items[i + 1] if i + 1 < len(items) else None
        _run(session, item, nextitem)


#: the next skill is taken when this many of the current skill's tests are left (the one
#: starting included), and its first worker forked then: a worker takes 30-90 ms to fork and
#: confine, two tests about as long, so it is ready when the skill starts (taken at the last
#: test, its fork only began at that test's teardown, and the first test waited for it)
TAKE_AHEAD = 2


class Barrier:
    """Where each of the two processes waits, before its first hidden test, until the other
    has run its last visible test: one byte each way over two pipes made before the fork.
    A process that stops early (done, or dead) closes its end, which lets the other on."""

    def __init__(self) -> None:
        self._to_child = os.pipe()
        self._to_parent = os.pipe()
        self._mine: int | None = None
        self._theirs: int | None = None
        #: run once, just before this process tells the other it has arrived (the child hands
        #: over its visible tests' results there: ``_child``)
        self.before_arriving: Callable[[], None] | None = None

    def take_side(self, child: bool) -> None:
        """After the fork: keep this process's ends (its write end, the other's read end)."""
        (read_p, write_p), (read_c, write_c) = self._to_parent, self._to_child
        mine, theirs = (write_p, read_c) if child else (write_c, read_p)
        for fd in (read_p, write_p, read_c, write_c):
            if fd not in (mine, theirs):
                os.close(fd)
        self._mine, self._theirs = mine, theirs

    def arrive(self) -> None:
        """This process has run its last visible test (idempotent)."""
        if self._mine is not None:
            hook, self.before_arriving = self.before_arriving, None
            if hook is not None:
                hook()
            try:
                os.write(self._mine, b"v")
            except OSError:  # the other is gone: nobody to tell
                pass
            os.close(self._mine)
            self._mine = None

    def wait(self) -> bool:
        """Arrive, then wait for the other to arrive (True) or to be gone without arriving
        (False: it stopped before it had run its visible tests)."""
        self.arrive()
        if self._theirs is None:
            return True
        timeline.mark("trusted: waiting for the other process's visible tests")
        try:
            return os.read(self._theirs, 1) == b"v"
        finally:
            self.close()

    def close(self) -> None:
        self.arrive()
        if self._theirs is not None:
            os.close(self._theirs)
            self._theirs = None


def segments(queue: SkillQueue, first: list[pytest.Item], stage: Any) -> Any:
    """This process's tests, a part at a time: the visible tests of each skill it takes
    (``first``, then from ``queue``, taken as the generator is advanced), then, once the
    queue is empty, the hidden tests of those same skills, in the order they were taken."""
    hidden: list[list[pytest.Item]] = []
    group = first
    while group:
        visible = [item for item in group if not stage(item)]
        if visible:
            yield visible
        if len(visible) < len(group):
            hidden.append([item for item in group if stage(item)])
        group = queue.take()
    yield from hidden


def run_queue(
    session: pytest.Session,
    grading: Any,
    queue: SkillQueue,
    first: list[pytest.Item],
    barrier: Barrier | None = None,
    takeover: bool = False,
) -> list[pytest.Item]:
    """Run ``first``, then skills taken from ``queue`` until none is left, visible tests
    before hidden ones (``segments``; before the first hidden test, ``barrier``, and where the
    other process stopped short of it and ``takeover``, the visible tests of the skills it
    took); the tests run. The next part is taken ``TAKE_AHEAD`` tests before the end of the current one, so
    pytest knows the test that follows the last (its fixtures' teardown depends on it) and
    the next part's first worker is forked while those tests run."""
    ran: list[pytest.Item] = []
    stage = lambda item: grading.group(item.nodeid)[1]  # 0 visible, 1 hidden
    parts = segments(queue, first, stage)
    current: list[pytest.Item] = next(parts, [])
    grading.plan(current)
    grading.sandbox.prefork(grading.spares_at_start())
    while current:
        timeline.mark(f"trusted: skill of {current[0].nodeid.split('::')[0]}")
        following: list[pytest.Item] | None = None
        for i, item in enumerate(current):
            if following is None and len(current) - i <= TAKE_AHEAD:
                following = next(parts, [])
                grading.plan([*current[i:], *following])
                # this test's own worker too when it starts the part (a part of TAKE_AHEAD tests or fewer)
                grading.sandbox.prefork(grading.spares_at_start() if i == 0 else grading.spares_after(item.nodeid))
            if barrier is not None and stage(item):
                if not barrier.wait() and takeover:  # the other stopped before its visible tests were done:
                    # run them here, before any hidden test, so none of them runs after one (R-DG)
                    left = _visible_left(queue.groups, [*ran, *current], stage)
                    ran += _run_before(session, grading, left, [*current[i:], *(following or [])])
                barrier = None  # every visible test has run, in this process or the other
            if i + 1 < len(current):
                nextitem: pytest.Item | None = current[i + 1]
            else:
                nextitem = following[0] if following else None
            _run(session, item, nextitem)
            ran.append(item)
        current = following or []
    if barrier is not None:
        barrier.arrive()  # no hidden test here: the other need not wait for this process
    return ran


def _run_before(session: pytest.Session, grading: Any, tests: list[pytest.Item], rest: list[pytest.Item]) -> list[pytest.Item]:
    """Run ``tests`` before ``rest`` (whose first test the last one run was already torn down
    for: down to what the first of ``tests`` needs, as pytest would have); the tests run."""
    grading.plan([*tests, *rest])
    if tests:
        _teardown_for(session, tests[0])
    for j, test in enumerate(tests):
        _run(session, test, tests[j + 1] if j + 1 < len(tests) else rest[0])
    grading.plan(rest)
    return tests


def _visible_left(groups: list[list[pytest.Item]], mine: list[pytest.Item], stage: Callable) -> list[pytest.Item]:
    """The visible tests of the skills this process did not take (``mine``: the tests it has
    run or is running; once the queue is empty every other skill is the other process's)."""
    ids = {id(item) for item in mine}
    return [item for group in groups if not any(id(i) in ids for i in group) for item in group if not stage(item)]


def _teardown_for(session: pytest.Session, nextitem: pytest.Item) -> None:
    """Tear down what ``nextitem`` does not share with the tests run so far, as pytest does
    after a test for the one that follows (``runtestprotocol``'s last step); for a test put
    in after the last one was already torn down for another."""
    state = getattr(session, "_setupstate", None)
    if state is not None:
        state.teardown_exact(nextitem)


def _run(session: pytest.Session, item: pytest.Item, nextitem: pytest.Item | None) -> None:
    item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
    if session.shouldfail:
        raise session.Failed(session.shouldfail)
    if session.shouldstop:
        raise session.Interrupted(session.shouldstop)


def runtestloop(session: pytest.Session, grading: Any) -> bool | None:
    """Run the session's tests in two processes; None (pytest's own loop runs them) when
    that would not help: one core, one skill, a profile being taken, a collection error."""
    config = session.config
    if session.testsfailed or config.option.collectonly or os.environ.get("AUTOGRADER_PROFILE"):
        return None
    report = getattr(config, "_json_report", None)
    if report is None or grading.manifest.limits.trusted_processes < 2 or usable_cpus() < 2:
        return None
    if not features.fork_after_threads_safe():  # this process has computed: no fork here (macOS)
        return None
    groups = skills(session.items, grading.manifest)
    if groups is None:
        return None
    grading.trusted_processes = 2
    grading.runtime.printed_left = {pool: left // 2 for pool, left in grading.runtime.printed_left.items()}
    control = grading.sandbox.connection()
    given = 1 if len(grading.sandbox._spares) > 1 else 0  # a pre-forked worker for the child's first test
    queue = SkillQueue(groups)
    mine = queue.take()  # the largest skill, taken before the fork: the child starts on the next
    barrier = Barrier()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        barrier.take_side(child=True)
        _child(session, grading, queue, control, write_end, given, barrier)  # never returns
    os.close(write_end)
    barrier.take_side(child=False)
    control.close()
    grading.sandbox.give_spares(given)
    # read as it comes: the child writes its visible tests' results before the barrier, which
    # would block on a full pipe (64 KiB) while this process waits there
    reader = _Reader(read_end)
    try:
        ran = run_queue(session, grading, queue, mine, barrier, takeover=True)
        barrier.close()
        payload = reader.result()
    except BaseException:
        _end(pid, kill=True)
        raise
    finally:
        queue.close()
        barrier.close()
    data = _collect(pid, payload)
    done = {item.nodeid for item in ran}
    data = _not_rerun(data, done)
    if data is not None:
        _merge(session, grading, report, data)
        done |= {entry["nodeid"] for entry in data.get("tests", [])}
    missing = [item for item in session.items if item.nodeid not in done]
    if missing:  # the child did not deliver: the skills it took run here
        grading.plan(missing)
        run_loop(session, missing)
    report._json_tests = OrderedDict(sorted(report._json_tests.items(), key=_order(session.items)))
    return True


def _order(items: list[pytest.Item]):
    index = {item.nodeid: i for i, item in enumerate(items)}
    return lambda entry: index.get(entry[0], len(index))


class _Reader:
    """Everything the child writes on its results pipe, read by a thread until the child's exit
    closes it."""

    def __init__(self, fd: int) -> None:
        self._fh = os.fdopen(fd, "rb")
        self._data = b""
        self._thread = threading.Thread(target=self._read, name="autograder-half-results", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with self._fh:
            self._data = self._fh.read()

    def result(self) -> bytes:
        self._thread.join()
        return self._data


def _delivered(payload: bytes) -> dict | None:
    """The child's results: JSON objects, one a line — its visible tests' results, written
    before the barrier, then everything (``"final"``), written last, just before its exit. The
    final one where it arrived whole; else the first, marked ``"partial"`` (the child stopped
    among its hidden tests: those run here); None where neither arrived whole (a child that died
    mid-write leaves a truncated line: no object)."""
    whole = []
    for line in payload.split(b"\n"):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            whole.append(data)
    final = [data for data in whole if data.get("final")]
    if final:
        return final[-1]
    return {**whole[0], "partial": True} if whole else None


def _not_rerun(data: dict | None, done: set[str]) -> dict | None:
    """The child's results, unless they are partial and this process ran any of their tests
    itself: the child stopped between handing over its visible results and arriving at the
    barrier, so this process ran those tests again (``run_queue``'s takeover), and only its own
    runs count — merging both counted the tests' failures and CPU twice, and the doubled CPU
    could push the skill's hidden tests past its budget (blind red-team tester R-DH)."""
    if data is not None and data.get("partial") and any(entry.get("nodeid") in done for entry in data.get("tests", [])):
        return None
    return data


def _collect(pid: int, payload: bytes) -> dict | None:
    """The child's results (None: it did not deliver), the child taken care of either way."""
    data = _delivered(payload)
    if data is None or data.get("partial"):
        _end(pid, kill=True)  # it died, or was killed, before its last write
    else:
        _reap_in_background(pid)  # its last act was that write: its exit (~20 ms, a torch process) overlaps ours
    return data


def _reap_in_background(pid: int) -> None:
    threading.Thread(target=_end, args=(pid, False), name="autograder-reap-half", daemon=True).start()


def _end(pid: int, kill: bool) -> int | None:
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else None


def _child(
    session: pytest.Session, grading: Any, queue: SkillQueue, control, write_end: int, spares: int, barrier: Barrier
) -> None:
    code = 1
    try:
        set_parent_death_signal(signal.SIGKILL)
        grading.sandbox = grading.runtime.sandbox = grading.sandbox.forked(control, spares)
        report = session.config._json_report
        out = os.fdopen(write_end, "wb")

        def send(**extra: Any) -> None:
            tests = [report._json_tests[nodeid] for nodeid in report._json_tests]  # this process's, in the order run
            out.write(json.dumps(_state(session, grading, tests) | extra).encode() + b"\n")
            out.flush()

        # the visible tests' results go to the parent before the barrier: should this process stop
        # among its hidden tests, the parent reruns only those (a visible test rerun after a hidden
        # one could read how long that took off the clock: blind red-team tester R-DG)
        barrier.before_arriving = send
        run_queue(session, grading, queue, queue.take(), barrier)
        barrier.close()
        grading.sandbox.close()
        send(final=True)
        out.close()
        code = 0
    except BaseException:  # the parent runs these tests itself
        code = 1
    finally:
        os._exit(code)


def _state(session: pytest.Session, grading: Any, tests: list[dict]) -> dict:
    """What the child hands the parent: its tests' results and the run's state they left."""
    return {
        "tests": tests,
        "testsfailed": session.testsfailed,
        "facts": grading.runtime.facts,
        "spent": grading.runtime.spent,
        "cpu_spent": grading.runtime.cpu_spent,
        "cpu_slowest": grading.runtime.cpu_slowest,
        "cpu_slowest_by_target": grading.runtime.cpu_slowest_by_target,
        "spawned": grading.sandbox.spawned,
        "reused": grading.sandbox.reused,
    }


def _merge(session: pytest.Session, grading: Any, report: Any, data: dict) -> None:
    for entry in data.get("tests", []):
        report._json_tests[entry["nodeid"]] = entry
    session.testsfailed += int(data.get("testsfailed", 0))
    for fact in data.get("facts", []):
        if fact not in grading.runtime.facts:
            grading.runtime.facts.append(fact)
    for module, seconds in data.get("spent", {}).items():
        grading.runtime.spent[module] = grading.runtime.spent.get(module, 0.0) + seconds
    for module, seconds in data.get("cpu_spent", {}).items():
        grading.runtime.cpu_spent[module] = grading.runtime.cpu_spent.get(module, 0.0) + seconds
    for module, seconds in data.get("cpu_slowest", {}).items():
        grading.runtime.cpu_slowest[module] = max(grading.runtime.cpu_slowest.get(module, 0.0), seconds)
    for module, targets in data.get("cpu_slowest_by_target", {}).items():
        mine = grading.runtime.cpu_slowest_by_target.setdefault(module, {})
        for target, seconds in targets.items():
            mine[target] = max(mine.get(target, 0.0), seconds)
    grading.sandbox.spawned += int(data.get("spawned", 0))
    grading.sandbox.reused += int(data.get("reused", 0))
