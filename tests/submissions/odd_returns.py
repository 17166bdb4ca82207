"""Submissions whose functions return odd values: the wrong kind of thing, a number no float
holds, a tensor of a dtype or shape no caller expects. Each must fail its checks as the
student's answer and never end a test as a "grader error (not your fault)": a suite that
indexes, subtracts or ``float()``s a returned value before checking its type, shape and
dtype breaks there (blind red-team tester O found four such values).

Built from solutions/ by rewriting each public function and method (``__init__`` and
``_private`` helpers stay the reference's, so classes still build) to return an odd value
made from its arguments. Submission ``i`` gives function ``j`` the value
``ODD[(i + j) % len(ODD)]``, beside functions that return others (a test that checks two
functions meets mixed kinds); ``build_sweep`` gives one function one value at a time, so
the checks behind a skill's first call are reached too.

Used by tests/grader/test_odd_returns.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOLUTIONS = HERE.parents[1] / "solutions"

# name → expression; ``_first(args)`` is the call's first tensor argument (a [2,3] tensor of
# ones when it has none), so the odd tensors have a plausible size
ODD: dict[str, str] = {
    "none": "None",
    "int_beyond_float": "2**2000",
    "int_beyond_str": "10**5000",
    "pair_of_ints": "(0, 0)",
    "text": "'text'",
    "nan": "float('nan')",
    "inf": "float('inf')",
    "true": "True",
    "nested_list": "[[0.1]]",
    "list_of_tensors": "[_first(args), _first(args)]",
    "three_tensors": "(_first(args), _first(args), _first(args))",
    "nested_tuple": "((_first(args),),)",
    "dict": "{'a': _first(args)}",
    "bool_tensor": "_first(args).bool()",
    "long_tensor": "_first(args).long()",
    "huge_long_tensor": "torch.full_like(_first(args), 2**62, dtype=torch.int64)",
    "complex_tensor": "_first(args).to(torch.complex64)",
    "half_tensor": "_first(args).half()",
    "double_tensor": "_first(args).double()",
    "flattened": "_first(args).flatten()",
    "first_column": "_first(args)[..., :1]",
    "empty_last_axis": "_first(args)[..., :0]",
    "extra_axis": "_first(args).unsqueeze(0)",
    "transposed": "_first(args).transpose(-1, -2)",
    "zero_dim": "_first(args).sum()",
    "zero_dim_long": "torch.tensor(3)",
    "nan_tensor": "torch.full_like(_first(args), float('nan'))",
    "numpy_array": "_first(args).numpy()",
    "size": "_first(args).shape",
    "dtype": "_first(args).dtype",
    "generator": "(x for x in range(3))",
    "function": "(lambda: 0)",
    "module": "torch.nn.Linear(2, 2)",
    "ellipsis": "...",
    "bytes": "b'\\x00\\xff'",
    "set": "{1, 2}",
    "object": "object()",
    "parameter": "torch.nn.Parameter(_first(args).float())",
    "requires_grad": "_first(args).float().requires_grad_()",
}

_HELPER = '''

def _first(args):
    """The call's first tensor argument, detached (a [2,3] tensor of ones when it has none)."""
    for a in args:
        for b in a if isinstance(a, (tuple, list)) else (a,):
            if isinstance(b, torch.Tensor):
                return b.detach()
    return torch.ones(2, 3)
