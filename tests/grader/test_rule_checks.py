"""The exercise's rules ("no torch softmax in row_softmax.py", "no SDPA in mha_reshape.py",
"no autograd in backward") hold against evasion: the static scan denies, for a whole file,
every construct that can reach a torch function without naming it or switch off the
recorder, and names the construct and line; the run-time recorder cannot be switched off
unnoticed. Honest code in any style never trips either."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from conftest import ROOT

from autograder.sandbox.probes import OpRecorder
from autograder.testing.failures import CheckFailed
from autograder.testing.source import check_no_banned, reaches, scan
from autograder.testing.source.tree import read_python_source

SOFTMAX = ("softmax", "_softmax", "log_softmax", "cross_entropy", "Softmax", "scaled_dot_product_attention")
SDPA = ("MultiheadAttention", "multi_head_attention_forward", "scaled_dot_product_attention")
AUTOGRAD = ("backward", "grad", "enable_grad", "set_grad_enabled", "vjp", "functional")
BACKWARD_SCOPE = ("AttentionFunction.backward", "attention_backward", "softmax_backward")

EVASIONS = {
    "vars": ('def f(x):\n    return vars(torch)["soft" "max"](x, -1)\n', "vars"),
    "disable": ("def f(x):\n    with torch._C.DisableTorchFunction():\n        return x\n", "DisableTorchFunction"),
    "disable-from-import": ("from torch._C import DisableTorchFunction as D\n", "torch._C"),
    "private-torch": ("def f(x):\n    return torch._C._VariableFunctions.exp(x)\n", "private"),
    "dict": ("def f(x):\n    return torch.__dict__['exp'](x)\n", "__dict__"),
    "computed-getattr": ("def f(x, n):\n    return getattr(torch, n)(x)\n", "getattr with a computed name"),
    "getattr-as-value": ("g = getattr\n", "getattr"),
    "attrgetter": ("import operator\nf = operator.attrgetter('exp')\n", "attrgetter"),
    "importlib": ("import importlib\nF = importlib.import_module('torch.nn.functional')\n", "import importlib"),
    "dunder-import": ("F = __import__('torch')\n", "__import__"),
    "sys-modules": ("import sys\nF = sys.modules['torch']\n", "sys.modules"),
    "wrapped": ("grad = torch.autograd.grad.__wrapped__\n", "__wrapped__"),
    "string-literal": ("NAME = 'softmax'\n", "names softmax"),
    "aten-string": ("OP = 'aten::_softmax'\n", "names _softmax"),
    "getattribute": ("def f(x):\n    return object.__getattribute__(torch, 'exp')(x)\n", "__getattribute__"),
    "globals": ("def f():\n    return globals()['torch']\n", "globals"),
    "thread": ("import threading\n", "import threading"),
    "frame": ("import sys\nf = sys._getframe\n", "_getframe"),
    # a library's own getattr, as a method of any object (blind red-team tester R-U reached
    # torch.distributions, torch._C and a closure's cells this way: 50 points)
    "jinja2": ("import jinja2\n", "import jinja2"),
    "method-getattr-kept": ("def f(env):\n    return env.getattr\n", "a lookup by a name"),
    "method-getattr-computed": ("def f(env, n):\n    return env.getattr(torch, n)\n", "env.getattr with a computed name"),
    "method-getattr-banned-name": ("def f(env):\n    return env.getattr(torch, 'softmax')\n", "getattr(…, 'softmax')"),
    "method-getattr-dunder": ("def f(env, g):\n    return env.getattr(g, '__closure__')\n", "'__closure__'"),
    "torch-importlib": ("U = torch.importlib.util\n", "importlib"),
    # torch's own lookup of an attribute path by a string, and functions built from code objects
    # (blind red-team tester R-V: 50 points with four rules broken)
    "torch-ao": ("from torch.ao.quantization.utils import getattr_from_fqn\n", "torch.ao"),
    "function-from-code": ("import types\ndef f(c, g):\n    return types.FunctionType(c, g)\n", "FunctionType"),
    "code-constants": ("def f(c):\n    return c.co_consts\n", "co_consts"),
    # a module beyond the list rule-checked files may import (traitlets' import_item, pytest's
    # monkeypatch.resolve: blind red-team tester R-W, 50 points), and a library's lookup imported
    "not-on-the-import-list": ("import pytest\n", "not a module these files may import"),
    "not-on-the-import-list-from": ("from _pytest.monkeypatch import resolve\n", "import resolve"),
    "a-librarys-lookup-imported": ("from operator import attrgetter as a\n", "attrgetter"),
    "a-librarys-lookup-by-its-name": ("import functools\ng = functools.safe_getattr\n", "a library's lookup by a name"),
    "a-librarys-lookup-from": ("from numpy import rgetattr_tool\n", "a library's lookup by a name"),
    # what breakpoint() calls: its default imports and calls what PYTHONBREAKPOINT names
    "breakpoint-hook": ("import sys\ndef f(x):\n    return sys.breakpointhook(x)\n", "breakpointhook"),
    "breakpoint-default-hook": ("import sys\nh = sys.__breakpointhook__\n", "__breakpointhook__"),
    "eval": ("f = eval('torch.softmax')\n", "eval"),
    "torchscript-from-a-string": (
        'CU = torch.jit.CompilationUnit("def f(x: Tensor) -> Tensor:\\n    return torch.softmax(x, -1)")\n',
        "CompilationUnit",
    ),
    "torchscript-import": ("from torch.jit import CompilationUnit\n", "CompilationUnit"),
    "script-module-from-bytes": ("import io\ndef f(blob):\n    return torch.jit.load(io.BytesIO(blob))\n", "torch.jit.load"),
    "torch-load-import": ("from torch import load\n", "from torch import load"),
    # a name that becomes code: dataclasses build __init__ from the annotations' keys, typing
    # evaluates a string in a type alias (blind red-team tester O's round, 2026-12-05)
    "annotations-written": ("class C:\n    __annotations__['a=print(1)'] = int\n", "__annotations__"),
    "annotations-as-a-key": ("C = type('C', (), {'__annotations__': {'a=print(1)': int}})\n", "'__annotations__'"),
    "code-in-a-type-alias": ("import typing\nT = typing.List[\"print('x') or int\"]\n", "the annotation"),
    # a namespace printed is shown, never used; kept by a walrus or passed on, it is a lookup
    "printed-and-kept": ("def f():\n    print(d := globals())\n    return d['torch']\n", "globals"),
    # an attribute read from a printed namespace by a name computed, or a value passed on from it
    "printed-attribute-computed": ("def f(n):\n    print({k: getattr(v, n) for k, v in locals().items()})\n", "locals"),
    "printed-hasattr-passed-on": ("def f(g):\n    print([g(v) for v in globals().values() if hasattr(v, 'x')])\n", "globals"),
    "namespace-passed-on": ("def f(show):\n    show(locals())\n", "locals"),
    "namespace-changed-in-a-print": ("print(globals().update(F=None))\n", "globals"),
    # a denied module, or a library's private name, through another library's attributes (blind
    # red-team tester R-AD), and a string annotation spelling a private attribute
    "denied-module-through-a-library": ("import asyncio\nt = asyncio.events.threading._start_new_thread\n", "threading"),
    "annotation-built-from-parts": (  # blind red-team tester R-AG: singledispatch had typing evaluate it
        'def f(x: "torch.distri" + "butions.categorical.Categorical"):\n    return x\n',
        "built from parts",
    ),
    "private-name-in-an-annotation": (
        'def f(x: "torch . autograd . Variable . _execution_engine . __class__"):\n    return x\n',
        "reaches the interpreter",
    ),
    # the namespace itself, in a container and taken out again: `__name__ = "__main__"` unseen
    "namespace-changed-through-a-tuple": ("print((globals(),)[0].update(__name__='__main__'))\n", "globals"),
    "namespace-changed-through-a-dict": ("print({1: globals()}[1].setdefault('F', None))\n", "globals"),
    "namespace-changed-through-a-list-call": ("print(list((globals(),))[0].pop('torch'))\n", "globals"),
    "namespace-changed-through-a-comprehension": ("print([g for g in [globals()]][0].update(F=1))\n", "globals"),
    # read inside a print but called, handed on, or read by a computed key (blind tester R-A's
    # spellings of a print are fine, FAIR below; these are lookups)
    "namespace-value-called-in-a-print": ("def f(x):\n    print(vars(torch)['exp'](x))\n", "vars"),
    "namespace-entry-called-in-a-comprehension": (
        "def f(x):\n    print([v(x) for k, v in vars(torch).items() if k == 'exp'])\n",
        "vars",
    ),
    "namespace-handed-to-a-function-in-a-print": ("def g(d):\n    return d\n\n\ndef f(x):\n    print(g(vars(torch)))\n", "vars"),
    "namespace-get-called-in-a-print": ("def f(x):\n    print(vars(torch).get('exp')(x))\n", "vars"),
    # only the builtin print shows: logging hands the dict to a Handler of the file's own, pprint
    # to a PrettyPrinter it may have patched, a print of its own returns it (blind red-team tester R-D)
    "namespace-in-a-logging-call": ("import logging\n\n\ndef f(x):\n    logging.debug('%s', vars(torch))\n", "vars"),
    "namespace-in-pprint": ("from pprint import pprint\n\n\ndef f(x):\n    pprint(vars(torch))\n", "vars"),
    "namespace-in-a-print-of-its-own": (
        "def print(*a):\n    return a[0]\n\n\ndef f(x):\n    return print(vars(torch))['exp'](x)\n",
        "vars",
    ),
    "namespace-in-print-bound-as-a-parameter": ("def f(x, print=dict):\n    return print(vars(torch))\n", "vars"),
    # torch's predicates show a value (FAIR below); a function of the file's own or another
    # library's with the same name may call it
    "namespace-value-in-an-own-is-tensor": (
        "def is_tensor(v):\n    return v(1)\n\n\ndef f(x):\n    print({k: is_tensor(v) for k, v in vars(torch).items()})\n",
        "vars",
    ),
    "namespace-value-in-a-non-torch-is-tensor": (
        "import numpy as np\n\n\ndef f(x):\n    print({k: np.is_tensor(v) for k, v in vars(torch).items()})\n",
        "vars",
    ),
    "namespace-value-in-torch-is-tensor-with-more": (
        "def f(x):\n    print({k: torch.is_tensor(v, v) for k, v in vars(torch).items()})\n",
        "vars",
    ),
    # ``x.__dict__`` is ``vars(x)``: shown, fine (FAIR below); read by a value or changed, a lookup
    "dict-attribute-value-called-in-a-print": ("def f(x):\n    print(torch.__dict__['exp'](x))\n", "__dict__"),
    "dict-attribute-changed-in-a-print": ("def f(x):\n    print(torch.__dict__.update(exp=None))\n", "__dict__"),
    "dict-attribute-read-by-a-computed-key": ("def f(x, n):\n    return torch.__dict__[n](x)\n", "__dict__"),
    # ``object.__setattr__`` is ``setattr``: a written name is judged, a computed one or a dunder is not
    "setattr-dunder-through-object": ("def f(x):\n    object.__setattr__(x, '__class__', type)\n", "__class__"),
    "setattr-computed-name-through-object": ("def f(x, n):\n    object.__setattr__(x, n, None)\n", "computed name"),
    "dunder-beyond-the-protocol-methods": ("def f(x):\n    return type(x).__mro__\n", "__mro__"),
    # a shown namespace handed to another object's method by an operator or a display builtin:
    # ``vars(os) == c`` calls ``c.__eq__(namespace)`` (blind red-team tester R-AM kept it, then
    # its builtins, then the grader's recording)
    "namespace-compared-with-an-object": ("import os\n\n\ndef f(c):\n    print(vars(os) == c)\n", "vars"),
    "globals-compared-with-an-object": ("def f(c):\n    print(globals() == c)\n", "globals"),
    "namespace-in-an-object": ("import os\n\n\ndef f(c):\n    print(vars(os) in c)\n", "vars"),
    "dict-attribute-ordered-against-an-object": ("def f(d, c):\n    print(d.__dict__ < c)\n", "__dict__"),
    "namespace-operand-of-an-object": ("import os\n\n\ndef f(c):\n    print(vars(os) | c)\n", "vars"),
    "namespace-summed-with-an-object": ("import os\n\n\ndef f(c):\n    print(sum([c, vars(os)], start=0))\n", "vars"),
    "namespace-compared-in-an-f-string": (
        "import os\nimport warnings\n\n\ndef f(c):\n    warnings.warn(f'{vars(os) == c}')\n",
        "vars",
    ),
    "namespace-as-another-objects-argument": ("import os\n\n\ndef f(c):\n    print(round(c, vars(os)))\n", "vars"),
    "namespace-values-sorted": ("def f(x):\n    print(sorted(vars(torch).values()))\n", "vars"),
    "type-check-hook-defined": (
        "class M(type):\n    def __instancecheck__(cls, obj):\n        return True\n",
        "__instancecheck__",
    ),
    "namespace-formatted-by-a-template-that-reads-items": (
        "def f(x):\n    print('{0[__builtins__]}'.format(globals()))\n",
        "globals",
    ),
    "type-check-hook-by-a-string": ("M = type('M', (type,), {'__subclasshook__': print})\n", "__subclasshook__"),
    "a-name-resolved-by-mock": (
        "from unittest import mock\n\n\ndef f(x):\n    return mock.patch('torch.nn.functional.softmax').get_original()[0](x)\n",
        "mock",
    ),
    # a banned name as data still selects code: compared with a class's __name__ over torch's
    # classes (blind red-team tester R-E picked nn.MultiheadAttention's subclass out of a dict),
    # or as the key of a dict built from them, or a default that reaches such a lookup
    "a-name-compared-to-pick-a-class": (
        "def f(classes):\n    return [c for c in classes if c.__name__ == 'softmax'][0]\n",
        "names softmax",
    ),
    "a-name-as-a-constant-key": ("def f(table):\n    return table['softmax']\n", "names softmax"),
    "a-name-as-a-default": ("def f(table, name='softmax'):\n    return table[name]\n", "names softmax"),
    "namespace-values-called-by-a-key": ("def f(x):\n    print(max(vars(torch).values(), key=lambda g: g(x)))\n", "vars"),
    "namespace-computed-key-in-a-print": ("def f(x, n):\n    print(vars(torch)[n])\n", "vars"),
    "string-key-of-a-torch-object": ("def f(x):\n    return torch.ops.aten['softmax'](x)\n", "names softmax"),
    # a name as an argument still counts where torch's own function takes it
    "string-to-torch": ("def f(x):\n    return torch.ops.aten.__getattr__('_softmax')(x)\n", "__getattr__"),
    "string-to-torch-call": ("OPS = torch.jit.annotations.ann_to_type('softmax')\n", "names softmax"),
    "string-outside-all": ("__all__ = ['f']\nNAMES = ['cross_entropy']\n", "names cross_entropy"),
    # a class of the file defining `softmax` vouches for its own instances only, never for a tensor
    "tensor-beside-own-method": ("class Rows:\n    def softmax(self, x):\n        return x.softmax(-1)\n", "x.softmax"),
    "self-rebound-to-a-tensor": (
        "class Rows:\n    def softmax(self):\n        return 1\n\n    def f(self, x):\n        self = x\n"
        "        return self.softmax(-1)\n",
        "self.softmax",
    ),
    "local-rebound-to-a-tensor": (
        "class Rows:\n    def softmax(self):\n        return 1\n\ndef f(x):\n    rows = Rows()\n    rows = x\n"
        "    return rows.softmax(-1)\n",
        "rows.softmax",
    ),
    "class-name-rebound": (
        "class Rows:\n    def softmax(self):\n        return 1\n\ndef f(x):\n    Rows = x\n    return Rows.softmax(-1)\n",
        "Rows.softmax",
    ),
    "subclass-puts-tensor-first": (
        "class Rows:\n    def softmax(self, dim):\n        return 1\n\n    def run(self, dim):\n"
        "        return self.softmax(dim)\n\nclass Sub(torch.Tensor, Rows):\n    pass\n",
        "self.softmax",
    ),
    "own-method-overwritten": (
        "class Rows:\n    def softmax(self):\n        return 1\n\nRows.softmax = torch.Tensor.softmax\n",
        "torch.Tensor.softmax",
    ),
    # a class pattern's keyword attributes are getattr calls whose names the tree holds as plain
    # strings (blind red-team tester R-F: torch.distributions, frames, object.__new__, 100/100)
    "match-class-keyword": ("match torch:\n    case object(softmax=sm):\n        pass\n", "torch.softmax"),
    "match-nested-keywords": (
        "match torch:\n    case object(nn=object(functional=object(softmax=sm))):\n        pass\n",
        "torch.nn.functional.softmax",
    ),
    "match-inside-a-sequence": ("match [torch]:\n    case [object(softmax=sm)]:\n        pass\n", ".softmax"),
    "match-frame-walk": ("import sys\nmatch sys:\n    case object(_getframe=frame):\n        pass\n", "sys._getframe"),
    "match-dunder": ("match object:\n    case object(__new__=new):\n        pass\n", "__new__ (dunder"),
    "match-positional-attributes": ("match torch.nn:\n    case Holder(a, b):\n        pass\n", "__match_args__"),
    "match-rebound-builtin": ("int = torch.nn\nmatch torch.nn:\n    case int(a):\n        pass\n", "__match_args__"),
    # library functions that get or set attributes by names their caller gives (blind red-team
    # tester R-CF: update_wrapper read torch.set_num_threads's globals and patched the recorder)
    "update-wrapper-names": (
        "import functools, types\n\n\ndef f(obj, name):\n"
        "    box = types.SimpleNamespace(**{name: {}})\n    functools.update_wrapper(box, obj, (), (name,))\n",
        "update_wrapper(…) with attribute names of its own",
    ),
    "update-wrapper-setter": (
        "from functools import update_wrapper as uw\n\n\ndef f(obj, src, name):\n    uw(obj, src, assigned=[name], updated=())\n",
        "update_wrapper(…) with attribute names",
    ),
    "wraps-names": ("import functools\n\n\ndef f(g, n):\n    return functools.wraps(g, (n,))\n", "wraps(…) with attribute"),
    "argparse-namespace": (
        "import argparse\n\n\ndef f(target, name, value):\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--x', dest=name, default=value)\n    p.parse_args([], namespace=target)\n",
        "parse_args(…) into a namespace of its own",
    ),
    "argparse-action": (
        "import argparse\n\n\ndef f(target, name, value):\n    p = argparse.ArgumentParser()\n"
        "    p.add_argument('--x', dest=name)(p, target, value)\n",
        "add_argument(…) with a name given at run time",
    ),
    "redirect-subclass": (
        "import contextlib\n\n\nclass R(contextlib.redirect_stdout):\n    _stream = 'mod' + 'ules'\n",
        "class R (a redirect's stream name",
    ),
    "redirect-stream-name": (
        "import contextlib\n\n\ndef f(name):\n    r = contextlib.redirect_stdout(None)\n    r._stream = name\n",
        "r._stream (changes a library",
    ),
    # a method called through its class with a tensor as self: self.softmax is Tensor.softmax (R-CH)
    "method-called-through-its-class": (
        "class Rows:\n    def softmax(self, dim):\n        return self\n\n    def run(self, dim):\n"
        "        return self.softmax(dim)\n\n\ndef f(x):\n    return Rows.run(x, -1)\n",
        "self.softmax",
    ),
    # an instance the file builds, trusted only where nothing else can be put in its place
    # (blind fairness tester R-CQ's styles, and each way around them)
    "module-instance-rebound": (
        "class Rows:\n    def softmax(self):\n        return 1\n\n"
        "_R = Rows()\n_R = torch\n\ndef f(x):\n    return _R.softmax(x, -1)\n",
        "_R.softmax",
    ),
    "module-instance-rebound-by-global": (
        "class Rows:\n    def softmax(self):\n        return 1\n\n_R = Rows()\n\ndef g():\n    global _R\n    _R = torch\n\n"
        "def f(x):\n    return _R.softmax(x, -1)\n",
        "_R.softmax",
    ),
    "module-instance-rebound-in-a-class-body": (
        "class Rows:\n    def softmax(self):\n        return 1\n\n_R = Rows()\n\nclass K:\n    _R = torch\n    y = _R.softmax\n",
        "_R.softmax",
    ),
    "attribute-of-a-tensor-subclass": (
        "class Rows:\n    def softmax(self):\n        return 1\n\nclass M(torch.Tensor):\n    def f(self):\n"
        "        try:\n            self.T = Rows()\n        except AttributeError:\n            pass\n"
        "        return self.T.softmax(-1)\n",
        "self.T.softmax",
    ),
    "attribute-also-set-by-name": (
        "class Rows:\n    def softmax(self):\n        return 1\n\n"
        "class M:\n    def __init__(self, x):\n        self.norm = Rows()\n"
        "        setattr(self, 'norm', x)\n\n    def f(self):\n        return self.norm.softmax(-1)\n",
        "self.norm.softmax",
    ),
    "attribute-stored-twice": (
        "class Rows:\n    def softmax(self):\n        return 1\n\n"
        "class M:\n    def __init__(self, x):\n        self.norm = Rows()\n"
        "        self.norm = x\n\n    def f(self):\n        return self.norm.softmax(-1)\n",
        "self.norm.softmax",
    ),
    "attribute-registered-by-a-computed-name": (
        "class Rows:\n    def softmax(self):\n        return 1\n\nclass M(torch.nn.Module):\n    def __init__(self, x, n):\n"
        "        super().__init__()\n        self.register_buffer(n, x)\n        try:\n            self.norm = Rows()\n"
        "        except TypeError:\n            pass\n\n    def forward(self):\n        return self.norm.softmax(-1)\n",
        "self.norm.softmax",
    ),
    "attribute-a-property-of-the-class": (
        "class Rows:\n    def softmax(self):\n        return 1\n\nclass M:\n    norm = property(lambda self: self.x)\n\n"
        "    def __init__(self, x):\n        self.x = x\n        self.norm = Rows()\n\n    def f(self):\n"
        "        return self.norm.softmax(-1)\n",
        "self.norm.softmax",
    ),
    # torch put into a container or an object after it was made (blind red-team tester R-CU)
    "torch-as-a-dict-item": ('box = {}\nbox["t"] = torch\nOPS = box["t"]._library\n', "box[…]._library"),
    "torch-appended": ("box = []\nbox.append(torch)\nOPS = box[0]._refs\n", "box[…]._refs"),
    "torch-set-by-setattr": ("class B:\n    pass\n\nb = B()\nsetattr(b, 't', torch)\nOPS = b.t._refs\n", "b.t._refs"),
    "ops-import-module": ('torch.ops.import_module("torch.nn.modules.linear")\n', "torch.ops.import_module"),
    # a class whose instances may be something else: its own __new__, a metaclass's __call__
    "own-class-new-returns-torch": (
        "class Rows:\n    def __new__(cls):\n        return torch\n\n    def softmax(self, x):\n        return x\n\n"
        "def f(x):\n    r = Rows()\n    return r.softmax(x, -1)\n",
        "r.softmax",
    ),
    "own-class-with-a-metaclass": (
        "class Meta(type):\n    def __call__(cls):\n        return torch\n\nclass Rows(metaclass=Meta):\n"
        "    def softmax(self, x):\n        return x\n\n_R = Rows()\n\ndef f(x):\n    return _R.softmax(x, -1)\n",
        "_R.softmax",
    ),
    "namespace-stored-into": (
        "import types\n\ndef own(x):\n    return x\n\n"
        "ops = types.SimpleNamespace(softmax=own)\n\ndef g(x):\n    ops.softmax = x\n\n"
        "def f(x):\n    return ops.softmax(x, -1)\n",
        "ops.softmax",
    ),
    "namespace-of-a-rebound-function": (
        "import types\n\ndef own(x):\n    return x\n\n"
        "own = torch.nn.functional.relu\nops = types.SimpleNamespace(softmax=own)\n\n"
        "def f(x):\n    return ops.softmax(x, -1)\n",
        "ops.softmax",
    ),
    "namespace-maker-rebound": (
        "import types\n\ntypes = torch\n\ndef own(x):\n    return x\n\nops = types.SimpleNamespace(softmax=own)\n\n"
        "def f(x):\n    return ops.softmax(x, -1)\n",
        "ops.softmax",
    ),
    "flex-attention-blockmask": (
        "from torch.nn.attention.flex_attention import BlockMask\n",
        "torch.nn.attention.flex_attention import BlockMask",
    ),
    "blockmask-reexported": ("from torch.distributed.pipelining.microbatch import BlockMask\n", "torch.distributed"),
    # torch handed through a chain of 61 of the file's functions, defined last-first so that a
    # pass over the file follows one step of it (blind red-team tester R-CX: the scan's rounds
    # stopped at 50, and torch's softmax derivative passed custom_backward's rule)
    "torch-through-a-long-chain-of-returners": (
        "".join(f"def _r{i}():\n    return _r{i - 1}()\n\n" for i in range(60, 0, -1))
        + "def _r0():\n    return torch\n\n\ndef f(x):\n    lib = _r60()\n    return lib._decomp.decompositions.softmax(x, -1)\n",
        "lib._decomp (torch's private namespace, lib is torch)",
    ),
    "copy-reduce": (
        "import copy\n\n\nclass Setter:\n    def __reduce_ex__(self, protocol):\n"
        "        return (lambda t: t, (self.target,), (None, self.changes))\n",
        "def __reduce_ex__ (copy calls what it returns",
    ),
}


@pytest.mark.parametrize("name", EVASIONS)
def test_every_evasion_is_flagged_with_its_line_and_construct(name):
    body, construct = EVASIONS[name]
    source = f'"""A module docstring that mentions softmax freely."""\nimport torch\n\n{body}'
    found = scan(source, SOFTMAX)
    assert found, name
    assert any(construct in v.found for v in found), [v.found for v in found]
    assert all(v.line >= 4 for v in found)


#: a library's module or class changed: the worker's own code calls them between its recorded
#: windows (blind red-team tester R-BU: json.dumps rewrote each reply before it was signed)
LIBRARY_CHANGES = {
    "module-function": ("import json\njson.dumps = print\n", "json.dumps (changes a library"),
    "module-alias": ("import json as j\nj.dumps = print\n", "j.dumps (changes"),
    "submodule": ("import json\njson.encoder.c_make_encoder = None\n", "json.encoder.c_make_encoder (changes"),
    "class-method": ("import json\njson.JSONEncoder.encode = print\n", "json.JSONEncoder.encode (changes"),
    "from-import": ("from os import path\npath.join = print\n", "path.join (changes"),
    "assigned-alias": ("import json\nE = json.JSONEncoder\nE.encode = print\n", "E.encode (changes"),
    "through-an-object": ("import random\nr = random.Random()\ntype(r).setstate = print\n", "setstate (changes"),
    "delete": ("import os\ndel os.urandom\n", "os.urandom (changes"),
    "augmented": ("import math\nmath.pi += 1\n", "math.pi (changes"),
    "setattr": ("import json\nsetattr(json, 'dumps', print)\n", "setattr(…) (changes"),
    "object-setattr": ("import json\nobject.__setattr__(json, 'dumps', print)\n", "object.__setattr__(…) (changes"),
    "torch-class": ("import torch\ntorch.Tensor.view = print\n", "torch.Tensor.view (changes"),
}


@pytest.mark.parametrize("name", LIBRARY_CHANGES)
def test_a_rule_checked_file_changes_no_librarys_module_or_class(name):
    body, construct = LIBRARY_CHANGES[name]
    found = scan(body, ())
    assert any(construct in v.found for v in found), [v.found for v in found]


def test_setting_its_own_objects_or_torchs_flags_is_no_library_change():
    """What honest code sets: its own objects (``self``, ``ctx``, a module it built, its own
    file's module), a tensor's grad, os.environ's entries, torch's backend flags, sys.stdout."""
    source = textwrap.dedent("""
        import io, os, sys
        import torch
        import qkv

        class F(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.scale = 2.0
                return x

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(2, 2)
                self.lin.bias = None
                type(self).made = True

        x = torch.zeros(2, requires_grad=True)
        x.grad = None
        os.environ["OMP_NUM_THREADS"] = "1"
        torch.backends.cudnn.deterministic = True
        sys.stdout = io.StringIO()
        qkv.CACHE = {}
    """)
    assert scan(source, ()) == []


def test_a_banned_module_anywhere_on_an_import_path_counts():
    """``from torch.distributions.transforms import SoftmaxTransform``: row_softmax bans
    ``distributions`` (its Categorical normalises logits with a logsumexp), and only the last
    name was checked (blind red-team tester R-E: 6.25/6.25 with SoftmaxTransform)."""
    source = "from torch.distributions.transforms import SoftmaxTransform\n\n\ndef f(s):\n    return SoftmaxTransform()(s)\n"
    found = scan(source, ("distributions",))
    assert found and found[0].line == 1, found
    assert scan("from torch.nn.functional import relu\n", ("distributions",)) == []


def test_the_hint_names_file_line_and_construct():
    source = "import torch\n\n\ndef softmax_rows(s, dim=-1):\n    return vars(torch)['softmax'](s, dim)\n"
    with pytest.raises(CheckFailed) as info:
        check_no_banned(source, "row_softmax.py", SOFTMAX, what="rule")
    detail = info.value.feedback.detail
    assert "row_softmax.py:5: vars" in detail and info.value.feedback.frames[0]["line"] == 5


def test_a_string_that_only_names_a_banned_function_gets_its_own_hint_and_a_call_keeps_the_rules():
    """Blind tester R-M: `ctx.stage = "backward"` was told "the backward may not call autograd";
    nothing was called. A string alone gets the hint that says so; a call beside it keeps the
    rule's own hint, and a dynamic construct its own."""
    hint = "custom_backward/uses-autograd"

    def hints(body: str) -> list[str]:
        with pytest.raises(CheckFailed) as info:
            check_no_banned(
                f"import torch\n\n\ndef f(ctx, x):\n{body}", "custom_backward.py", AUTOGRAD, what="rule", hints=[hint]
            )
        return info.value.feedback.hints

    assert hints('    ctx.stage = "backward"\n    return x\n') == ["general/banned-name-string"]
    assert hints('    ctx.stage = "backward"\n    x.backward()\n    return x\n') == [hint]
    assert hints("    return vars(torch)\n") == ["general/dynamic-code"]


def test_a_backward_written_as_a_lambda_is_scanned_as_backward():
    source = (
        "import torch\n\n\nclass AttentionFunction(torch.autograd.Function):\n"
        "    backward = staticmethod(lambda ctx, d_out: (*torch.autograd.grad(ctx.out, ctx.inputs, d_out), None))\n"
    )
    assert [(v.found, v.function) for v in scan(source, AUTOGRAD, scope=BACKWARD_SCOPE)] == [
        ("torch.autograd.grad", "AttentionFunction.backward")
    ]


def test_a_helper_outside_the_scoped_functions_cannot_hide_dynamic_autograd():
    source = textwrap.dedent("""
        import torch
        _grad = torch.autograd.grad.__wrapped__
        def helper(x):
            return _grad(x.sum(), x)
        def attention_backward(d_out, q, k, v, weights, scale):
            return helper(q)
    """)
    found = scan(source, AUTOGRAD, scope=BACKWARD_SCOPE)
    assert any("__wrapped__" in v.found and v.function == "<module>" for v in found)


FAIR = [
    # debug prints of an object's attributes and the protocol methods of Python's own classes
    # (blind fairness tester R-AL: each cost a correct file its skill)
    "import dataclasses\nimport enum\n\n\nclass Kind(enum.Enum):\n    CAUSAL = 1\n\n\n"
    "@dataclasses.dataclass(frozen=True)\nclass Config:\n    embed_dim: int\n    num_heads: int\n\n"
    "    def __post_init__(self):\n        object.__setattr__(self, 'head_dim', self.embed_dim // self.num_heads)\n\n\n"
    "class Loss:\n    __hash__ = object.__hash__\n\n    def debug(self):\n        print(self.__dict__)\n"
    "        print(f'{self.__dict__}', sorted(self.__dict__))\n\n    def __str__(self):\n"
    "        return super().__str__() + repr(list(Kind.__members__))\n\n"
    "    def __eq__(self, other):\n        return super().__eq__(other)\n",
    # a shown namespace meeting literals (a dict literal too), its keys or items sorted, and a
    # plain str.format template in a print (fairness tester R-AQ)
    "class M:\n    def __init__(self):\n        print('no attributes yet?', vars(self) == {}, vars(self) != {'a': 1})\n"
    "        print('{} attributes so far'.format(len(vars(self))), 'locals: {}'.format(sorted(locals())))\n"
    "        print('got: {x!r:>10}'.format(x={k: type(v).__name__ for k, v in locals().items()}))\n",
    "def f(scores):\n    print(locals()['scores'].shape == (2, 3), 'n=' + str(len(vars())))\n"
    "    print(sorted(globals().items()), round(locals()['scores'].sum().item(), 3), f'{vars() is None}')\n",
    # the file's own names that hold "getattr", metadata dunders, isinstance with FunctionType,
    # the standard library's everyday modules and an own helper module (blind tester R-X)
    '__author__ = "me"\n__license__ = "MIT"\nimport collections\nimport types\nimport numpy as np\nimport my_helpers\n\n\n'
    "class Box:\n    __hash__ = None\n\n    def __init__(self):\n"
    "        self.use_getattr = False\n        self.copy_attrs = ()\n\n\n"
    "def resolve_name(n):\n    return n\n\n\ndef copy_attributes(a):\n    return a\n\n\n"
    "def softmax_rows(s, dim=-1):\n    use_getattr = isinstance(s, types.FunctionType)\n"
    "    resolve_name(copy_attributes(use_getattr))\n"
    "    e = (s - s.amax(dim, keepdim=True)).exp()\n    return e / e.sum(dim, keepdim=True)\n",
    # a breakpoint() left in, in a function and under __main__: it does nothing in a worker (blind tester R-R)
    "import torch\n\n\ndef softmax_rows(s, dim=-1):\n    breakpoint()\n    e = (s - s.amax(dim, keepdim=True)).exp()\n"
    '    return e / e.sum(dim, keepdim=True)\n\n\nif __name__ == "__main__":\n    breakpoint()\n',
    # prose mentioning the banned function, in docstrings, comments and messages
    '"""Softmax over the rows: like torch.softmax but by hand."""\nimport torch\n\n\ndef softmax_rows(s, dim=-1):\n'
    '    """softmax"""\n    # no torch.softmax here\n    if s.dim() == 0:\n'
    '        raise ValueError("softmax needs at least one dimension")\n'
    "    e = (s - s.amax(dim, keepdim=True)).exp()\n    return e / e.sum(dim, keepdim=True)\n",
    # nn.Module habits: private attributes of self, super().__init__, getattr with constants, modules()
    "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass M(nn.Module):\n"
    "    def __init__(self, c):\n        super().__init__()\n        self._c = c\n        self.w_q = nn.Linear(c, c)\n"
    '        self.register_buffer("mask", torch.ones(2, 2).tril().bool(), persistent=False)\n\n'
    '    def forward(self, x):\n        w = getattr(self, "w_q")\n        n = sum(1 for _ in self.modules())\n'
    "        return torch.softmax(w(x) / math.sqrt(self._c), dim=-1) * n\n\n\n"
    'if __name__ == "__main__":\n    print(type(M(2)).__name__, torch.__version__)\n',
    # typing, dataclasses, einsum strings, dtype info
    "from __future__ import annotations\nfrom typing import Optional\nimport torch\n\n\n"
    "def f(a: torch.Tensor, b: Optional[torch.Tensor] = None) -> torch.Tensor:\n    eps = torch.finfo(a.dtype).eps\n"
    '    return torch.einsum("...ld,...sd->...ls", a, a) + eps\n',
    # helper classes with __slots__ whose own methods are named softmax / log_softmax: self.softmax(),
    # Rows(s).softmax(), a local bound to Rows(…), Rows.log_softmax(…), self.softmax() in a closure
    textwrap.dedent("""
        import torch


        class Rows:
            __slots__ = ("shifted", "dim")

            def __init__(self, s, dim):
                self.shifted, self.dim = s - s.amax(dim, keepdim=True), dim

            def softmax(self):
                e = self.shifted.exp()
                return e / e.sum(self.dim, keepdim=True)

            @staticmethod
            def log_softmax(s, dim):
                return s - s.logsumexp(dim, keepdim=True)

            def both(self):
                def inner():
                    return self.softmax()
                return inner(), self.softmax()


        def softmax_rows(s, dim=-1):
            rows = Rows(s, dim)
            assert __debug__ or rows is not None
            return rows.softmax() if s.numel() else Rows(s, dim).softmax()


        def log_softmax_rows(s, dim=-1):
            return Rows.log_softmax(s, dim)
    """),
    # the standard library's builders and type aliases with names in strings
    textwrap.dedent("""
        import collections
        import dataclasses
        import timeit
        from typing import Optional, Tuple

        Pair = Tuple["torch.Tensor", "torch.Tensor"]
        Shapes = collections.namedtuple("Shapes", "L S")


        @dataclasses.dataclass
        class Config:
            dim: int = -1
            name: Optional["str"] = None


        SECONDS = timeit.timeit(lambda: Config(), number=2)
        TABLE = {"a key": 1}
        ONE = TABLE["a key"]
    """),
    # a debugging print of the namespace (blind tester M: the skill scored 0)
    'import logging\n\n\ndef f(x):\n    print("f got", locals())\n    logging.debug("%s", x)\n'
    '    print("DEBUG", {k: v for k, v in list(locals().items())})\n    return x\n',
    # a function's name as the text of the file's own tracing helper, of str.format, or a keyword
    # of its own check (blind tester M, 2026-12-05: each scored the skill 0)
    "def _trace(stage, *ts):\n    print(stage, [tuple(t.shape) for t in ts])\n\n\n"
    "def _check_2d(t, name):\n    return t.dim() == 2\n\n\n"
    'def cross_entropy(logits, targets):\n    _trace("cross_entropy", logits)\n    _check_2d(logits, name="log_softmax")\n'
    '    print("{}: {}".format("softmax", logits.shape))\n    return logits\n',
    # debugging prints in every spelling blind tester R-A used (each scored the skill 0): an
    # f-string, str(), repr(), sorted(), a constant key, a filtered comprehension, vars() of an object
    textwrap.dedent("""
        from pprint import pprint


        def f(scores, kind="rows"):
            print(f"f locals: {locals()}")
            print("locals=" + str(locals()), repr(locals()), sorted(locals()))
            print(locals()["scores"].shape, len(vars()))
            pprint(x for x in ("a", "b"))
            print([k for k in globals() if not k.startswith("_")])
            print("config:", vars(scores), {k: type(v).__name__ for k, v in globals().items()})
            print({k: tuple(v.shape) for k, v in locals().items() if isinstance(v, type(scores))})
            # guarded for a local without a shape (blind tester R-Q): an attribute read by its written name
            print({n: (v.shape if hasattr(v, "shape") else v) for n, v in locals().items()})
            print({n: getattr(v, "shape", v) for n, v in locals().items()})
            return scores
    """),
    # torch's own predicates on a shown value, as isinstance (blind tester R-BY: 1.65 of sdpa_masks' 10)
    textwrap.dedent("""
        import torch
        import torch as T


        def f(q, k):
            print({n: (v.shape if torch.is_tensor(v) else v) for n, v in locals().items()})
            print([n for n, v in locals().items() if T.is_floating_point(v)])
            print(f"{ {n: torch.is_complex(v) for n, v in vars().items()} }")
            return q
    """),
    # structural pattern matching on values, shapes, sequences, mappings and self-matching builtins
    "def f(x, dim):\n    match x.shape:\n        case (b, t, c):\n            x = x.reshape(b * t, c)\n"
    "    match dim:\n        case -1 | 1:\n            return x\n        case int(n) if n > 1:\n            return x.sum(n)\n"
    "        case [a, *rest]:\n            return x\n        case {'dim': d}:\n            return x.sum(d)\n"
    "        case str() as name:\n            raise ValueError(name)\n    return x\n",
    "import torch\n\n\ndef g(x):\n    match x.shape:\n        case torch.Size([b, t, c]):\n"
    "            return x.reshape(b * t, c)\n    return x\n",
    # a timing or profiling self-check in live code: counts, a profiled function's own
    # arguments and a report's sort key are data (fairness tester R-Z: each cost the skill)
    "import cProfile\nimport functools\nimport timeit\n\n\ndef f(x):\n    return x\n\n\n"
    "def timed(x, reps=100):\n    t = timeit.Timer(lambda: f(x))\n    p = cProfile.Profile()\n"
    "    p.runcall(f, x)\n    p.print_stats('cumtime')\n"
    "    return timeit.timeit(functools.partial(f, x), number=reps * 10**2), t.timeit(reps)\n",
    # a namespace inside an f-string is text wherever the text goes (fairness tester R-Z)
    'import logging\nimport warnings\n\n\ndef f(x):\n    warnings.warn(f"state {locals()}")\n'
    '    logging.getLogger(__name__).debug(f"{sorted(vars())} {len(globals())}")\n    return x\n',
    # a decorator's functools.wraps and update_wrapper with their default names (the R-CF check
    # judges only names a call gives), and a parser that makes its own namespace
    "import argparse\nimport functools\n\n\ndef traced(fn):\n    @functools.wraps(fn)\n"
    "    def inner(*args, **kwargs):\n        return fn(*args, **kwargs)\n\n"
    "    return functools.update_wrapper(inner, fn, assigned=('__name__', '__doc__'), updated=())\n\n\n"
    "def kept(fn):\n    return functools.wraps(fn, functools.WRAPPER_ASSIGNMENTS + ('__dict__',))(lambda: fn())\n\n\n"
    "def options():\n    p = argparse.ArgumentParser()\n    p.add_argument('--lr', type=float, dest='lr')\n"
    "    p.add_argument('steps', type=int, nargs='?', default=1)\n    return p.parse_args([])\n",
    # contextlib's redirect as meant: to a buffer of its own
    "import contextlib\nimport io\n\n\ndef quiet(f, x):\n    with contextlib.redirect_stdout(io.StringIO()):\n"
    "        return f(x)\n",
    # the file's own softmax method, called on an instance; a base method called explicitly
    "class Rows:\n    def softmax(self, x):\n        e = x.exp()\n        return e / e.sum(-1, keepdim=True)\n\n"
    "    def run(self, x):\n        return self.softmax(x)\n\n\n"
    "class Base:\n    def scale(self, x):\n        return x * 2\n\n\n"
    "def f(x):\n    return Rows().run(Base.scale(Base(), x))\n",
    # the file's own method on an instance it built: at module level, in an annotated local, as a
    # submodule of an nn.Module (blind fairness tester R-CQ: each scored the skill 0)
    "import torch.nn as nn\n\n\nclass Rows:\n    def softmax(self, x):\n"
    "        e = x.exp()\n        return e / e.sum(-1, keepdim=True)\n\n\n"
    "_R = Rows()\n\n\nclass Norm(nn.Module):\n    def softmax(self, x):\n        return _R.softmax(x)\n\n\n"
    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.norm = Norm()\n\n"
    "    def forward(self, x):\n        return self.norm.softmax(x)\n\n\n"
    "def f(x):\n    rows: Rows = Rows()\n    return rows.softmax(x) + _R.softmax(x) + Model()(x)\n",
    # a namespace of the file's own functions (R-CQ)
    "import types\n\n\ndef _stable(x, dim):\n    e = (x - x.amax(dim, keepdim=True)).exp()\n"
    "    return e / e.sum(dim, keepdim=True)\n\n\n"
    "ops = types.SimpleNamespace(softmax=_stable)\n\n\ndef f(x):\n    return ops.softmax(x, -1)\n",
    # an index built from parts is no annotation
    'TABLE = {"ab": 1}\nONE = TABLE["a" + "b"]\n',
    # an export list naming the exercise's own cross_entropy
    '__all__ = ["softmax_rows", "log_softmax_rows", "cross_entropy", "vocab_probs"]\n__all__ += ("cross_entropy",)\n'
    "\n\ndef cross_entropy(logits, targets):\n    return logits\n",
]


@pytest.mark.parametrize("source", FAIR)
def test_honest_code_in_any_style_is_never_flagged(source):
    assert scan(source, SOFTMAX[:-1] if "torch.softmax(w" not in source else SDPA) == []


def test_an_own_method_named_like_sdpa_is_not_the_torch_function():
    """mha_reshape.py may name its own attention method after the lesson's term."""
    source = textwrap.dedent("""
        import torch.nn as nn


        class MultiHeadAttention(nn.Module):
            def scaled_dot_product_attention(self, q, k, v, allowed):
                return (q @ k.mT).masked_fill(~allowed, float("-inf")).softmax(-1) @ v

            def forward(self, q, k, v, allowed):
                return self.scaled_dot_product_attention(q, k, v, allowed)
    """)
    assert scan(source, SDPA) == []
    assert [
        v.found
        for v in scan(source.replace("self.scaled_dot_product_attention(q", "nn.functional.scaled_dot_product_attention(q"), SDPA)
    ] == ["nn.functional.scaled_dot_product_attention"]


def test_backward_may_reach_the_helpers_through_the_files_own_functions():
    """ "backward goes through attention_backward, which uses softmax_backward" holds through
    a helper method or function of the file; code that never calls the helper still fails."""
    source = textwrap.dedent("""
        def softmax_backward(d_weights, weights):
            return weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))

        def _score_gradient(d_weights, weights):
            return softmax_backward(d_weights, weights)

        def attention_backward(d_out, q, k, v, weights, scale):
            ds = _score_gradient(d_out @ v.mT, weights) * scale
            return ds @ k, ds.mT @ q, weights.mT @ d_out

        class _Saved:
            def __init__(self, ctx):
                self.q, self.k, self.v, self.weights = ctx.saved_tensors

            def gradients(self, d_out, scale):
                return attention_backward(d_out, self.q, self.k, self.v, self.weights, scale)

        class AttentionFunction:
            @staticmethod
            def backward(ctx, d_out):
                return (*_Saved(ctx).gradients(d_out, ctx.scale), None)

        class Inlined:
            @staticmethod
            def backward(ctx, d_out):
                q, k, v, a = ctx.saved_tensors
                return a.mT @ d_out, None, None, None

        lambda_softmax_backward = lambda d_weights, weights: softmax_backward(d_weights, weights)

        class Lambdas:
            backward = staticmethod(lambda ctx, d_out: (*attention_backward(d_out, *ctx.saved_tensors, ctx.scale), None))
    """)
    assert reaches(source, "Lambdas.backward", "attention_backward")
    assert reaches(source, "lambda_softmax_backward", "softmax_backward")
    assert reaches(source, "AttentionFunction.backward", "attention_backward")
    assert reaches(source, "attention_backward", "softmax_backward")
    assert not reaches(source, "Inlined.backward", "attention_backward")
    assert not reaches(source, "softmax_backward", "attention_backward")


def test_a_helper_called_through_an_alias_is_reached():
    """Correct backwards of blind tester R-G called their helpers through a local, a module-level
    or an attribute alias (``grad_fn = softmax_backward; grad_fn(…)``) and lost a hidden test's
    points; an alias of an alias counts too, and a name bound to something else does not."""
    source = textwrap.dedent("""
        def softmax_backward(d_weights, weights):
            return weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))

        _softmax_bwd = softmax_backward

        def attention_backward(d_out, q, k, v, weights, scale):
            grad_fn = softmax_backward
            ds = grad_fn(d_out @ v.mT, weights) * scale
            return ds @ k, ds.mT @ q, weights.mT @ d_out

        def module_alias(d_out, weights):
            again = _softmax_bwd
            return again(d_out, weights)

        def not_a_helper(d_out, weights):
            grad_fn = weights.mul
            return grad_fn(d_out)

        class AttentionFunction:
            @staticmethod
            def backward(ctx, d_out):
                bw = attention_backward
                return (*bw(d_out, *ctx.saved_tensors, ctx.scale), None)

        class Holder:
            def __init__(self):
                self.run = attention_backward

            def backward(self, ctx, d_out):
                return self.run(d_out, *ctx.saved_tensors, ctx.scale)
    """)
    assert reaches(source, "attention_backward", "softmax_backward")
    assert reaches(source, "module_alias", "softmax_backward")
    assert reaches(source, "AttentionFunction.backward", "attention_backward")
    assert reaches(source, "AttentionFunction.backward", "softmax_backward")
    assert reaches(source, "Holder.backward", "attention_backward")
    assert not reaches(source, "not_a_helper", "softmax_backward")


def test_a_backward_inherited_or_aliased_as_a_static_method_reaches_the_helpers():
    # blind tester M (2026-12-05): both correct, both lost points (0.67 and 2.08)
    source = textwrap.dedent("""
        import torch

        def softmax_backward(d_weights, weights):
            return weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))

        def attention_backward(d_out, q, k, v, weights, scale):
            ds = softmax_backward(d_out @ v.mT, weights) * scale
            return ds @ k, ds.mT @ q, weights.mT @ d_out

        class _HandWritten(torch.autograd.Function):
            @staticmethod
            def backward(ctx, d_out):
                return (*attention_backward(d_out, *ctx.saved_tensors, ctx.scale), None)

        class AttentionFunction(_HandWritten):
            @staticmethod
            def forward(ctx, q, k, v, allowed=None):
                return q

        class Aliased(torch.autograd.Function):
            grad_rule = staticmethod(attention_backward)

            @staticmethod
            def backward(ctx, d_out):
                return (*Aliased.grad_rule(d_out, *ctx.saved_tensors, ctx.scale), None)
    """)
    assert reaches(source, "AttentionFunction.backward", "attention_backward")
    assert reaches(source, "Aliased.backward", "attention_backward")
    assert not reaches(source, "AttentionFunction.forward", "attention_backward")
    # an inherited backward is scanned as backward: autograd there is still found
    found = scan(source.replace("return (*attention_backward(", "return (*torch.autograd.grad("), AUTOGRAD, scope=BACKWARD_SCOPE)
    assert [v.found for v in found if "grad" in v.found], found


def test_a_helper_reached_through_partial_or_an_annotated_lambda_is_reached():
    # blind test D: three correct routes the call graph did not follow (a third of a test lost)
    source = textwrap.dedent("""
        from functools import partial
        from typing import Callable

        def softmax_backward(d_weights, weights):
            return weights * (d_weights - (d_weights * weights).sum(-1, keepdim=True))

        _softmax_grad: Callable = lambda dA, A: softmax_backward(d_weights=dA, weights=A)
        by_partial = partial(softmax_backward)

        def attention_backward(d_out, q, k, v, weights, scale):
            ds = _softmax_grad(d_out @ v.mT, weights) * scale
            return ds @ k, ds.mT @ q, weights.mT @ d_out

        def attention_backward_inline(d_out, q, k, v, weights, scale):
            ds = partial(softmax_backward, weights=weights)(d_weights=d_out @ v.mT) * scale
            return ds @ k, ds.mT @ q, weights.mT @ d_out

        def attention_backward_module_partial(d_out, q, k, v, weights, scale):
            return by_partial(d_out @ v.mT, weights)

        class AttentionFunction:
            @staticmethod
            def forward(ctx, q, k, v, allowed=None):
                ctx.grads_of = partial(attention_backward, q=q, k=k, v=v, weights=q, scale=1.0)
                return q

            @staticmethod
            def backward(ctx, d_out):
                return (*ctx.grads_of(d_out=d_out), None)

        class Unrelated:
            @staticmethod
            def backward(ctx, d_out):
                ctx.other = partial(print, "x")
                return (*ctx.other(d_out), None)
    """)
    assert reaches(source, "attention_backward", "softmax_backward")  # an annotated lambda
    assert reaches(source, "attention_backward_inline", "softmax_backward")  # partial(f, …)(…)
    assert reaches(source, "attention_backward_module_partial", "softmax_backward")  # g = partial(f)
    assert reaches(source, "AttentionFunction.backward", "attention_backward")  # ctx.g = partial(f, …) in forward
    assert not reaches(source, "Unrelated.backward", "attention_backward")


SIBLING = textwrap.dedent("""
    import torch
    import torch.nn.functional as F


    def to_additive_mask(allowed, dtype=torch.float32):
        return _zeros(allowed, dtype).masked_fill(~allowed, float("-inf"))


    def _zeros(allowed, dtype):
        return torch.zeros(allowed.shape, dtype=dtype)


    def sdpa(q, k, v, allowed=None):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)


    if __name__ == "__main__":
        print(sdpa(*[torch.randn(1, 2, 3)] * 3))
""")
HANDOUTS = {  # a helper whose SDPA reaches `ok`'s caller without `ok` naming it: scanned all the same
    "decorator": (
        "REG = []\ndef register(f):\n    REG.append(f)\n    return f\n@register\ndef g(q):\n"
        "    return F.scaled_dot_product_attention(q, q, q)\n"
    ),
    "default": "REG = []\ndef g(x=REG.append(F.scaled_dot_product_attention)):\n    return x\n",
    "class-body": "REG = []\nclass C:\n    REG.append(F.scaled_dot_product_attention)\n",
    "walrus-default": "def g(x=(A := F.scaled_dot_product_attention)):\n    return x\n",
    "top-level-alias": "A = F.scaled_dot_product_attention\n",
}


@pytest.mark.parametrize(
    ("importer", "flagged"),
    [
        ("from sdpa_masks import to_additive_mask\n", False),
        ("import sdpa_masks as sm\n\n\ndef f(a):\n    return sm.to_additive_mask(a)\n", False),
        ("from sdpa_masks import sdpa\n", True),
        ("import sdpa_masks\n\n\ndef f(q):\n    return sdpa_masks.sdpa(q, q, q)\n", True),
        ("from sdpa_masks import *\n", True),
        ("import sdpa_masks\nM = sdpa_masks\n", True),
    ],
)
def test_a_sibling_module_counts_for_what_the_file_can_run_of_it(importer, flagged):
    """mha_reshape.py may reuse the student's own sdpa_masks.to_additive_mask: sdpa_masks.sdpa,
    which calls SDPA by design, never runs for it (nor does a __main__ self-check)."""
    _mha_reshape_rule(importer, SIBLING, flagged, "sdpa_masks.py:15: F.scaled_dot_product_attention")


def _mha_reshape_rule(importer: str, sibling: str, flagged: bool, match: str) -> None:
    """mha_reshape.py (``importer``) checked with the student's sdpa_masks.py (``sibling``)."""
    run = lambda: check_no_banned(importer, "mha_reshape.py", SDPA, what="rule", imports={"sdpa_masks": sibling})
    if flagged:
        with pytest.raises(CheckFailed, match=match):
            run()
    else:
        run()


# blind test D: the same sibling with SDPA imported by name at its top — used only by sdpa() —
# zeroed mha_reshape for importing to_additive_mask, where `import torch.nn.functional as F` passed
NAMED_IMPORT = SIBLING.replace(
    "import torch.nn.functional as F\n", "from torch.nn.functional import scaled_dot_product_attention as _fused\n"
).replace("F.scaled_dot_product_attention(", "_fused(")


@pytest.mark.parametrize(
    ("importer", "sibling", "flagged"),
    [
        ("from sdpa_masks import to_additive_mask\n", NAMED_IMPORT, False),  # sdpa() never runs for it
        ("from sdpa_masks import sdpa\n", NAMED_IMPORT, True),  # sdpa() runs: its _fused is a use
        ("from sdpa_masks import _fused\n", NAMED_IMPORT, True),  # the banned name itself, taken
        ("import sdpa_masks as s\n\n\ndef f(q):\n    return s._fused(q, q, q)\n", NAMED_IMPORT, True),
        (
            "from sdpa_masks import to_additive_mask\n",
            NAMED_IMPORT.replace("def _zeros(allowed, dtype):\n", "A = _fused\n\n\ndef _zeros(allowed, dtype):\n"),
            True,
        ),  # top-level code uses it
        (
            "from sdpa_masks import to_additive_mask\n",
            NAMED_IMPORT.replace("return torch.zeros(allowed.shape, dtype=dtype)", "return _fused(allowed, allowed, allowed)"),
            True,
        ),  # a reached helper uses it
    ],
)
def test_a_siblings_top_level_import_of_a_banned_name_counts_only_where_what_it_binds_is_used(importer, sibling, flagged):
    assert "_fused" in sibling
    _mha_reshape_rule(importer, sibling, flagged, "sdpa_masks.py")
    own = importer.replace(
        "from sdpa_masks import to_additive_mask\n", "from torch.nn.functional import scaled_dot_product_attention\n"
    )
    if own != importer:  # the exercise's own file: the import counts where what it binds is read (below)
        check_no_banned(own, "mha_reshape.py", SDPA, what="rule", imports={"sdpa_masks": sibling})
        with pytest.raises(CheckFailed, match="mha_reshape.py:1"):
            used = own + "\n\ndef f(q):\n    return scaled_dot_product_attention(q, q, q)\n"
            check_no_banned(used, "mha_reshape.py", SDPA, what="rule", imports={"sdpa_masks": sibling})


UNUSED = "import torch\nfrom torch.nn.functional import softmax as _s\n\n\ndef softmax_rows(x, dim=-1):\n    return x\n"
MAIN_SELF_TEST = (
    "\n\nif __name__ == '__main__':\n    x = torch.randn(3, 4)\n    print(torch.allclose(softmax_rows(x), _s(x, dim=-1)))\n"
)


@pytest.mark.parametrize(
    ("own", "helper", "flagged"),
    [
        (UNUSED, None, False),  # imported, read by nothing: never called ("bans are on calls", blind tester R-DB)
        (UNUSED + "\n\nALIAS = _s\n", None, True),  # read in the file
        (UNUSED.replace("return x", "return globals()['_s'](x, dim)"), None, True),  # by a string
        (UNUSED, "import row_softmax\n\n\ndef f(x):\n    return row_softmax._s(x, -1)\n", True),  # another file
        (UNUSED, "from row_softmax import _s\n", True),
        (UNUSED, "import row_softmax as r\n\n\ndef f(x):\n    return getattr(r, '_s')(x, -1)\n", True),
        (UNUSED, "from row_softmax import *\n", True),  # a star import takes every name
        (
            UNUSED.replace(
                "    return x",
                "    import row_softmax as me\n    match me:\n        case object(_s=f):\n            return f(x, dim)",
            ),
            None,
            True,
        ),  # a class pattern reads it (R-DC)
        (UNUSED, "def f(x):\n    return x._s\n", False),  # a file that never names the module cannot import it
        # a file that imports the module reads from it only what it imports or reads as m.x; its own
        # use of the same word is not a read of the module's (blind red-team tester R-DG: sdpa_masks.py
        # names MultiheadAttention, and mha_reshape.py's unused import of it cost mha_reshape 15/15)
        (UNUSED, "from row_softmax import softmax_rows\n\n\ndef _s(x):\n    return softmax_rows(x)\n\n\nALIAS = _s\n", False),
        (UNUSED, "import row_softmax as r\n\n\ndef f(x, _s):\n    return r.softmax_rows(x)._s\n", False),
        (UNUSED, "def f(x):\n    import row_softmax as r\n    return r.softmax_rows(x)\n\n\n_s = 1\n", False),
        (UNUSED, "import row_softmax as r\n\nq = r\n\n\ndef f(x):\n    return q._s(x, -1)\n", True),  # r itself handed on
        (UNUSED, "import importlib\n\nm = importlib.import_module('row_softmax')\nf = m._s\n", True),  # named in a string
        (UNUSED, "from . import row_softmax\n\nf = row_softmax._s\n", True),
        (UNUSED.replace("softmax as _s", "softmax"), "import torch\n\n\ndef g(x):\n    return torch.softmax(x, -1)\n", False),
        # a self-test in a main guard reads nothing: a worker compiles the files without its body
        # (sandbox/mainguard.py), whatever the file does to __name__ and in an import cycle too
        # (blind testers R-DE, R-DH); the guard's else branch runs
        (UNUSED + MAIN_SELF_TEST, None, False),
        (UNUSED, "from row_softmax import softmax_rows\n" + MAIN_SELF_TEST.replace("_s(", "softmax_rows("), False),
        (UNUSED, "import row_softmax as r\n\nif __name__ == '__main__':\n    print(r._s)\n", False),
        (UNUSED + "\n\n__name__ = '__main__'\n" + MAIN_SELF_TEST, None, False),
        ("import helper\n" + UNUSED + MAIN_SELF_TEST, "import row_softmax\n\n\ndef f(x):\n    return row_softmax.f(x)\n", False),
        (UNUSED + MAIN_SELF_TEST + "else:\n    F = _s\n", None, True),
        # a name the grader reads from the file (`api`) is read whatever the file's code does (blind
        # red-team tester R-DH: torch's softmax bound as vocab_probs, which nothing of the file read)
        (UNUSED.replace("softmax as _s", "softmax as vocab_probs"), None, True),
        (UNUSED.replace("softmax as _s", "softmax as probs"), None, False),
    ],
)
def test_a_banned_import_in_the_exercise_file_counts_only_where_something_can_read_what_it_binds(own, helper, flagged):
    """Bans are on calls (EXERCISES.md): an unused ``from torch.nn import MultiheadAttention``
    cost mha_reshape all 15 points (blind tester R-DB). What the import binds counts as read
    wherever any code of the file, or of a file that names its module, reads that name — as a
    name, an attribute, an import or a string."""
    imports = {"helper": helper} if helper is not None else {}
    api = ("softmax_rows", "vocab_probs")
    run = lambda: check_no_banned(own, "row_softmax.py", SOFTMAX, what="rule", imports=imports, api=api)
    if flagged:
        with pytest.raises(CheckFailed, match="row_softmax.py:2: from torch.nn.functional import softmax") as caught:
            run()
        assert "of your own" not in str(caught.value)  # an import is no method of the student's (R-DE)
    else:
        run()


@pytest.mark.parametrize("handout", HANDOUTS)
def test_code_a_helper_hands_out_at_import_is_scanned_though_never_named(handout):
    helper = f"import torch.nn.functional as F\n\n\ndef ok(q):\n    return q\n\n\n{HANDOUTS[handout]}"
    with pytest.raises(CheckFailed, match="helper.py:[0-9]+: F.scaled_dot_product_attention"):
        check_no_banned("from helper import ok\n", "mha_reshape.py", SDPA, what="rule", imports={"helper": helper})


@pytest.mark.parametrize(
    "folder",
    [
        "solutions",
        "exercises",
        "tests/submissions/styles/einsum",
        "tests/submissions/styles/float64_lse",
        "tests/submissions/styles/loops",
        "tests/submissions/styles/defensive_oop",
        "tests/submissions/styles/minimal_functional",
    ],
)
def test_reference_stubs_and_style_submissions_pass_the_static_rules(folder):
    base = ROOT / folder
    assert scan((base / "row_softmax.py").read_text(), SOFTMAX[:-1]) == []
    assert scan((base / "mha_reshape.py").read_text(), SDPA) == []
    assert scan((base / "custom_backward.py").read_text(), AUTOGRAD, scope=BACKWARD_SCOPE) == []


# --------------------------------------------------------------------------- run time
OWN = __file__  # this file plays the submission's file: the recorder judges calls made from it


def _recorded(fn):
    names: set[str] = set()
    tampered: set[str] = set()
    with OpRecorder(names, tampered, own_files=OWN):
        fn()
    return names, tampered


def test_the_recorder_sees_softmax_even_with_torch_function_handling_off():
    x = torch.randn(3, 4)

    def evade():
        with torch._C.DisableTorchFunction():
            vars(torch)["softmax"](x, -1)

    names, tampered = _recorded(evade)
    assert "softmax" in names
    assert any("DisableTorchFunction" in t for t in tampered)


def test_popping_the_recorder_or_replacing_the_hook_is_noticed():
    def pop():
        mode = torch._C._pop_torch_function_stack()
        torch._C._push_on_torch_function_stack(mode)

    assert any("_pop_torch_function_stack" in t for t in _recorded(pop)[1])
    assert any("setprofile" in t for t in _recorded(lambda: sys.setprofile(None))[1])


def test_a_recording_paused_from_c_and_restarted_with_a_forged_start_is_noticed():
    """Blind red-team tester R-U switched the profiler off and on again through
    ``functools.partial`` (a C function called from C: no ``c_call`` event for the profile
    hook) and opened the new session with the start marker's public name: autograd ran
    unrecorded in between (custom_backward 20/20). Each recording's markers end in a secret,
    so a restarted session has no true start."""
    import functools

    from torch._C._profiler import _ExperimentalConfig, _RecordFunctionFast
    from torch.autograd import ProfilerConfig, ProfilerState, _disable_profiler_legacy, _enable_profiler_legacy

    from autograder.sandbox.probes import DispatchRecorder

    def restart():
        functools.partial(_disable_profiler_legacy)()
        torch.ones(2, requires_grad=True).exp().sum().backward()  # unrecorded
        config = ProfilerConfig(ProfilerState.CPU, False, False, True, False, False, _ExperimentalConfig())
        functools.partial(_enable_profiler_legacy, config)()
        with _RecordFunctionFast(DispatchRecorder.START):
            pass

    entries: dict = {}
    tampered: set[str] = set()
    with DispatchRecorder(entries, tampered, OWN):
        restart()
    assert any("recording of operators" in t for t in tampered), tampered
    honest: set[str] = set()
    with DispatchRecorder({}, honest, OWN):
        torch.ones(2).exp()
    assert not honest, honest


def test_honest_code_leaves_the_recorder_intact():
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 3, 4)

    def honest():
        s = lin(x) @ x.transpose(-2, -1)
        torch.einsum("bld,bsd->bls", x, x)
        torch.softmax(s, -1).sum().item()

    names, tampered = _recorded(honest)
    assert not tampered, tampered
    assert {"linear", "softmax", "einsum"} <= names


def test_the_autograd_tripwire_has_no_unwatched_original_and_watches_the_engine():
    """In a fresh interpreter (the tripwire patches torch process-wide)."""
    code = textwrap.dedent("""
        import torch
        from autograder.sandbox import probes
        probes.AUTOGRAD_TRIPWIRE.install()
        assert not hasattr(torch.autograd.grad, "__wrapped__")
        uses = set()
        probes.AUTOGRAD_TRIPWIRE.arm(uses)
        x = torch.ones(3, requires_grad=True)
        with torch.enable_grad():
            (x * 2).sum().backward()
        probes.AUTOGRAD_TRIPWIRE.disarm()
        assert any("engine" in u for u in uses), uses
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


# issue 28: the scan resolves names to torch's objects — an alias of torch is torch, a
# student's own `softmax` is never torch's, and a resolver of names (pydoc) is denied
ALIASED_EVASIONS = {
    "alias-private": ("t = torch\n\n\ndef f(x):\n    return t._C._VariableFunctions.exp(x)\n", "t._C (torch's private"),
    "alias-aten-derivative": (
        "t = torch\n\n\ndef f(x, w):\n    return t.ops.aten._softmax_backward_data(x, w, -1, x.dtype)\n",
        "t.ops.aten._softmax_backward_data (torch's private namespace, t is torch)",
    ),
    "alias-chain": ("t = torch\nops = t.ops\na = ops.aten\n\n\ndef f(x):\n    return a._softmax(x, -1, False)\n", "a._softmax"),
    "pydoc-locate": (
        'import pydoc\n\n\ndef f(x):\n    return pydoc.locate("torch.nn.functional." + "soft" + "max")(x, -1)\n',
        "import pydoc",
    ),
    "container": ("MODS = [1, torch]\n\n\ndef f(x):\n    return MODS[1]._C\n", "MODS[…]._C"),
    "parameter": (
        "def g(m):\n    return m._C\n\n\ndef f(x):\n    return g(torch)\n",
        "m._C (torch's private namespace, m is torch)",
    ),
    "returned": ("def get():\n    return torch\n\n\ndef f(x):\n    return get()._C\n", "get()._C"),
    # blind red-team tester R-CA (2026-12-07): torch's namespace handed to a function that hands it
    # back, or kept as an attribute — `box._dynamo.eval_frame._maybe_set_eval_frame` passed the scan
    "handed-back-by-dict": ('box = dict(m=torch)["m"]\n\n\ndef f(x):\n    return box._dynamo\n', "box._dynamo"),
    "handed-back-by-next": ("box = next(iter([torch]))\n\n\ndef f(x):\n    return box._C\n", "box._C"),
    # blind red-team tester R-CB (2026-12-07): more ways to hand torch along
    "with-as": ("import contextlib\n\nwith contextlib.nullcontext(torch) as t:\n    X = t._C\n", "t._C"),
    "comprehension-variable": ("X = [m for m in [torch]][0]._C\n", "._C (torch's private namespace"),
    "yielded": ("def g():\n    yield torch\n\n\nX = next(g())._C\n", "next()._C"),
    "library-torch-attribute": ("import einops.layers.torch as elt\n\nt = elt.torch\nX = t._C\n", "t._C"),
    "set-pop": ("X = {torch}.pop()._C\n", ".pop()._C"),
    "dict-popitem": ("X = dict.fromkeys([torch]).popitem()[0]._C\n", "popitem()[…]._C"),
    "instance-of-class-attribute": ("class K:\n    m = torch\n\n\nX = K().m._C\n", "K().m._C"),
    # an exception carrying torch, read back where it is caught (R-CB's open case, closed 2026-12-07)
    "raised-and-caught": (
        "try:\n    raise ValueError(torch)\nexcept ValueError as e:\n    X = e.args[0]._C\n",
        "e.args[…]._C",
    ),
    "raised-from-and-caught": (
        "def f():\n    try:\n        raise KeyError from LookupError(torch)\n    except KeyError as err:\n"
        "        return err.__cause__.args[0]._C\n",
        "._C (torch's private namespace",
    ),
    "class-attribute": ("class Lib:\n    m = torch\n\n\ndef f(x):\n    return Lib.m._C\n", "Lib.m._C"),
    "self-attribute": (
        "class Head:\n    def __init__(self):\n        self.lib = torch\n\n    def f(self, x):\n        return self.lib._C\n",
        "self.lib._C (torch's private namespace, torch reached through self)",
    ),
    "lambda": ("get = lambda: torch\n\n\ndef f(x):\n    return get()._C\n", "get()._C"),
    "unpacked": ("a, t = 1, torch\n\n\ndef f(x):\n    return t._C\n", "t._C"),
    "getattr-constant": ("def f(x):\n    return getattr(torch, 'ops').aten._softmax(x, -1, False)\n", "_softmax"),
    "torch-library": ("L = torch.library\n", "reaches operators or code by a name"),
    # blind tester G (2026-12-04): a format field and logging's configurator resolve dotted names too
    "string-formatter": (
        "import string\n\n\ndef f(x):\n"
        '    return string.Formatter().get_field("0.nn.functional.soft" + "max", (torch,), {})[0](x)\n',
        "string.Formatter",
    ),
    "formatter-imported": ("from string import Formatter\n", "from string import Formatter"),
    "logging-config": (
        "import logging.config\n\n\ndef f(x):\n    return logging.config.BaseConfigurator({}).resolve('torch.softmax')(x, -1)\n",
        "logging.config",
    ),
    "the-grader": ("from autograder.sandbox.probes import recorders\n", "autograder.sandbox.probes"),
    # blind red-team tester H, 2026-12-05: builtins.exec reached through another module's `sys`
    # ran unscanned code (gc walks, frame walks, reply scrubbing) in four rule-checked skills
    "os-sys-exec": ('import os\n\nos.sys.modules["builtins"].exec("import gc", {})\n', "os.sys"),
    "getattr-sys": ('import os\n\nS = getattr(os, "sys")\n', "getattr(…, 'sys')"),
    "from-os-import-sys": ("from os import sys\n", "from os import sys"),
    "sys-modules-subscript": ('import sys\n\nB = sys.modules["builtins"]\n', "sys.modules"),
    "exec-attribute": ("import torch\n\nrun = torch.exec\n", "torch.exec"),
    "timeit-string": ('import timeit\n\ntimeit.timeit("import gc", number=1)\n', "timeit.timeit(…)"),
    "profile-built-string": ('import cProfile\n\ncode = "import g" + "c"\ncProfile.run(code)\n', "cProfile.run(…)"),
    "doctest": ("import doctest\n", "import doctest"),
    # blind red-team tester J, 2026-12-05: four more doors to code the scan cannot read
    "private-pickle": ('import _pickle\n\nR = _pickle.loads(b"cbuiltins\\nexec\\n.")\n', "import _pickle"),
    "frozen-importlib": ("import _frozen_importlib_external as f\n", "import _frozen_importlib_external"),
    "annotation-exec": ('def _h(x: "exec(C, {})"):\n    pass\n', "the annotation"),
    "get-type-hints": ("import typing\n\nH = typing.get_type_hints\n", "get_type_hints"),
    "numpy-load-kwargs": ('import numpy as np\n\nX = np.load("b", **{"allow_pickle": True})\n', "np.load(…)"),
    "profile-object-run": ('import cProfile\n\np = cProfile.Profile()\np.run("import gc")\n', "p.run(…)"),
    "sympify": ('import sympy\n\nsympy.sympify("1")\n', "import sympy"),
    "numpy-pickle": ('import numpy\n\nX = numpy.load("x.npy", allow_pickle=True)\n', "allow_pickle"),
    "setprofile": ("import sys\n\nsys.setprofile(None)\n", "sys.setprofile"),
    # blind red-team tester R-J, 2026-12-05: an object exposing numpy's array interface makes numpy
    # read and write any address (sandbox/rawmemory.py removes numpy's own holder's reach)
    "array-interface-method": (
        "class P:\n    @property\n    def __array_interface__(self):\n        return {}\n",
        "def __array_interface__",
    ),
    "array-interface-keyword": (
        "import types\n\nP = types.SimpleNamespace(__array_interface__={})\n",
        "__array_interface__=",
    ),
    "array-struct-string": ('K = "__array_struct__"\n', "'__array_struct__'"),
}


def test_timing_and_debugging_with_functions_is_not_flagged():
    """timeit, pdb and cProfile also run strings of code, so a call of theirs may take only
    functions and numbers; importing them to time a lambda or stop in a debugger is correct
    code and stays unflagged, inside the main guard or not."""
    for body in (
        "import timeit\n\n\ndef f():\n    return 1\n\n\nT = timeit.timeit(f, number=3)\nt0 = timeit.default_timer()\n",
        "if __name__ == '__main__':\n    import timeit\n\n    print(timeit.timeit(lambda: torch.ones(2), number=3))\n",
        "import pdb\n\n\ndef f(x):\n    pdb.set_trace()\n    return x\n",
        "import cProfile\n\n\ndef f():\n    return 1\n\n\nP = cProfile.Profile()\nP.runcall(f)\n",
        # a student's own helper named with an underscore, and string annotations that are types
        "from _attn_common import safe_softmax\n",
        # the import path, read or extended (blind tester R-DE): a rule-checked worker runs only
        # the files the scan read whatever the path says (attack written_module_on_sys_path)
        "import os\nimport sys\n\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\nprint(sys.path)\n",
        "from typing import Literal, Optional\n\n\n"
        'def f(x: "torch.Tensor", m: "Literal[\'a\']" = "a") -> "Optional[int]":\n    return None\n',
    ):
        found = scan(f"import torch\n\n{body}", SOFTMAX)
        assert not found, [v.found for v in found]


def test_modules_that_start_threads_are_not_flagged_the_worker_has_no_threads():
    """The capability is removed (seccomp, no thread can start), so the scan does not refuse
    correct code for importing them; the thread attacks are stopped by the worker instead."""
    for body in ("import asyncio\n", "import logging\nimport logging.handlers\n\nQ = logging.handlers.QueueListener\n"):
        found = scan(f"import torch\n\n{body}", SOFTMAX)
        assert not found, [v.found for v in found]


def test_the_scan_reads_a_file_as_python_does_so_a_bom_or_a_coding_cookie_hides_nothing(tmp_path):
    """A BOM, or a cp1252 identifier under a coding cookie, made the text the trusted side read
    (UTF-8) fail to parse, and the scan then saw nothing while Python ran the file."""
    body = 'import os\n\nos.sys.modules["builtins"].exec("import gc", {})\n'
    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + body.encode())
    cookie = tmp_path / "cookie.py"
    cookie.write_bytes(b"# -*- coding: cp1252 -*-\ncaf\xe9 = 1\n" + body.encode())
    for path in (bom, cookie):
        text = read_python_source(path)
        compile(path.read_bytes(), str(path), "exec")  # Python runs it
        assert any("os.sys" in v.found for v in scan(text, SOFTMAX)), path.name
    assert read_python_source(cookie).splitlines()[1] == "café = 1"
    honest = tmp_path / "latin.py"
    honest.write_bytes(b"# coding: latin-1\n# caf\xe9\nimport torch\n")
    assert read_python_source(honest).endswith("# café\nimport torch\n") and not scan(read_python_source(honest), SOFTMAX)


def test_a_file_python_compiles_to_other_code_than_the_scan_reads_is_reported(tmp_path):
    """Blind red-team tester R-H: with bare CR line ends, tokenize took the whole file for its
    first line and a coding cookie at its end for the file's codec (cp037, unicode_escape):
    the scan read an honest file, or nothing, while Python compiled the cheat as UTF-8. The
    text is now split where Python splits it; text that still parses to other code than the
    bytes compile to is reported, never scanned; honest files of every kind read as before."""
    cheat = "import torch\n\n\ndef f(s):\n    return torch.softmax(s, -1)\n"
    cr_cookie = tmp_path / "cr_cookie.py"
    cr_cookie.write_bytes(b"# a comment\r" + cheat.replace("\n", "\r").encode() + b"# coding: cp037\r")
    text = read_python_source(cr_cookie)
    assert any("torch.softmax" in v.found for v in scan(text, SOFTMAX)), [v.found for v in scan(text, SOFTMAX)]
    # a decoy readable only through a codec Python does not apply: reported, whatever the decoy says
    decoy = "# x\\x0aimport torch\\x0adef f(s):\\x0a    return s\n"
    tricked = tmp_path / "tricked.py"
    tricked.write_bytes(b"#" + decoy.encode() + b"\r" + cheat.replace("\n", "\r").encode() + b"# coding: unicode_escape\r")
    found = scan(read_python_source(tricked), SOFTMAX)
    assert found and any("torch.softmax" in v.found or "compiles to other code" in v.found for v in found)
    honest = "import torch\n\n\ndef f(s):\n    e = (s - s.amax(-1, keepdim=True)).exp()\n    return e / e.sum(-1, keepdim=True)\n"
    for name, data in {
        "lf": honest.encode(),
        "crlf": honest.replace("\n", "\r\n").encode(),
        "cr": honest.replace("\n", "\r").encode(),
        "bom": b"\xef\xbb\xbf" + honest.encode(),
        "latin": b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + honest.encode(),
        "syntax error": b"def f(:\n",
    }.items():
        path = tmp_path / f"{name.replace(' ', '_')}.py"
        path.write_bytes(data)
        text = read_python_source(path)
        assert type(text) is str, name  # not a MisreadSource
        if name != "syntax error":
            assert scan(text, SOFTMAX) == [], name


@pytest.mark.parametrize("name", ALIASED_EVASIONS)
def test_an_alias_of_torch_or_a_name_resolver_is_flagged(name):
    body, construct = ALIASED_EVASIONS[name]
    found = scan(f"import torch\n\n{body}", SOFTMAX)
    assert any(construct in v.found for v in found), [v.found for v in found]


def test_autograd_functional_is_flagged_in_every_spelling_and_nn_functional_is_not():
    banned = (*AUTOGRAD[:-1], "autograd.functional")
    head = "import torch\nimport torch.nn.functional as F\n"
    for spelling in (
        "torch.autograd.functional.vjp(f, x, d)",
        "ag.functional.vjp(f, x, d)",
    ):
        source = f"{head}ag = torch.autograd\n\n\ndef attention_backward(f, x, d):\n    return {spelling}\n"
        assert scan(source, banned, scope=BACKWARD_SCOPE), spelling
    assert scan(f"{head}from torch.autograd import functional as AF\n", banned)
    assert scan(f"{head}import torch.autograd.functional as AF\n", banned)
    honest = (
        f"{head}\n\ndef attention_backward(d_out, q, k, v, s, scale):\n"
        "    a = F.softmax(s, -1)  # recompute the weights\n"
        "    b = torch.nn.functional.softmax(s, dim=-1)\n"
        "    return a, b\n"
    )
    assert scan(honest, banned, scope=BACKWARD_SCOPE) == []


def test_a_students_own_softmax_in_a_helper_module_is_not_torchs():
    helper = (
        "import torch\n\n\ndef softmax(s, dim=-1):\n    e = torch.exp(s - s.amax(dim, keepdim=True))\n"
        "    return e / e.sum(dim, keepdim=True)\n"
    )
    for importer in (
        "from rowmath import softmax\n\n\ndef softmax_rows(s, dim=-1):\n    return softmax(s, dim)\n",
        "import rowmath\n\n\ndef softmax_rows(s, dim=-1):\n    return rowmath.softmax(s, dim)\n",
        "import rowmath as rm\n\n\ndef softmax_rows(s, dim=-1):\n    return rm.softmax(s, dim)\n",
    ):
        check_no_banned(importer, "row_softmax.py", SOFTMAX, what="rule", imports={"rowmath": helper})
    cheat = helper.replace("    e = torch.exp", "    return torch.softmax(s, dim)\n    e = torch.exp")
    with pytest.raises(CheckFailed, match="rowmath.py:5: torch.softmax"):
        check_no_banned("from rowmath import softmax\n", "row_softmax.py", SOFTMAX, what="rule", imports={"rowmath": cheat})


def test_a_banned_name_in_a_message_is_prose():
    source = textwrap.dedent("""
        import warnings
        import torch


        def softmax_rows(s, dim=-1):
            if s.dim() == 0:
                raise ValueError("softmax")
            if not s.is_floating_point():
                raise TypeError("softmax expects floats, got %s" % s.dtype)
            assert s.numel(), "softmax"
            if s.numel() > 10**8:
                warnings.warn("cross_entropy")
            print("log_softmax", f"softmax of {s.shape}")
            e = torch.exp(s - s.amax(dim, keepdim=True))
            return e / e.sum(dim, keepdim=True)
    """)
    assert scan(source, SOFTMAX) == []
    assert scan(source + "\nNAME = 'softmax'\n", SOFTMAX)  # a bare string still counts: it may be a name


def test_a_lookup_in_a_loop_over_string_constants_is_judged_on_those_constants():
    honest = (
        "import torch.nn as nn\n\n\nclass M(nn.Module):\n    def __init__(self, c):\n        super().__init__()\n"
        '        for name in ("w_q", "w_k", "w_v", "w_o"):\n            setattr(self, name, nn.Linear(c, c))\n'
    )
    assert scan(honest, SDPA) == []
    hidden = (
        "import torch\n\n\ndef f(x):\n    for n in ('exp', 'soft' 'max'):\n        x = getattr(torch, n)(x, -1)\n    return x\n"
    )
    assert any("'softmax'" in v.found for v in scan(hidden, SOFTMAX))
    rebound = (
        "import torch\n\n\ndef f(x, m):\n    for n in ('exp',):\n        n = m\n        x = getattr(torch, n)(x)\n    return x\n"
    )
    assert any("computed name" in v.found for v in scan(rebound, SOFTMAX))


def test_a_scan_lists_a_trees_nodes_once_in_the_order_ast_walk_gives():
    """The scanner's helpers share one list of a tree's nodes (source/tree._nodes) instead of
    walking the tree a dozen times: the same nodes in ast.walk's order, listed once."""
    import ast

    from autograder.testing.source.tree import _nodes

    tree = ast.parse(textwrap.dedent(SOLUTIONS_SAMPLE))
    first = _nodes(tree)
    assert [type(n) for n in first] == [type(n) for n in ast.walk(tree)]
    assert all(a is b for a, b in zip(first, ast.walk(tree)))
    assert _nodes(tree) is first


SOLUTIONS_SAMPLE = """
import torch
import torch.nn.functional as F

class Head(torch.nn.Module):
    def forward(self, x):
        return F.softmax(x @ x.transpose(-2, -1), dim=-1)

def helper(t):
    return [torch.exp(v) for v in t]
"""


NEVER_CALLED = {
    # imported for type checkers only, unused (fairness tester R-Z): TYPE_CHECKING is False at run time
    "type-checking-import": (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from torch.nn import MultiheadAttention\n"
    ),
    # quoted: the name is bound by the import and read only in a string annotation (fairness tester R-Z)
    "quoted-annotation": (
        "from typing import Optional\n\nfrom torch.nn import MultiheadAttention\n\n\n"
        'def load(ref: "MultiheadAttention", other: Optional["MultiheadAttention"] = None) -> None:\n    return None\n'
    ),
    "annotation": "import torch.nn as nn\n\n\ndef load(mha: nn.MultiheadAttention | None) -> None:\n    return None\n",
    "string-annotation": 'def load(mha: "torch.nn.MultiheadAttention") -> None:\n    return None\n',
    "isinstance": "import torch.nn as nn\n\n\ndef is_torch_mha(m):\n    return isinstance(m, (nn.MultiheadAttention, int))\n",
    "import-for-types": (
        "from __future__ import annotations\n\nfrom torch.nn import MultiheadAttention\n\n\n"
        "def f(m: MultiheadAttention) -> bool:\n    return issubclass(type(m), MultiheadAttention)\n"
    ),
    "main-guard": (
        "import torch.nn.functional as F\n\nif __name__ == '__main__':\n"
        "    print(F.scaled_dot_product_attention(torch.ones(1, 2, 2), torch.ones(1, 2, 2), torch.ones(1, 2, 2)))\n"
    ),
}
CALLED_AFTER_ALL = {
    "type-checking-rebound": (
        "from typing import TYPE_CHECKING\n\nTYPE_CHECKING = True\nif TYPE_CHECKING:\n"
        "    from torch.nn import MultiheadAttention\n\nM = MultiheadAttention(4, 2)\n"
    ),
    "annotation-with-a-call": "def f(m: torch.nn.MultiheadAttention(4, 2)) -> None:\n    return None\n",
    "isinstance-rebound": (
        "import torch.nn as nn\n\nisinstance = lambda a, b: b(4, 2)\nM = isinstance(1, nn.MultiheadAttention)\n"
    ),
    "import-also-called": (
        "from torch.nn import MultiheadAttention\n\n\ndef f(m: MultiheadAttention):\n    return MultiheadAttention(4, 2)\n"
    ),
    "main-guard-that-runs": (
        "import torch.nn.functional as F\n\n__name__ = '__main__'\nif __name__ == '__main__':\n"
        "    X = F.scaled_dot_product_attention\n"
    ),
}


@pytest.mark.parametrize("name", sorted(NEVER_CALLED))
def test_a_banned_name_that_is_never_called_is_not_flagged(name):
    """Blind tester R-K lost mha_reshape's 15 points to torch's MultiheadAttention named in a type
    annotation and in isinstance, and a main-guard self-test against SDPA (Day 1 §B's 对拍):
    bans are on calls (docs/EXERCISES.md), and none of these can call what they name."""
    found = scan(f"import torch\n\n{NEVER_CALLED[name]}", SDPA)
    assert not found, [v.found for v in found]


@pytest.mark.parametrize("name", sorted(CALLED_AFTER_ALL))
def test_a_banned_name_that_can_still_be_called_is_flagged(name):
    """The same places where they do call it: an annotation holding a call (evaluated when the
    function is defined), a rebound isinstance, an imported name also used elsewhere, and a
    main guard the file makes run by rebinding __name__."""
    assert scan(f"import torch\n\n{CALLED_AFTER_ALL[name]}", SDPA)


def test_an_own_instance_is_trusted_only_where_no_other_file_of_the_submission_can_reach_it():
    """A module-level instance and ``self.A`` are the file's own only where the file imports none
    of the submission's other files: one it imports could store torch into them (blind red-team
    tester R-CT: ``import row_softmax; row_softmax.R = torch`` from a helper in a cycle), or be
    handed the instance and store into it."""
    main = (
        "import torch\nimport rowhelp\n\n\nclass Rows:\n    def softmax(self, x, dim):\n        return x\n\n\n"
        "R = Rows()\nrowhelp.setup(R)\n\n\ndef softmax_rows(s, dim=-1):\n    return R.softmax(s, dim)\n"
    )
    helper = "import torch\n\n\ndef setup(obj):\n    obj.softmax = getattr(torch, 'soft' + 'max')\n"
    with pytest.raises(CheckFailed, match="R.softmax"):
        check_no_banned(main, "row_softmax.py", SOFTMAX, what="rule", imports={"rowhelp": helper})
    alone = main.replace("import rowhelp\n", "").replace("rowhelp.setup(R)\n", "")
    check_no_banned(alone, "row_softmax.py", SOFTMAX, what="rule", imports={"rowhelp": helper})


BACKWARD_NAMES = ["backward", "grad", "vjp"]


@pytest.mark.parametrize(
    "source",
    [
        # blind fairness tester R-CS: the file's own backward through a factory, a subclass, a
        # container, a class attribute and the autograd ctx
        "class Backward:\n    def backward(self, g):\n        return g\n\n\ndef make():\n    return Backward()\n\n\n"
        "def f(g):\n    return make().backward(g)\n",
        "class Backward:\n    def backward(self, g):\n        return g\n\n\nclass Hand(Backward):\n    pass\n\n\n"
        "def f(g):\n    return Hand().backward(g)\n",
        "class Backward:\n    def backward(self, g):\n        return g\n\n\nIMPLS = {'hand': Backward()}\n\n\n"
        "def f(g):\n    return IMPLS['hand'].backward(g)\n",
        "class Backward:\n    def backward(self, g):\n        return g\n\n\nclass Holder:\n    impl = Backward()\n\n\n"
        "def f(g):\n    return Holder.impl.backward(g)\n",
        "import torch\n\n\nclass Backward:\n    def backward(self, g):\n        return g\n\n\n"
        "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.helper = Backward()\n"
        "        return x\n\n    @staticmethod\n    def f(ctx, g):\n        return ctx.helper.backward(g)\n",
    ],
)
def test_the_files_own_backward_reached_through_its_own_objects_is_not_autograd(source):
    assert scan(source, BACKWARD_NAMES) == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        (
            "class Backward:\n    def backward(self, g):\n        return g\n\n\ndef make(t):\n    if t:\n        return t\n"
            "    return Backward()\n\n\ndef f(g):\n    return make(g).backward(g)\n",
            "make().backward",
        ),
        (
            "class Backward:\n    def backward(self, g):\n        return g\n\n\nIMPLS = [Backward()]\n\n\n"
            "def f(g):\n    IMPLS[0] = g\n    return IMPLS[0].backward(g)\n",
            "IMPLS[…].backward",
        ),
        (
            "class Backward:\n    def backward(self, g):\n        return g\n\n\nIMPLS = [Backward()]\n\n\n"
            "def f(g):\n    IMPLS.append(g)\n    return IMPLS[-1].backward(g)\n",
            "IMPLS[…].backward",
        ),
        (
            "class Backward:\n    def backward(self, g):\n        return g\n\n\nclass Holder:\n    impl = Backward()\n\n\n"
            "def f(g):\n    Holder.impl = g\n    return Holder.impl.backward(g)\n",
            "Holder.impl.backward",
        ),
        (
            "import torch\n\n\nclass Backward:\n    def backward(self, g):\n        return g\n\n\n"
            "class F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
            "        ctx.saved_tensors = Backward()\n        return x\n\n    @staticmethod\n    def f(ctx, g):\n"
            "        return ctx.saved_tensors.backward(g)\n",
            "ctx.saved_tensors.backward",
        ),
    ],
)
def test_what_could_hold_a_tensor_instead_of_the_files_own_object_stays_flagged(source, found):
    assert [v.found for v in scan(source, BACKWARD_NAMES) if v.found.endswith(".backward")] == [found]


