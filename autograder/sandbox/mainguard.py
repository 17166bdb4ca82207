"""A submission's files run in a worker without the bodies of their main guards.

The rule scan does not judge what is under ``if __name__ == "__main__":`` where the block
cannot run (a student's self-test may import doctest or matplotlib and compare with torch's
own softmax: testing/source/tree.main_guard_runs). Blind red-team tester R-AC made such a
block run all the same: ``enum``'s ``_convert_`` wrote the module's ``__name__`` by a string,
as an enum whose ``__eq__`` said yes to ``"__main__"``; the unscanned body then took the
recording through torch's wrappers and imported a copy of ``torch/nn/functional.py`` from the
scratch folder (custom_backward and mha_reshape, full points). So what the scan does not read
is not compiled at all: a worker compiles every file of the submission — the exercise modules
(``compiled``, in the fork server) and the helpers they import (``SubmissionFinder``, first on
``sys.meta_path``) — with each top-level main guard's body replaced by ``pass``, and the code
gate runs a submission file's module code only if it is one of these (``COMPILED``): a file
compiled some other way (the default loader, with its guard) never runs where a rule is judged.
Written here: no library compiles a module without part of it.
"""

from __future__ import annotations

import ast
import types
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from types import CodeType

#: every module code object compiled here (code objects compare by their contents)
COMPILED: set[CodeType] = set()


def is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``, either way round: the scan (testing/source/tree.py) reads
    a guard with this very function, so what it leaves unread is what the worker leaves out."""
    test = node.test if isinstance(node, ast.If) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    return any(
        isinstance(name, ast.Name) and name.id == "__name__" and isinstance(main, ast.Constant) and main.value == "__main__"
        for name, main in (sides, sides[::-1])
    )


def compiled(source: bytes | str, path: str) -> CodeType:
    """``source`` compiled as the module at ``path``, its top-level main guards' bodies
    ``pass`` (their tests and ``else`` branches kept); SyntaxError as ``compile`` raises it."""
    raw = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    if raw.isascii() and b"__name__" not in raw:
        # no main guard can be written without the name (an identifier in other characters
        # is NFKC-normalised: only an all-ASCII text is sure to hold none): compile it as it is,
        # ~8x faster than through the tree
        code = compile(source, path, "exec", dont_inherit=True)
    else:
        tree = ast.parse(source, filename=path)
        for node in tree.body:
            if isinstance(node, ast.If) and is_main_guard(node):
                node.body = [ast.copy_location(ast.Pass(), node.body[0])]
        code = compile(tree, path, "exec", dont_inherit=True)
    COMPILED.add(code)
    return code


class SubmissionLoader(SourceFileLoader):
    """The loader of a submission's file: compiled by ``compiled``, never from a cache."""

    def get_code(self, fullname: str) -> CodeType:
        return compiled(self.get_data(self.path), self.path)


class SubmissionFinder:
    """First on ``sys.meta_path``: a module found in the submission's folder gets
    ``SubmissionLoader``; for any other, None (Python's own finders go on)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder.rstrip("/") + "/"

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        spec = PathFinder.find_spec(name, path)  # type: ignore[arg-type]
        origin = spec.origin if spec is not None else None
        if spec is None or not origin or not origin.startswith(self.folder) or not origin.endswith(".py"):
            return None  # Python's own finders, in their order (builtin, frozen, path)
        spec.loader = SubmissionLoader(name, origin)
        return spec

    def invalidate_caches(self) -> None:
        PathFinder.invalidate_caches()


def plain_module(module: types.ModuleType) -> types.ModuleType:
    """An exercise module as Python made it: a file that swapped its own class
    (``sys.modules[__name__].__class__ = Sub``, or an import of itself) turned every name the
    grader looks up into a property, which handed out a fresh function per call whose
    finalizer ran after the recorded window and filled the returned tensors with autograd's
    gradients (blind red-team tester R-AR: custom_backward 8.5/8.5, row_softmax 6.25/6.25)."""
    if type(module) is not types.ModuleType:
        raise TypeError(
            "the exercise module replaced its own class (module.__class__ = …): the grader reads "
            "its functions from the module as Python made it"
        )
    return module
