"""First-use work of the libraries a submission may use, done in the fork server instead of
inside a call's CPU limit.

``einops``' first call on a torch tensor creates its torch backend, whose import tries to
register einops' functions with ``torch._dynamo``: in a worker, where ``ctypes`` cannot be
imported (rawmemory.py), that import fails after loading ~60 modules — 60–80 ms of CPU,
charged to the submission's first ``rearrange``, against a call limit of 0.1 CPU s on the
cheap functions. Under load, or in a batch's preloaded fork, it went over: a correct
``split_heads`` written with ``rearrange`` timed out and lost mha_reshape points on one path
and not on another (blind tester R-AY; the einops corpus entry failed CI's slow set once the
same way). The fork server now makes the backend once, with ``ctypes`` refused exactly as
in a worker, so the workers it forks inherit a made backend and a failed registration, and
the call costs what the code does.

Only where a file of the submission names einops (a plain byte search of its ``.py`` files,
comments included: a needless warm-up costs ~60 ms once per run, never a point); nothing
of the submission runs here.

Some of torch's own modules cannot be imported in a worker at all: ``torch.nn.attention.bias``
(``causal_lower_right``, ``causal_upper_left``: the bottom-right causal mask of sdpa_masks)
and ``torch.nn.attention.varlen`` load ``torch._dynamo``, which imports ``ctypes`` — ~0.9 CPU s,
and refused in a worker. A correct sdpa_masks that imported ``causal_lower_right`` scored 0
(blind tester R-BY: "No module named 'ctypes'", or, on another run, an import over its 0.1 CPU
s). Where the submission's files import one of ``WARMED_TORCH_MODULES`` by name (read from
their syntax trees; nothing of them runs), the fork server imports it before it forks a
worker, with ctypes as torch's own import had it; ``zygote.spawn`` then takes ctypes out of
every module again (rawmemory.remove_ctypes), as after torch's import, so a worker inherits
the module made and no ctypes. The list is torch's modules that fail in a worker and that
attention code may import (``tests/benchmarks/worker_imports.py`` lists every module of torch
that fails: rerun it when torch's pin moves); any other module imports in the worker as
before.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
import warnings

from . import rawmemory

#: the submission copies already looked at (a fork server reads a copy's files once, not per worker)
_LOOKED_AT: set[str] = set()


#: torch modules a worker cannot import (they load torch._dynamo, which imports ctypes) that
#: attention code may import: made in the fork server where the submission imports them
WARMED_TORCH_MODULES = frozenset({"torch.nn.attention.bias", "torch.nn.attention.varlen"})


def _sources(copy_dir: str) -> list[bytes]:
    """The first MiB of each ``.py`` file of the submission's copy (an exercise module is at
    most ``max_module_kib``; a larger one is not graded)."""
    try:
        names = sorted(os.listdir(copy_dir))
    except OSError:
        return []
    out = []
    for name in names:
        if not name.endswith(".py"):
            continue
        try:
            with open(os.path.join(copy_dir, name), "rb") as fh:
                out.append(fh.read(1 << 20))
        except OSError:
            continue
    return out


def imported_modules(sources: list[bytes]) -> set[str]:
    """Every module the sources import by name, at any depth of their code: ``import a.b`` →
    ``a.b``; ``from a.b import c`` → ``a.b`` and ``a.b.c`` (``c`` may be a submodule). A file
    that does not parse imports nothing here (its import fails in the worker anyway)."""
    found: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def warm(copy_dir: str) -> list[str]:
    """The first-use work of what the submission's files name, done here in the fork server,
    once per copy (its files read once): einops' torch backend, and each of
    ``WARMED_TORCH_MODULES`` they import that is not loaded yet. The torch modules made here;
    the caller takes ctypes out again before it forks (zygote.spawn)."""
    if copy_dir in _LOOKED_AT:
        return []
    _LOOKED_AT.add(copy_dir)
    sources = _sources(copy_dir)
    if any(b"einops" in source for source in sources):
        _make_einops_backend()
    return _import_torch_modules(sorted((WARMED_TORCH_MODULES & imported_modules(sources)) - set(sys.modules)))


def _import_torch_modules(names: list[str]) -> list[str]:
    """Import ``names`` here; those that imported (another torch may lack one: the worker's
    import then fails as it would)."""
    made = []
    for name in names:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(name)
            made.append(name)
        except Exception:
            continue
    return made


def _make_einops_backend() -> bool:
    """Make einops' torch backend in this (fork server) process, as a worker would on its
    first call; True if it was made. ``ctypes`` is refused meanwhile, as in a worker, so the
    same registration fails the same way and nothing here loads what a worker could not."""
    refuse = rawmemory.NotImportable()
    sys.meta_path.insert(0, refuse)
    try:
        import torch
        from einops._backends import get_backend

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "allow_ops_in_compiled_graph failed": what a worker gets too
            get_backend(torch.zeros(1))
        return True
    except Exception:  # einops missing or changed: its first call pays, as before
        return False
    finally:
        sys.meta_path.remove(refuse)


def register_torchs_lazy_kernels() -> None:
    """Kernels torch registers for its own operators the first time a feature is used, made
    now: a worker refuses any registration in torch's namespaces once it serves
    (``recorders.seal_switches``: exercise code registered a kernel of its own for
    ``aten::clone``), and torch's own first use would be refused with it: ``torch.vmap``'s
    batching decompositions (``aten::nll_loss_forward``… for ``FuncTorchBatched``; a correct
    ``document_mask`` written with ``torch.vmap`` lost its tests: blind tester R-BT).
    Idempotent: torch keeps what it registered (~0.2 ms). Not made: jagged nested tensors, whose
    first use imports torch's distributed collectives (``_c10d_functional``), refused in a worker."""
    try:
        from torch._functorch.predispatch import lazy_load_decompositions

        lazy_load_decompositions()
    except Exception:  # another torch: its first use registers what it registers, or fails as it would
        pass