def test_a_name_refused_wherever_it_runs_is_left_to_the_run_time_check_where_the_file_has_its_own():
    """row_softmax and mha_reshape ban their kernels for the worker's whole life: a call of the
    student's own softmax on an object the scan cannot place (a base class's, a container's,
    ``super()``'s: blind fairness tester R-CS) proves nothing, and what runs is judged there.
    torch's own spellings stay flagged, and so does every call where the file has no softmax of
    its own."""
    own = (
        "import torch\n\n\nclass Base:\n    def softmax(self, x, dim=-1):\n        e = (x - x.amax(dim, keepdim=True)).exp()\n"
        "        return e / e.sum(dim, keepdim=True)\n\n\nclass Child(Base):\n    def softmax(self, x, dim=-1):\n"
        "        return super().softmax(x, dim)\n\n\ndef f(x, impls):\n    return impls[0].softmax(x) + Child().softmax(x)\n"
    )
    assert scan(own, SOFTMAX[:-1]) != []  # strict: not proven to be the file's own
    assert scan(own, SOFTMAX[:-1], deferred=SOFTMAX[:-1]) == []
    torch_spelled = own + "\n\ndef g(x):\n    return torch.softmax(x, -1) + torch.nn.functional.softmax(x, -1)\n"
    assert {v.found for v in scan(torch_spelled, SOFTMAX[:-1], deferred=SOFTMAX[:-1])} == {
        "torch.softmax",
        "torch.nn.functional.softmax",
    }
    none_of_its_own = "def f(x):\n    return x.softmax(-1)\n"
    assert [v.found for v in scan(none_of_its_own, SOFTMAX[:-1], deferred=SOFTMAX[:-1])] == ["x.softmax"]


