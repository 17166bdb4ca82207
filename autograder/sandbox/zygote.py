"""Fork server: one process with torch imported but never used, forking the workers (one per skill: client.Sandbox).

``import torch`` costs ~1.2 s; forking a process that already has it costs a few ms. But
torch's intra-op thread pool does not survive ``fork()`` once it has run, so workers must
come from a process that has imported torch and computed nothing. The trusted pytest
process starts this server before it collects a single test (so no test module, hidden
input or reference result is in the memory the workers inherit), and then talks to it over
a SOCK_SEQPACKET socket (channel.py: a framed SOCK_STREAM on macOS, which has none):
``spawn`` (with the worker's socket passed as a file descriptor), ``kill`` (the worker, its
process group, and every orphan it left behind), ``connect`` (one more control socket, for a
second trusted process forked from the first: see runner/process/split.py; its ``stop`` or
end closes only that connection) and ``stop``.

The server is a *child subreaper*: anything a worker forks and abandons is re-parented
here, and every ``kill`` sweeps such orphans, so nothing a submission starts outlives it.
Where the system has no ``prctl`` (the portable tier: features.py) it is not one, and the
worker's process group is what ``kill`` ends; where fork after threads is unsafe (macOS)
it computes nothing before it forks (no ``_warm_up``).
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import socket
import sys
import time

from . import channel, confine, features, frames, heldsignals, libraries, rawmemory
from .spec import WorkerSpec
from .tree import remove_tree

MAX_REQUEST = 1 << 20
MAX_CLIENTS = 8

#: imported by the fork server of every grading run, whatever the skills: honest code
#: reaches it through common calls (``torch.broadcast_shapes``, gradcheck) and its first
#: import costs ~2.6 s (sympy) in every worker otherwise — which [limits] skill_time_s would
#: count. The grading plugin asks for it the moment the server is forked (its import is the
#: longest thing the server does before the first worker), the run manifest again.
ALWAYS_PRELOAD = ("torch.fx.experimental.symbolic_shapes",)


def describe_status(status: int) -> dict:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return {"signal": sig, "signal_name": name}
    if os.WIFEXITED(status):
        return {"exit_code": os.WEXITSTATUS(status)}
    return {"raw": status}


class _Server:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock  # the first trusted process: its stop (or end) stops the server
        self.clients: list[socket.socket] = [sock]
        self.live: set[int] = set()
        self.status: dict[int, int] = {}
        self.scratch: dict[int, str] = {}  # worker pid → the scratch folder it makes itself

    # ------------------------------------------------------------------ children
    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in self.live:
                self.status[pid] = status

    def _orphans(self) -> list[int]:
        """Our children that are not live workers: what dead workers left behind. Without
        /proc (macOS) none are found: there is no subreaper either, so a worker's orphans
        go to init; killing its process group (``kill``) is what ends them."""
        me = os.getpid()
        found = []
        try:
            with open(f"{features.PROC}/{me}/task/{me}/children") as fh:
                found = [int(p) for p in fh.read().split()]
        except OSError:
            try:
                entries = os.listdir(features.PROC)
            except OSError:
                entries = []
            for entry in entries:
                if not entry.isdigit():
                    continue
                try:
                    with open(f"{features.PROC}/{entry}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == me:
                    found.append(int(entry))
        return [p for p in found if p not in self.live]

    def _sweep(self) -> None:
        for _ in range(200):
            orphans = self._orphans()
            if not orphans:
                break
            for pid in orphans:
                for target in (-pid, pid):
                    try:
                        os.kill(target, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
            time.sleep(0.002)
            self._reap()

    def kill(self, pid: int) -> dict:
        if pid in self.live:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if pid not in self.status:
                try:
                    _, status = os.waitpid(pid, 0)
                    self.status[pid] = status
                except ChildProcessError:
                    pass
            self.live.discard(pid)
        self._sweep()
        folder = self.scratch.pop(pid, None)
        if folder is not None:
            # what it wrote there is gone with it (where the worker had no tmpfs of its own,
            # its files would otherwise fill the run's folder, or memory if that is a tmpfs);
            # any depth, never through a link the worker planted, never raising (tree.py)
            remove_tree(folder)
        status = self.status.pop(pid, None)
        return describe_status(status) if status is not None else {"unknown": True}

    # ------------------------------------------------------------------ loop
    def spawn(self, spec: dict, fd: int) -> dict:
        from .worker import precompile

        worker_spec = WorkerSpec.from_dict(spec)
        precompile(worker_spec)
        # einops' first call and torch's modules a worker cannot import (they load ctypes), here
        # rather than in a call's CPU limit
        made = libraries.warm(worker_spec.copy_dir)
        if any(name in sys.modules for name in rawmemory.CTYPES_MODULES):  # once, or after a preload imported it again
            rawmemory.remove_ctypes(keep=("autograder.",), every_name=bool(made))
        from .probes import seal_switches

        seal_switches()  # here, once for every worker (a no-op unless something was imported since)
        frames.frameless_signal_handlers()  # once: a worker finds it done
        heldsignals.seal_sigmask()  # once: a worker finds it done
        gc.freeze()  # what this server loaded since the last fork: see _zygote_main
        pid = os.fork()
        if pid == 0:
            try:
                for client in self.clients:
                    client.close()
                worker = WorkerSpec.from_dict(spec)
            except BaseException:
                os._exit(6)
            raise _BecomeWorker(worker, fd)  # served from _zygote_main, this server's frames gone
        os.close(fd)
        self.live.add(pid)
        self.scratch[pid] = os.path.join(spec["scratch_root"], f"w{pid}")
        return {"pid": pid}

    def run(self) -> None:
        while self.clients:
            try:
                ready, _, _ = select.select(self.clients, [], [])
            except (OSError, ValueError):
                break
            for sock in ready:
                if not self.serve(sock):
                    if sock is self.sock:
                        self.clients = []
                        break
                    self.clients.remove(sock)
                    sock.close()
        for pid in list(self.live):
            self.kill(pid)
        self._sweep()
        try:  # every worker is gone and swept: what is left of this process is its own exit
            channel.send(self.sock, b'{"stopped": true}')
        except OSError:
            pass

    def serve(self, sock: socket.socket) -> bool:
        """Answer one request from ``sock``; False when that connection ends."""
        try:
            data, fds = channel.recv(sock, MAX_REQUEST, 4)
        except (OSError, ValueError):
            return False
        if not data:
            return False
        try:
            reply = self.handle(json.loads(data), fds)
        except Exception as exc:  # answer, never die on a bad request
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:  # those the request did not take
                os.close(fd)
        self._reap()
        if reply is _END:
            return False
        if reply is None:
            return True
        try:
            channel.send(sock, json.dumps(reply).encode())
        except OSError:
            return False
        return True

    def handle(self, request: dict, fds: list[int]) -> dict | None | object:
        """The reply (None: no reply, _END: the connection ends); takes from ``fds`` the
        descriptors it keeps."""
        op = request.get("op")
        if op == "spawn":
            if len(fds) != 1:
                raise ValueError("spawn needs exactly one socket")
            reply = self.spawn(request["spec"], fds.pop())
            return None if request.get("noreply") else reply  # the worker announces its pid itself
        if op == "kill":
            reply = self.kill(int(request["pid"]))
            return None if request.get("noreply") else reply
        if op == "preload":
            for name in request.get("modules", [])[:32]:
                try:
                    __import__(str(name))
                except Exception:  # a missing preload only costs time
                    pass
            return None
        if op == "connect":
            if len(fds) != 1 or len(self.clients) >= MAX_CLIENTS:
                raise ValueError("connect needs exactly one socket (and at most a few connections)")
            self.clients.append(socket.socket(fileno=fds.pop()))
            return None
        if op == "stop":
            return _END
        return {"error": f"unknown op {op!r}"}


_END = object()


class _BecomeWorker(BaseException):
    """Raised in a freshly forked worker by ``_Server.spawn``, caught by ``_zygote_main``:
    the worker then serves from there, its Python stack a few frames deep instead of the
    server's loop, request handler and spawn below it. (Written when every torch operator a
    rule-checked call ran recorded the whole Python stack, so that each frame below the
    submission's code cost every recorded operator ~1 µs; the recording no longer captures
    stacks, probes.lines.LineMarks, but a walk for the submission's frame still passes them: the
    shallow stack costs nothing to keep.) (A BaseException: no ``except Exception`` of the
    server on the way can stop it.)"""

    def __init__(self, spec: WorkerSpec, fd: int) -> None:
        super().__init__()
        self.spec = spec
        self.fd = fd


def _warm_up() -> None:
    """Pay torch's first-use costs once, here, instead of in every worker.

    We run one small instance of every kind of operation the suites use (~10 ms). Not
    here: the sympy behind ``torch.fx.experimental.symbolic_shapes`` (~0.35 s), imported on
    first use by ``autograd.grad`` with grad_outputs (gradcheck), ``torch.broadcast_shapes``
    and ``key_padding_mask`` checks — a skill that needs it names it in grading.toml
    (``preload``), and the server imports it while pytest is still collecting. ``set_num_threads(1)``
    comes first, so no OpenMP thread pool ever exists in this process — the reason a
    process that has computed is normally unsafe to fork."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    # Before any inter-op work: the pool would otherwise start with one thread per core the
    # first time it is used. Workers cannot start threads (seccomp.thread_program).
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already used in this process: its threads died with the fork anyway
    g = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(2, 3, 4, generator=g, dtype=dtype, requires_grad=True)
        mask = torch.tril(torch.ones(3, 3, dtype=torch.bool))
        s = (x @ x.transpose(-2, -1) / 2.0).masked_fill(~mask, float("-inf"))
        y = torch.softmax(s, dim=-1) @ x
        torch.autograd.grad(y.sum(), [x], retain_graph=True)
        y.sum().backward()
        torch.einsum("bij,bkj->bik", x.detach(), x.detach()).logsumexp(-1)
        F.scaled_dot_product_attention(x[None].detach(), x[None].detach(), x[None].detach(), is_causal=True)
        F.cross_entropy(x.detach().reshape(-1, 4), torch.zeros(6, dtype=torch.long))
        torch.nn.Linear(4, 4, dtype=dtype)(x.detach())
        mha = torch.nn.MultiheadAttention(4, 2, batch_first=True, dtype=dtype)
        mha(x.detach(), x.detach(), x.detach(), need_weights=False)
    import torch.autograd.gradcheck

    from . import probes

    probes.kernel_registrations()  # read once here (~75 ms), not in every worker that runs a rule check


