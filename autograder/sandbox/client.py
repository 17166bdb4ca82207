"""Trusted side of the sandbox: the fork server handle and one handle per worker.

Everything that comes back from a worker goes through ``protocol.decode`` and is data.
Timeouts are enforced here, from outside the worker: when a deadline passes we ask the
fork server to SIGKILL the worker's process group; no signal handler inside the worker is
ever relied on.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from . import channel, features, protocol, zygote
from .cputime import cpu_next_poll_s, cpu_poll_s, cpu_used
from .protocol import PeerClosed, PeerTimeout, ProtocolError, decode, encode, recv_message, send_message
from .replies import Reply, clean_error, str_list
from .spec import WorkerSpec


@dataclass
class Exit:
    """How a worker ended, as the fork server saw it."""

    exit_code: int | None = None
    signal_name: str | None = None
    killed_by_grader: bool = False
    reason: str = ""

    def describe(self) -> str:
        if self.killed_by_grader:
            return self.reason or "stopped by the grader"
        if self.signal_name:
            hint = " (out of memory?)" if self.signal_name == "SIGKILL" else ""
            return f"the worker process was killed by {self.signal_name}{hint}"
        if self.exit_code is not None:
            return f"the worker process exited with status {self.exit_code} (did the code call os._exit() or sys.exit()?)"
        return "the worker process ended unexpectedly"


#: a worker whose resident memory grew by more than this since it was ready is not reused
REUSE_MAX_GROWTH_KIB = 256 << 10
#: a reset takes milliseconds; one that takes longer (code of the submission's ran in it: a
#: module in sys.modules whose __getattr__ sleeps) costs this wait, and a fresh worker instead
RESET_TIMEOUT_S = 5.0
#: a reset's own CPU time is ~0.3 ms: one that runs past this ran the submission's code (a
#: function of the standard library it replaced, which the reset calls: blind red-team tester
#: R-BK spun 4.5 s in `random.setstate` before every test). It is stopped there, and its group
#: gets a fresh worker for each later test, with no reset to run code in
RESET_CPU_S = 0.1


class WorkerDied(Exception):
    def __init__(self, exit: Exit, during: str) -> None:
        super().__init__(f"{exit.describe()} during {during}")
        self.exit = exit
        self.during = during


class WorkerTimeout(Exception):
    """``cpu``: stopped by its CPU-time limit (``seconds`` of the worker's own CPU time),
    not by the wall-clock backstop."""

    def __init__(self, seconds: float, during: str, cpu: bool = False) -> None:
        super().__init__(f"{during} did not finish within {seconds:g} {'CPU ' if cpu else ''}s")
        self.seconds = seconds
        self.during = during
        self.cpu = cpu


class WorkerProtocolError(Exception):
    """The worker sent something that is not a valid reply."""


class WorkerTampered(WorkerProtocolError):
    """A reply changed on its way (a wrong signature): code in the worker at its connection."""


class Worker:
    def __init__(self, sandbox: Sandbox, pid: int, sock: socket.socket) -> None:
        self.sandbox = sandbox
        self.pid = pid
        self.sock = sock
        self.facts: list[str] = []
        self.exit: Exit | None = None
        self.group: Hashable | None = None  # the tests it may serve in turn (Sandbox.begin_test)
        self.stage = 0  # the stage of its group it serves: it never serves another
        self.baseline: tuple[int, int] | None = None  # (threads, RSS KiB) when it was ready
        self.banned: tuple[str, ...] = ()  # kernels replaced for its whole life (ban)
        self.confined: tuple[str, ...] | None = None  # the only submission modules that may run (confine)
        #: CPU seconds the worker spent on its last request; None when it cannot be read here
        self.last_cpu: float | None = None
        self._clock: features.ProcessClock | None = None  # read before and after each request
        self.auth: protocol.FrameAuth | None = None  # its replies' signatures, from the key sent once it is ready
        self._reset_cpu: tuple[float | None, float] | None = None  # its CPU clock when a reset was asked for

    @property
    def alive(self) -> bool:
        return self.exit is None

    def wait_ready(self, timeout: float) -> None:
        header, _ = self._recv(timeout, "worker start-up")
        pid = header.get("pid")
        if type(pid) is int and pid > 0:
            self.pid = pid  # sent by our code in the worker before any submission code runs
        if not header.get("ready"):
            err = header.get("error") or {}
            self._stop(reason="could not start")
            raise WorkerProtocolError(f"the sandbox could not start: {err.get('type')}: {err.get('message')}")
        self.facts = [str(f) for f in header.get("facts", [])][:20]
        self.baseline = self._usage()
        try:
            self.auth = protocol.send_key(self.sock)
        except OSError:
            self._stop(reason="")
            raise WorkerDied(self.exit, "worker start-up") from None  # type: ignore[arg-type]

    def _usage(self) -> tuple[int, int] | None:
        """(threads, resident KiB), asked of the kernel by us (features.process_usage: /proc
        on Linux, proc_pidinfo on macOS) — never of the worker. None where the system cannot
        tell: the worker is then not reused (each test gets a fresh one, same verdicts)."""
        clock = self._opened_clock()
        if clock is not None and clock.opened:
            return clock.usage()  # the stat file the CPU readings use, open already
        return features.process_usage(self.pid)

    def cpu_seconds(self) -> tuple[float | None, float] | None:
        """The worker's CPU time, read by us (never asked of the worker): (seconds its main
        thread ran, to the nanosecond — None where the system shows only ticks; user +
        system seconds of all its threads, in 10 ms ticks), from files opened once per worker
        (features.ProcessClock). None where neither can be read (no /proc): the limits then
        fall back to wall time. ``cpu_used`` turns two readings into seconds."""
        clock = self._opened_clock()
        return clock.read() if clock is not None else None

    def _opened_clock(self) -> features.ProcessClock | None:
        """The worker's /proc files, opened on first use once its pid is known; None before
        that and once it stopped."""
        if self._clock is None and self.pid > 0 and self.exit is None:
            self._clock = features.ProcessClock(self.pid)
        return self._clock

    def _close_clock(self) -> None:
        if self._clock is not None:
            self._clock.close()
            self._clock = None

    def reusable(self) -> bool:
        """Alive, no thread of the submission's left running, no large growth: only such a
        worker serves another test (a thread or a grown heap would follow it there)."""
        now = self._usage()
        if not self.alive or self.baseline is None or now is None:
            return False
        return now[0] <= self.baseline[0] and now[1] <= self.baseline[1] + REUSE_MAX_GROWTH_KIB

    def start_reset(self) -> bool:
        """Ask the worker to make itself fresh for the next test (worker.FreshState) without
        waiting: it restores while the trusted side finishes this test and sets up the next
        (``finish_reset`` takes the answer). False when the request could not be sent."""
        if not self.alive:
            return False
        self._reset_cpu = self.cpu_seconds()
        try:
            send_message(self.sock, {"op": "reset"}, b"", noted_by=self.auth)
        except OSError:
            self._stop(reason="")
            return False
        return True

    def finish_reset(self, timeout: float) -> bool:
        """The answer to ``start_reset``: True when the worker is fresh and still reusable.
        At most RESET_CPU_S of the worker's CPU time (where it can be read) and ``timeout``
        seconds of wall time."""
        start = self._reset_cpu
        try:
            reply, _ = self._recv(timeout, "worker reset", RESET_CPU_S if start is not None else None, start)
        except (WorkerDied, WorkerTimeout, WorkerProtocolError):
            return False
        return reply.get("ok") is True and self.reusable()

    def request(
        self, header: dict, blob: bytes, timeout: float, during: str, cpu_limit: float | None = None
    ) -> tuple[dict, bytes]:
        """Send a request and wait for its reply: at most ``cpu_limit`` seconds of the worker's
        own CPU time (checked every protocol.POLL_S, so a busy machine never reads as a slow
        submission), and at most ``timeout`` wall-clock seconds in any case (the backstop for
        code that sleeps, and the only limit where CPU time cannot be read)."""
        if not self.alive:
            raise WorkerDied(self.exit, during)  # type: ignore[arg-type]
        self.last_cpu = None
        start = self.cpu_seconds()
        try:
            send_message(self.sock, header, blob, noted_by=self.auth)
        except OSError:
            self._stop(reason="")
            raise WorkerDied(self.exit, during) from None  # type: ignore[arg-type]
        try:
            return self._recv(timeout, during, cpu_limit if start is not None else None, start)
        finally:
            if start is not None and self.alive:
                now = self.cpu_seconds()
                self.last_cpu = None if now is None else cpu_used(start, now)

    def _recv(
        self,
        timeout: float,
        during: str,
        cpu_limit: float | None = None,
        cpu_start: tuple[float | None, float] | None = None,
    ) -> tuple[dict, bytes]:
        over: list[float] = []

        def within_cpu() -> bool | float:
            now = self.cpu_seconds()
            if now is None or cpu_start is None:
                return True
            used = cpu_used(cpu_start, now)
            if used <= cpu_limit:  # type: ignore[operator]
                return cpu_next_poll_s(cpu_limit, used)  # type: ignore[arg-type]
            over.append(used)
            return False

        try:
            return recv_message(
                self.sock,
                time.monotonic() + timeout,
                max_blob=self.sandbox.max_reply_bytes,
                keep_waiting=within_cpu if cpu_limit is not None else None,
                poll_s=None if cpu_limit is None else cpu_poll_s(cpu_limit),
                auth=self.auth,
                signed=True,
            )
        except PeerTimeout:
            if not over and cpu_start is not None:  # the wall-clock backstop: what it used, read before the kill
                now = self.cpu_seconds()
                self.last_cpu = None if now is None else cpu_used(cpu_start, now)
            self._stop(reason=f"timed out during {during}", killed=True)
            if over:
                self.last_cpu = over[-1]
                raise WorkerTimeout(cpu_limit, during, cpu=True) from None  # type: ignore[arg-type]
            raise WorkerTimeout(timeout, during) from None
        except PeerClosed:
            self._stop(reason="")
            raise WorkerDied(self.exit, during) from None  # type: ignore[arg-type]
        except ProtocolError as exc:
            self._stop(reason=f"sent malformed data ({exc})", killed=True)
            kind = WorkerTampered if isinstance(exc, protocol.ForgedReply) else WorkerProtocolError
            raise kind(f"the worker sent malformed data during {during}: {exc}") from None

    def run(
        self,
        probe: str,
        source: str | None,
        args: list,
        kwargs: dict,
        timeout: float,
        during: str,
        cpu_limit: float | None = None,
    ) -> Reply:
        """Run a probe; returns the decoded reply (``ok`` False when the code raised)."""
        args_tree, kwargs_tree, blob = _encode_call(args, kwargs)
        header = {"op": "run", "probe": probe, "source": source, "args": args_tree, "kwargs": kwargs_tree}
        reply, rblob = self.request(header, blob, timeout, during, cpu_limit)
        return self._parse(reply, rblob, during)

    def ban(self, patterns: tuple[str, ...], timeout: float = 60.0) -> None:
        """Replace the kernels matching ``patterns`` for the worker's life (probes/bans.py ``_StandingBan``)."""
        self._for_life({"op": "ban", "patterns": list(patterns)}, timeout, "to replace the rule's kernels")
        self.banned = tuple(patterns)

    def confine(self, modules: tuple[str, ...], timeout: float = 60.0) -> None:
        """Let only ``modules`` of the submission, and no code from a string, run in this worker (codegate.py)."""
        self._for_life({"op": "confine", "modules": list(modules)}, timeout, "to confine its code")
        self.confined = tuple(modules)

    def _for_life(self, header: dict, timeout: float, what: str) -> None:
        """A setting for the worker's whole life: only a fresh worker accepts it, before any
        submission code. A refusal is the grader's bug: it raises."""
        reply, _ = self.request(header, b"", timeout, what.removeprefix("to "))
        if reply.get("ok") is not True:
            error = reply.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            raise RuntimeError(f"the worker refused {what}: {str(message)[:300]}")

    def import_module(self, module: str, timeout: float, cpu_limit: float | None = None) -> Reply:
        reply, rblob = self.request({"op": "import", "module": module}, b"", timeout, f"import of {module}.py", cpu_limit)
        return self._parse(reply, rblob, f"import of {module}.py")

    def _parse(self, reply: dict, blob: bytes, during: str) -> Reply:
        """Validate a reply. The worker's own output cap can be raised by submission code, so
        the cap is enforced here, on what we accept: ``output_bytes`` characters per call."""
        try:
            ok = reply.get("ok")
            if type(ok) is not bool:
                raise ProtocolError("reply without ok flag")
            out = reply.get("out", "")
            ops = reply.get("ops", [])
            autograd = reply.get("autograd", [])
            if type(out) is not str or not str_list(ops) or not str_list(autograd):
                raise ProtocolError("malformed reply fields")
            dropped = reply.get("out_dropped", 0)
            dropped = min(dropped, 1 << 53) if type(dropped) is int and dropped > 0 else 0
            cap = self.sandbox.spec.output_bytes
            if len(out) > cap:
                dropped += len(out) - cap
                out = out[:cap]
            ops = [op[:200] for op in ops[:2000]]
            autograd = [use[:200] for use in autograd[:100]]
            tampered = reply.get("tampered", [])
            tampered = (
                [str(t)[:300] for t in tampered[:20]] if str_list(tampered) else ["the reply's recorder field was malformed"]
            )
            dispatched = reply.get("dispatched", [])
            if not str_list(dispatched):
                raise ProtocolError("malformed reply fields")
            dispatched = [line[:1200] for line in dispatched[:2000]]
            if ok:
                value = decode(reply.get("value"), blob)
                return Reply(
                    True,
                    value=value,
                    out=out,
                    out_dropped=dropped,
                    ops=ops,
                    autograd=autograd,
                    tampered=tampered,
                    dispatched=dispatched,
                )
            error = clean_error(reply.get("error"))
            return Reply(
                False,
                error=error,
                out=out,
                out_dropped=dropped,
                ops=ops,
                autograd=autograd,
                tampered=tampered,
                dispatched=dispatched,
            )
        except Exception as exc:  # whatever the worker sent, it is its protocol error
            detail = str(exc) if isinstance(exc, ProtocolError) else f"{type(exc).__name__} while reading it"
            self._stop(reason=f"sent malformed data ({detail})", killed=True)
            raise WorkerProtocolError(f"the worker sent malformed data during {during}: {detail}") from None

    def _stop(self, reason: str, killed: bool = False, wait: bool = True) -> None:
        if self.exit is not None:
            return
        self._close_clock()
        try:
            self.sock.close()
        except OSError:
            pass
        if self.pid <= 0:  # never announced itself: the fork server sweeps it with the rest
            self.exit = Exit(killed_by_grader=killed, reason=reason or "the worker did not start")
            return
        if not wait:  # a normal end: nobody needs the exit status, so don't wait for it
            self.sandbox.kill_async(self.pid)
            self.exit = Exit(killed_by_grader=True, reason=reason)
            return
        info = self.sandbox.kill(self.pid)
        self.exit = Exit(
            exit_code=info.get("exit_code"),
            signal_name=info.get("signal_name"),
            killed_by_grader=killed,
            reason=reason,
        )

    def close(self) -> None:
        """The test is done with it: kept for the next test of its group when it may serve
        one (Sandbox.begin_test), stopped otherwise."""
        if self.group is not None and self.alive and self.sandbox._keep(self):
            return
        self._stop(reason="test finished", killed=True, wait=False)