@pytest.mark.parametrize("padding", ["sum", "elif", "nested-calls"])
def test_a_syntax_tree_as_deep_as_python_compiles_is_scanned_like_a_flat_one(padding):
    """Blind red-team tester R-CX: a 500-term sum (or a 520-branch elif chain) at the end of
    the file made the scan's recursion raise, the rule test ended as a grader error, and no
    gate fell on torch's attention (mha_reshape 12.92 of 15). Python compiles a tree ~3 000
    levels deep; the scan reads such a file to the end (testing/source/deep.py) and finds
    what it finds in a flat one, and ``reaches`` follows its calls."""
    depth = 2_000  # past what the scan reached before (a few hundred levels), within what compile() takes under pytest
    if padding == "sum":
        pad = "_PAD = " + " + ".join(["0"] * depth) + "\n"
    elif padding == "elif":
        branches = "".join(f"    elif x == {i}:\n        return {i}\n" for i in range(1, depth))
        pad = "def pick(x):\n    if x == 0:\n        return 0\n" + branches
    else:
        pad = "_PAD = " + "abs(" * 180 + "0" + ")" * 180 + "\n"  # the parser's own limit: 200 brackets
    source = f"import torch\n\n\ndef helper(x):\n    return x.softmax(-1)\n\n\ndef f(x):\n    return helper(x)\n\n\n{pad}"
    compile(source, "deep.py", "exec")  # Python takes it: so must the scan
    found = scan(source, SOFTMAX)
    assert [v.line for v in found] == [5], [(v.line, v.found) for v in found]
    assert reaches(source, "f", "helper")
    with pytest.raises(CheckFailed):
        check_no_banned(source, "deep.py", SOFTMAX, what="the file")