def _zygote_main(sock: socket.socket) -> None:
    # The cyclic garbage collector stays off here: this process only loads modules (torch,
    # its warm-up, preloads such as sympy: a full collection walks ~10^6 objects, ~0.3 s)
    # and forks. Before each fork what it holds is frozen (gc.freeze), so a worker's
    # collections never walk, and so never copy, the pages it shares with this process;
    # the worker turns collection back on, everything visible, before any submission code
    # runs (worker.worker_main).
    gc.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trusted side's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    confine.set_parent_death_signal(signal.SIGKILL)
    try:
        confine.set_child_subreaper()
    except OSError:
        pass
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep = sock.fileno()
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)
    sys.stdout = sys.stderr = open(os.devnull, "w")
    # registers, computes nothing: every worker inherits them, made before its library guard (worker.serve)
    libraries.register_torchs_lazy_kernels()
    if features.fork_after_threads_safe():  # else fork before threads: nothing computed here (features.py)
        try:
            _warm_up()
        except Exception:  # a cold worker is slower, not wrong
            pass
    _fixed_global_rngs()
    worker: tuple[WorkerSpec, int] | None = None
    try:
        _Server(sock).run()
    except _BecomeWorker as become:  # only ever in a freshly forked worker: see _Server.spawn
        worker = (become.spec, become.fd)
    if worker is not None:  # outside the handler: the worker's code never sees it as the exception being handled
        from .worker import worker_main

        worker_main(*worker)  # never returns
        os._exit(6)


def _fixed_global_rngs() -> None:
    """Every worker (and every test a reused worker serves: worker.FreshState) starts from
    these states, so code that draws from the global RNGs without seeding them — a bias
    initialised with ``torch.randn`` — gets the same numbers, and the same feedback, in every
    run. Python seeds ``random`` from the OS, and torch's default generator may differ per
    process too."""
    import random

    import torch

    torch.manual_seed(0)
    random.seed(0)
    nprandom = sys.modules.get("numpy.random")
    if nprandom is not None:
        nprandom.seed(0)


def start() -> tuple[int, socket.socket]:
    """Fork the server from the calling (trusted) process; returns (pid, control socket)."""
    parent, child = channel.pair()
    pid = os.fork()
    if pid == 0:
        try:
            parent.close()
            _zygote_main(child)
        finally:
            os._exit(0)
    child.close()
    return pid, parent