'''


class _ReturnOdd(ast.NodeTransformer):
    def __init__(self, pick, only: str | None = None) -> None:
        self.pick = pick  # public function's index → expression
        self.only = only  # rewrite this one function or method ("Class.method") alone
        self.index = 0
        self.classes: list[str] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        self.classes.append(node.name)
        self.generic_visit(node)
        self.classes.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        if node.name.startswith("_") or (self.only and ".".join([*self.classes, node.name]) != self.only):
            return node
        names = [a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs] if a.arg not in ("self", "cls")]
        tuple_text = ", ".join(names) + ("," if names else "")
        node.body = ast.parse(f"args = ({tuple_text})\nreturn {self.pick(self.index)}").body
        self.index += 1
        return node


def source(module: Path, offset: int, only: str | None = None) -> str:
    """``module`` with its ``j``-th public function returning ``ODD[(offset + j) % len]``
    (with ``only``, that one function returning ``ODD[offset]``, the rest the reference)."""
    values = list(ODD.values())
    rewrite = _ReturnOdd(lambda j: values[(offset + j) % len(values)], only)
    text = ast.unparse(rewrite.visit(ast.parse(module.read_text(encoding="utf-8"))))
    if "import torch" not in text:
        raise ValueError(f"{module}: the odd values need `import torch` at the module's top")
    return text + "\n" + _HELPER


#: the class test_odd_returns grades: every third offset, so each function returns a third
#: of the values and every value is returned by a third of the functions (~10 s of a batch);
#: the sweep (``make check``) gives every function every value
CLASS_STEP = 3


def names(step: int = CLASS_STEP) -> list[str]:
    """The class's folder names: offsets 0, step, 2·step, … of ``ODD``."""
    return [f"odd{offset:02d}_{name}" for offset, name in enumerate(ODD) if offset % step == 0]


def build(folder: Path, step: int = CLASS_STEP) -> None:
    """The class under ``folder``: submission ``odd<i>_<name>`` gives the ``j``-th public
    function ``ODD[(i + j) % len]``."""
    for name in names(step):
        offset = int(name[3:5])
        sub = folder / name
        sub.mkdir(parents=True)
        for module in sorted(SOLUTIONS.glob("*.py")):
            (sub / module.name).write_text(source(module, offset), encoding="utf-8")


def public_functions(module: Path) -> list[str]:
    """The module's public functions and its classes' public methods ("Class.method")."""
    found = []
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef):
            found += [f"{node.name}.{m.name}" for m in node.body if isinstance(m, ast.FunctionDef) and not m.name.startswith("_")]
    return found


def build_sweep(folder: Path, module: Path) -> None:
    """One submission per (public function of ``module``, odd value): that function alone
    returns the value, so the checks behind the module's other functions are reached too
    (a test that fails on its first call never meets the odd value of its third)."""
    for function in public_functions(module):
        for offset, name in enumerate(ODD):
            sub = folder / f"{function.replace('.', '_')}__{name}"
            sub.mkdir(parents=True)
            (sub / module.name).write_text(source(module, offset, only=function), encoding="utf-8")


def sweep(jobs: int, seed: int, skills: list[str]) -> int:
    """Grade every (function, odd value) pair of each skill, one batch a skill, and list
    each test that ended as a grader error or an error, and each run that did not complete.
    Exit status 1 when there is one."""
    import json
    import subprocess
    import sys
    import tempfile
    import tomllib

    config = tomllib.loads((SOLUTIONS.parent / "grading.toml").read_text(encoding="utf-8"))
    modules = {sid: skill["module"] for sid, skill in config["skills"].items()}
    found = []
    with tempfile.TemporaryDirectory(prefix="odd-returns-") as tmp:
        for skill in skills or list(modules):
            subs, out = Path(tmp) / skill, Path(tmp) / f"{skill}-out"
            build_sweep(subs, SOLUTIONS / modules[skill])
            cmd = [sys.executable, "-m", "autograder", "batch", str(subs), "--out", str(out), "--skill", skill]
            cmd += ["--seed", str(seed), "--jobs", str(jobs), "--no-progress"]
            proc = subprocess.run(cmd, cwd=SOLUTIONS.parent, capture_output=True, text=True)
            if proc.returncode != 0:
                found.append(f"{skill}: the batch exited {proc.returncode}: {proc.stderr[-500:]}")
                continue
            count = 0
            for results in sorted(out.glob("*/results.json")):
                data = json.loads(results.read_text(encoding="utf-8"))
                count += 1
                if data.get("status") != "complete":
                    found.append(f"{results.parent.name}: run {data.get('status')}: {data.get('message', '')[:120]}")
                for test in (t for s in data.get("skills", []) for t in s["tests"]):
                    if test["status"] == "error" or (test.get("summary") or "").startswith("grader error"):
                        found.append(f"{results.parent.name}: {test['id']}")
            print(f"{skill}: {count} submissions graded", flush=True)
    for line in found:
        print(line)
    print(f"{len(found)} tests or runs ended as the grader's error" if found else "no odd value made a grader error")
    return 1 if found else 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Every function of solutions/ returning every odd value, graded.")
    parser.add_argument("--skill", action="append", default=[], help="only this skill (repeatable)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    raise SystemExit(sweep(args.jobs, args.seed, args.skill))