def _encode_call(args: list, kwargs: dict) -> tuple[Any, Any, bytes]:
    tree, blob = encode((list(args), dict(kwargs)))
    args_tree, kwargs_tree = tree["v"]
    return args_tree, kwargs_tree, blob


class Sandbox:
    """One per grading run: the fork server, pre-forked spare workers, and the worker kept
    for the next test of the same group.

    Forking a worker from the fork server and tearing it down costs ~15 ms of CPU (mostly
    the kernel copying and freeing the page tables of a process with torch imported), a
    third of a grade's CPU when every test had its own. So the trusted side names each
    test's *group* and *stage* (``begin_test``: the plugin uses the skill, and the stage 0
    for a visible suite, 1 for a hidden one) and a worker serves the tests of one group and
    stage in turn, reset between them (worker.FreshState): a hidden test's inputs cannot
    reach a visible test's printed output, nor one skill's state another's. Each stage
    starts on a fresh worker, whichever tests ran between (a reset cannot undo everything
    code may store — an attribute of a library module — so a skill's hidden tests starting
    on its visible tests' worker in one run and on a fresh one in another could score
    differently: blind red-team tester R-DC). A worker that died, timed out, sent a malformed reply, left a
    thread running or grew large is replaced by a fresh one, and ``begin_test(None)`` (the
    default) gives every test its own worker."""

    def __init__(
        self,
        spec: WorkerSpec,
        start_timeout: float = 30.0,
        max_reply_bytes: int = 256 << 20,
        server: tuple[int, socket.socket] | None = None,
    ) -> None:
        self.spec = spec
        self.start_timeout = start_timeout
        self.max_reply_bytes = max_reply_bytes
        self.pid, self.control = server if server is not None else zygote.start()
        self._spares: list[Worker] = []
        self.spawned = 0
        self._group: Hashable | None = None
        self._stage = 0
        self._kept: Worker | None = None
        self.reused = 0
        #: groups whose worker's reset failed (ran past its limits, or answered wrongly): each
        #: of their later tests gets a fresh worker, which needs no reset
        self.no_reset: set[Hashable] = set()

    def begin_test(self, group: Hashable | None, stage: int = 0) -> None:
        """The next test's group and stage: its worker may come from the last test of the
        same group and stage (``may_serve``)."""
        self._group, self._stage = group, stage
        if self._kept is not None and not self.may_serve(self._kept):
            kept, self._kept = self._kept, None
            kept._stop(reason="its group's tests are done", killed=True, wait=False)

    def may_serve(self, worker: Worker) -> bool:
        """Whether ``worker`` may serve the next test: same group and stage."""
        return self._group is not None and worker.group == self._group and worker.stage == self._stage

    def _keep(self, worker: Worker) -> bool:
        """Keep ``worker`` for the next test of its group, its reset already under way."""
        if (
            not self.may_serve(worker)
            or worker.group in self.no_reset
            or self._kept is not None
            or not worker.reusable()
            or not worker.start_reset()
        ):
            return False
        self._kept = worker
        return True

    def _send(self, request: dict, fds: list[int] | None = None) -> dict:
        channel.send(self.control, json.dumps(request).encode(), fds or ())
        self.control.settimeout(self.start_timeout)
        try:
            raw, _ = channel.recv(self.control, 1 << 20)
        finally:
            self.control.settimeout(None)
        if not raw:
            raise RuntimeError("the sandbox fork server stopped")
        return json.loads(raw)

    def _spawn(self) -> Worker:
        """Ask for a worker without waiting: the fork server forks it while we go on, and
        the worker's first message says it is ready (and its pid). A failed fork closes the
        socket, which ``wait_ready`` reports."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            request = {"op": "spawn", "spec": self.spec.to_dict(), "noreply": True}
            channel.send(self.control, json.dumps(request).encode(), [theirs.fileno()])
        except OSError as exc:
            ours.close()
            raise RuntimeError(f"the sandbox fork server is gone: {exc}") from None
        finally:
            theirs.close()
        self.spawned += 1
        return Worker(self, -1, ours)

    #: workers kept forked ahead: the next test's worker then had a whole test to start
    SPARES = 2

    def worker(self) -> Worker:
        """A ready worker: the kept worker of this test's group once reset, else the oldest
        pre-forked spare, else a new one."""
        kept, self._kept = self._kept, None
        if kept is not None:
            if self.may_serve(kept):
                if kept.finish_reset(min(self.start_timeout, RESET_TIMEOUT_S)):
                    self.reused += 1
                    kept.stage = self._stage
                    return kept
                self.no_reset.add(kept.group)  # its reset failed: no more resets for this group
            kept._stop(reason="not reusable", killed=True, wait=False)
        worker = self._spares.pop(0) if self._spares else self._spawn()
        worker.wait_ready(self.start_timeout)
        worker.group, worker.stage = self._group, self._stage
        return worker

    def prefork(self, count: int = SPARES) -> None:
        """Fork workers ahead (up to ``count`` waiting), so their start overlaps the trusted
        side's work."""
        while len(self._spares) < count:
            self._spares.append(self._spawn())

    def connection(self) -> socket.socket:
        """One more control connection to the same fork server, for a trusted process forked
        from this one (``Sandbox.forked``); the server serves both in turn."""
        ours, theirs = channel.pair()
        try:
            channel.send(self.control, json.dumps({"op": "connect"}).encode(), [theirs.fileno()])
        finally:
            theirs.close()
        return ours

    def forked(self, control: socket.socket, spares: int = 0) -> Sandbox:
        """In a process forked from this one: a sandbox of its own over ``control`` (from
        ``connection()``), which takes over the last ``spares`` pre-forked workers (the
        parent gives them away: ``give_spares``). This process's copies of the parent's
        other sockets are closed unused, so its workers and connection stay the parent's alone."""
        taken = self._spares[len(self._spares) - spares :] if spares > 0 else []
        for worker in [*self._spares, *([self._kept] if self._kept else [])]:
            if worker not in taken:
                worker.sock.close()
                worker._close_clock()
        self._spares, self._kept = [], None
        self.control.close()
        box = Sandbox(self.spec, self.start_timeout, self.max_reply_bytes, server=(self.pid, control))
        box._group, box._stage = self._group, self._stage
        for worker in taken:
            worker.sandbox = box
        box._spares = taken
        return box

    def give_spares(self, count: int) -> None:
        """The parent's side of ``forked(control, count)``: its last ``count`` pre-forked
        workers are the forked process's now; only this process's copies of their sockets close."""
        for worker in self._spares[len(self._spares) - count :] if count > 0 else []:
            worker.sock.close()
            worker._close_clock()
            self._spares.remove(worker)

    def kill(self, pid: int) -> dict:
        try:
            return self._send({"op": "kill", "pid": pid})
        except (OSError, RuntimeError, ValueError):
            return {"unknown": True}

    def preload(self, modules: list[str]) -> None:
        """Have the fork server import these before it forks the next worker (no reply)."""
        if modules:
            try:
                channel.send(self.control, json.dumps({"op": "preload", "modules": list(modules)}).encode())
            except OSError:
                pass

    def kill_async(self, pid: int) -> None:
        """Kill and sweep without waiting: the server handles requests in order, so the
        next spawn is answered only after this kill is done."""
        try:
            channel.send(self.control, json.dumps({"op": "kill", "pid": pid, "noreply": True}).encode())
        except OSError:
            pass

    def close(self, wait: bool = True) -> None:
        """Stop the fork server (it kills and sweeps every worker first) and wait for its exit.
        ``wait=False``, for a process about to exit itself: wait only until the server says its
        workers are gone, not for its own exit (~50 ms: the kernel freeing a process with torch);
        the server, whose parent-death signal is SIGKILL, is then its init's to reap."""
        self.begin_test(None)
        for spare in self._spares:
            spare.close()
        self._spares = []
        try:
            channel.send(self.control, json.dumps({"op": "stop"}).encode())
        except OSError:
            pass
        if not wait:
            self.control.settimeout(self.start_timeout)
            try:
                channel.recv(self.control, 64)  # {"stopped": true}, or nothing when the server is gone
            except OSError:
                pass
        self.control.close()
        if wait:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
