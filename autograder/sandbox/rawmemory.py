"""Raw memory stays out of a worker's exercise code: no array over an address of its choosing.

Every rule a worker enforces (the kernel bans, the autograd tripwire, the recorders) is an
object in the worker's own memory. Code that can read and write any address can switch them
off: blind red-team tester R-J built a numpy array over an address from ``id()`` with
``numpy.lib.stride_tricks.as_strided`` (strides reaching outside the array) and from there
reached and rewired the tripwire and the recorders — 20/20 in custom_backward with autograd in
``backward``. The capability is removed at its sources:

- **ctypes** (``memmove``, ``cast``, ``pointer``, ``from_address``, ``pythonapi`` …), which torch
  itself hands out (``torch.ctypes``, ``torch.xpu.cast``): the fork server takes ctypes out of
  ``sys.modules`` and puts a placeholder that refuses every use where a loaded module held
  ctypes or one of its functions (``remove_ctypes``), and a worker refuses to import it
  (``NotImportable``). What is left — ctypes' types that other modules may hold — raises
  ``ctypes.*`` audit events (``from_address``, ``dlopen``…), which a serving worker refuses
  (audit.forbid_introspection; calling a ctypes function raises none, hence the removal).
  No exercise needs ctypes; the grader's own modules keep theirs (a worker confines itself
  with it).
- **numpy's view over an address** (``DummyArray``, the ``__array_interface__`` holder that
  ``as_strided`` builds): replaced by one that refuses an interface whose bytes lie outside
  the memory of the array it views (``bound_numpy_views``). ``as_strided`` inside its array,
  sliding windows included, works as before.
- A class of the exercise's own that exposes ``__array_interface__`` or ``__array_struct__``:
  the rule scan denies those names in rule-checked files (testing/source/rules.py).

- **/proc/<pid>/mem** (blind red-team tester R-O read the worker's memory at ``id()``
  addresses through it): Landlock no longer grants the worker its own /proc folder (what the
  worker reads there, it reads before Landlock: worker.confine), and where there is no
  Landlock a serving worker refuses to open a process's memory files (``mem``, ``pagemap``,
  ``map_files``) or a folder whose descriptor would open them by a relative name (``/``,
  ``/proc``, a process's /proc folder: ``is_process_memory_path``, audit event ``open``).

Not covered: an object whose ``__array_interface__`` numpy finds through a name built at run
time (``SimpleNamespace(**{computed: …})``) or a ``__getattr__`` in a file the scan passed:
numpy has no hook to refuse it (SECURITY.md, "What is not defended").
Written here: no library removes these capabilities inside a process.
"""

from __future__ import annotations

import importlib
import math
import os
import pathlib
import sys
from typing import Any

#: where numpy keeps the holder ``as_strided`` builds (2.x, and the public re-export)
STRIDE_TRICKS_MODULES = ("numpy.lib._stride_tricks_impl", "numpy.lib.stride_tricks")


#: the modules a worker refuses to import (and the fork server takes out of ``sys.modules``)
CTYPES_MODULES = ("ctypes", "_ctypes")
MESSAGE = "ctypes is not available to exercise code (it reaches raw memory)"
#: what a loaded module may call ctypes, or one of its functions, by (checked by identity;
#: tests/grader/test_sandbox.py compares these with a walk of every name of every module)
HOLDER_NAMES = (
    "ctypes", "_ctypes", "pointer", "POINTER", "byref", "cast", "addressof", "sizeof", "alignment", "resize",
    "memmove", "memset", "string_at", "wstring_at", "CFUNCTYPE", "PYFUNCTYPE", "SetPointerType", "ARRAY",
    "create_string_buffer", "create_unicode_buffer", "c_buffer", "get_errno", "set_errno", "dlopen",
    "pythonapi", "cdll", "pydll", "CDLL", "PyDLL",
)  # fmt: skip


def is_ctypes_event(event: str) -> bool:
    return event.startswith("ctypes.")


#: a process's files under /proc that show its memory (``map_files`` is a folder of them)
PROC_MEMORY_FILES = frozenset({"mem", "pagemap", "map_files"})


#: the standard library's own path classes, whose ``__fspath__`` is theirs
_PATHLIB_TYPES = (pathlib.PurePosixPath, pathlib.PosixPath, pathlib.PureWindowsPath, pathlib.WindowsPath)


def is_process_memory_path(path: Any) -> bool:
    """Whether ``path`` (an ``open`` audit event's: str, bytes or path-like; a descriptor is
    never one) names a process's memory under /proc — ``mem``, ``pagemap``, ``map_files`` of a
    process or thread, followed through links (/proc/self, /proc/<pid>/root, a link in the
    scratch folder) — or a folder whose descriptor opens those by a relative name (``dir_fd``,
    which the event does not show): ``/``, ``/proc``, a process's or thread's /proc folder and
    its ``task`` folder."""
    if type(path) is int:
        return False
    kind = type(path)  # compared by identity: `in` would ask a metaclass of the exercise's its __eq__
    if not (kind is str or kind is bytes):
        if not any(kind is known for known in _PATHLIB_TYPES):
            # a path-like of the exercise's own: its __fspath__ is its code, and may answer this
            # check otherwise than the open it was already asked for (blind red-team tester R-DK's
            # family of attacks): refused as if it named a process's memory
            return True
        path = os.fspath(path)
    try:
        real = os.path.realpath(os.fsdecode(path))
    except (TypeError, ValueError, OSError):
        return False
    if real in ("/", "/proc", "/proc/kcore", "/dev/mem", "/dev/kmem"):
        return True
    parts = real.split("/")[1:]
    if len(parts) < 2 or parts[0] != "proc" or not parts[1].isdigit():
        return False
    rest = parts[2:]
    if rest == ["task"]:
        return True
    if len(rest) >= 2 and rest[0] == "task" and rest[1].isdigit():
        rest = rest[2:]
    return not rest or rest[0] in PROC_MEMORY_FILES