def test_a_string_annotation_python_cannot_parse_is_no_code_and_the_scan_goes_on():
    """Blind red-team tester R-CZ: ``_PAD: "-----…a"`` (7 000 minus signs) overflows the
    parser's own stack: ``ast.parse`` raises MemoryError, which the scan let out, and the rule
    test ended as a grader error (no gate). Python cannot evaluate that annotation either, so
    it is no code; the rest of the file is scanned as before."""
    source = 'import torch\n\n_PAD: "' + "-" * 7_000 + 'a" = 0\n\n\ndef f(x):\n    return x.softmax(-1)\n'
    found = scan(source, SOFTMAX)
    assert [v.line for v in found] == [7], [(v.line, v.found) for v in found]


def test_each_node_of_an_expression_is_read_once_for_torch():
    """Blind red-team tester R-CZ: ``d.copy().copy()…`` asked ``path`` for the container twice
    a level (is it torch? then: what is it?), 2^N in all: 32 calls in a lambda never run held
    the trusted process for the run's whole time limit. Each node is evaluated once."""
    import ast

    from autograder.testing.source.aliases import _TorchAliases

    tree = ast.parse("import torch\nget = lambda d: d" + ".copy()" * 32 + "\n")
    aliases = _TorchAliases(tree)
    evaluated = []
    original = aliases._evaluated_path
    aliases._evaluated_path = lambda node, memo: evaluated.append(node) or original(node, memo)
    aliases.path(tree.body[1].value.body)
    assert len(evaluated) <= 2 * 32 + 2, len(evaluated)
