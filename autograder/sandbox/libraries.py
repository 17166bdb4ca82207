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
"""

from __future__ import annotations

import os
import sys
import warnings

from . import rawmemory

#: the submission copies already looked at (a fork server reads a copy's files once, not per worker)
_LOOKED_AT: set[str] = set()


def names_einops(copy_dir: str) -> bool:
    """Whether any ``.py`` file of the submission's copy mentions einops."""
    try:
        names = sorted(os.listdir(copy_dir))
    except OSError:
        return False
    for name in names:
        if not name.endswith(".py"):
            continue
        try:
            with open(os.path.join(copy_dir, name), "rb") as fh:
                if b"einops" in fh.read(1 << 20):
                    return True
        except OSError:
            continue
    return False


def warm_einops(copy_dir: str) -> bool:
    """Make einops' torch backend in this (fork server) process, as a worker would on its
    first call, if the submission names einops and it is not made yet; True if it was made
    here. ``ctypes`` is refused meanwhile, as in a worker, so the same registration fails the
    same way and nothing here loads what a worker could not."""
    if copy_dir in _LOOKED_AT:
        return False
    _LOOKED_AT.add(copy_dir)
    if not names_einops(copy_dir):
        return False
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