def is_ctypes_module(name: str) -> bool:
    return name in CTYPES_MODULES or name.startswith("ctypes.")


class _NotAvailable:
    """What stands where a module held ctypes or one of its functions."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(MESSAGE)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(MESSAGE)

    def __repr__(self) -> str:
        return "<ctypes: not available in the grader's worker>"


NOT_AVAILABLE = _NotAvailable()


def ctypes_objects() -> set[int]:
    """ids of the loaded ctypes modules and of the functions and libraries they hold."""
    modules = [m for name, m in sys.modules.items() if m is not None and is_ctypes_module(name)]
    found = {id(m) for m in modules}
    for module in modules:
        for value in vars(module).values():
            origin = getattr(value, "__module__", None)
            if origin is not None and not is_ctypes_module(str(origin)):
                continue  # another module's, imported by ctypes (struct.calcsize)
            if (callable(value) and not isinstance(value, type)) or type(value).__name__ in ("CDLL", "PyDLL", "LibraryLoader"):
                found.add(id(value))
    return found


def remove_ctypes(keep: tuple[str, ...], every_name: bool = False) -> int:
    """Take ctypes out of ``sys.modules`` and out of every loaded module but those under the
    prefixes ``keep`` (the grader's, which confines workers with it); how many names were
    replaced. Once per fork server, before its first worker (zygote.py); again only if
    something imported ctypes since. ``HOLDER_NAMES`` are the names torch's and numpy's own
    import uses (tests/grader/test_sandbox.py walks every name); ``every_name`` checks each
    name of each module instead (~7 ms more), for after the fork server made a module of
    ``libraries.WARMED_TORCH_MODULES``: torch._dynamo loads ``torch._inductor.cpp_builder``,
    which holds ``ctypes.wintypes`` (and through it ctypes itself) and ``find_library``."""
    found = ctypes_objects()
    replaced = 0
    for name, module in list(sys.modules.items()):
        if module is None or is_ctypes_module(name) or name.startswith(keep):
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attribute in list(namespace) if every_name else HOLDER_NAMES:
            if id(namespace.get(attribute)) in found:
                namespace[attribute] = NOT_AVAILABLE
                replaced += 1
    for name in [n for n in sys.modules if is_ctypes_module(n)]:
        del sys.modules[name]
    return replaced


class NotImportable:
    """On a worker's ``sys.meta_path``: ``import ctypes`` (or ``_ctypes``) fails."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if is_ctypes_module(name):
            raise ModuleNotFoundError(f"No module named {name!r}: {MESSAGE}", name=name)
        return None


def _extent(interface: dict) -> tuple[int, int] | None:
    """[first byte, end) an ``__array_interface__`` covers; None when it covers no byte."""
    import numpy as np

    start = int(interface["data"][0])
    shape = tuple(int(n) for n in interface.get("shape", ()))
    if any(n == 0 for n in shape):
        return None
    itemsize = np.dtype(interface["typestr"]).itemsize  # a structured dtype's too ("|V16")
    strides = interface.get("strides")
    if strides is None:
        return start, start + math.prod(shape) * itemsize
    low = start + sum(min(0, (n - 1) * int(s)) for n, s in zip(shape, strides))
    high = start + sum(max(0, (n - 1) * int(s)) for n, s in zip(shape, strides)) + itemsize
    return low, high


def _owned_bytes(base: Any) -> tuple[int, int] | None:
    """[first byte, end) of the memory that ``base`` (an ndarray) may view: its root array's,
    or the torch storage behind an array made by ``Tensor.numpy()``."""
    import numpy as np

    array = base
    while isinstance(array, np.ndarray) and isinstance(array.base, np.ndarray):
        array = array.base
    if not isinstance(array, np.ndarray):
        return None
    owner: Any = array.base
    torch = sys.modules.get("torch")
    if torch is not None and type(owner) is torch.Tensor:
        storage = owner.untyped_storage()
        return storage.data_ptr(), storage.data_ptr() + storage.nbytes()
    return _extent(array.__array_interface__) or (0, 0)


class _BoundedArrayHolder:
    """numpy's ``DummyArray``, refusing an interface outside its base array's memory."""

    def __init__(self, interface: dict, base: Any = None) -> None:
        wanted = _extent(interface)
        allowed = _owned_bytes(base)
        if wanted is not None and (allowed is None or not (allowed[0] <= wanted[0] and wanted[1] <= allowed[1])):
            raise ValueError("as_strided: the view reaches outside the memory of the array it views (not in the grader's worker)")
        self.__array_interface__ = interface
        self.base = base


def bound_numpy_views() -> int:
    """Replace numpy's ``DummyArray`` where it is loaded (a worker's numpy is torch's, imported
    before any exercise code); how many modules had it."""
    try:
        importlib.import_module("numpy.lib.stride_tricks")  # torch imported numpy, which loaded it
    except ImportError:
        return 0

    replaced = 0
    for name in STRIDE_TRICKS_MODULES:
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "DummyArray"):
            vars(module)["DummyArray"] = _BoundedArrayHolder
            replaced += 1
    return replaced
