"""A worker made fresh between tests (``FreshState``): what honest code would find in a newly
forked worker, put back before each test after the first (worker.py serves the tests of one
skill in turn)."""

from __future__ import annotations

import _random
import builtins
import itertools
import operator
import os
import random
import signal
import sys
import types

import torch

from .spec import WorkerSpec

_map, _is_not, _compress = map, operator.is_not, itertools.compress  # restore's, bound before any exercise code


class FreshState:
    """The process-wide state a test may change, as it was before any submission code ran.

    A worker serves the tests of one skill in turn, visible before hidden (``client.Sandbox``);
    before each test after the first, ``restore`` makes it look freshly forked to honest
    code: the submission's modules are imported again (module-level state starts over), and
    the RNGs, default dtype, grad mode, print options, builtins, ``sys.path``, the modules
    that were loaded, ``sys.stdout``/``stderr``, environment,
    working folder, signal handlers and interval timers are as they were. What hostile code
    changes beyond that stays its own: the worker runs nothing but this submission's code
    for this skill (never a visible test after a hidden one), and the trusted side replaces a worker that left a thread
    running, grew large, or failed in any way."""

    SIGNALS = (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGTERM)
    TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)

    def __init__(self, spec: WorkerSpec) -> None:
        self.prefix = spec.copy_dir.rstrip("/") + "/"
        self.cwd = os.getcwd()
        self.torch_rng = torch.get_rng_state()
        self.python_rng = random.getstate()
        self.dtype = torch.get_default_dtype()
        self.print_options = torch._tensor_str.get_printoptions()  # the fork server's, whatever they are
        self.builtins = dict(builtins.__dict__)
        self.path = list(sys.path)
        self.modules = dict(sys.modules)
        self._module_names = list(self.modules)  # for restore's diff, which runs in C (map, compress)
        self._module_objects = list(self.modules.values())
        self.streams = (sys.stdout, sys.stderr)
        self.handlers = {sig: signal.getsignal(sig) for sig in self.SIGNALS}
        nprandom = sys.modules.get("numpy.random")  # its state, when the fork server loaded it
        self.numpy_rng = nprandom.get_state() if nprandom is not None else None
        # What restore calls, bound now, before any exercise code: a reset runs between the
        # recorded windows, where a module-level lookup (``random.setstate``, ``os.environ.clear``)
        # would run what the exercise had put in its place (blind red-team tester R-BU replaced
        # ``random.setstate`` and built a Jacobian there with TorchScript, which no tripwire sees)
        self._sys, self._os = vars(sys), vars(os)
        self._path_list = sys.path
        self._environ_object, self._environ_data = os.environ, os.environ._data  # type: ignore[attr-defined]
        self._environ_saved = dict(self._environ_data)  # encoded, as putenv takes them
        self._putenv, self._unsetenv, self._chdir = os.putenv, os.unsetenv, os.chdir
        self._setitimer, self._signal = signal.setitimer, signal.signal
        self._random_instance, self._random_setstate = random._inst, _random.Random.setstate
        self._set_torch_rng = torch.default_generator.set_state
        self._set_default_dtype, self._set_grad_enabled = torch._C._set_default_dtype, torch._C._set_grad_enabled
        self._set_printoptions = torch.set_printoptions
        self._set_numpy_rng = nprandom.set_state if nprandom is not None else None

    def restore(self) -> None:
        for timer in self.TIMERS:
            self._setitimer(timer, 0)
        for sig, handler in self.handlers.items():
            self._signal(sig, handler)
        modules, snapshot = sys.modules, self.modules
        # Only an entry the snapshot lacks can be the submission's (the snapshot predates its
        # code); a snapshot entry it removed or replaced is put back. Both lists are found
        # without a Python loop over the ~2 000 modules: that loop was most of a reset.
        for name in modules.keys() - snapshot.keys():
            # read without running the submission's code (a module's __getattr__, an object's
            # __file__ property: blind red-team tester R-C slept there, 30 s a reset); what is
            # no plain module was put there by the submission
            module = modules[name]
            file = module.__dict__.get("__file__") if type(module) is types.ModuleType else None
            odd_file = file is not None and (type(file) is not str or file.startswith(self.prefix))
            if type(module) is not types.ModuleType or odd_file:
                del modules[name]  # the submission's own modules: imported afresh
        changed = _map(_is_not, _map(modules.get, self._module_names), self._module_objects)
        for name in _compress(self._module_names, changed):
            modules[name] = snapshot[name]
        self._sys["stdout"], self._sys["stderr"] = self.streams
        builtins.__dict__.clear()
        builtins.__dict__.update(self.builtins)
        self._sys["path"] = self._path_list
        self._path_list[:] = self.path
        # os.environ as it was: its object, its copy and the C environment (a variable set with
        # os.putenv is in the C environment alone); without a method of its class, which the
        # exercise could have replaced
        self._os["environ"] = self._environ_object
        for key in list(self._environ_data):
            self._unsetenv(key)
        self._environ_data.clear()
        for key, value in self._environ_saved.items():
            self._putenv(key, value)
        self._environ_data.update(self._environ_saved)
        self._chdir(self.cwd)
        self._set_torch_rng(self.torch_rng)
        _, internal, gauss_next = self.python_rng  # random.Random.setstate's own unpacking
        self._random_setstate(self._random_instance, internal)
        vars(self._random_instance)["gauss_next"] = gauss_next
        if self._set_numpy_rng is not None:
            self._set_numpy_rng(self.numpy_rng)
        self._set_default_dtype(self.dtype)
        self._set_grad_enabled(True)
        self._set_printoptions(**self.print_options)
