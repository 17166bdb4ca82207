"""The grader's import graph, as tests/grader/test_layering.py sees it (function-level and
TYPE_CHECKING imports count): lines per layer, the package graph, its cycles, and every
import of a higher layer (issue 20).

    .venv/bin/python tests/benchmarks/import_graph.py [TREE] [--detail]

TREE (default: this checkout) is a repository root whose ``autograder/`` is measured with the
layer table of *this* checkout (modules it does not place are listed as unlayered, e.g. an
older tree's). ``--detail``: which modules make each package edge.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "grader")]

import test_layering as layering  # (tests/grader/test_layering.py, found through the sys.path entry above)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", type=Path, default=ROOT)
    parser.add_argument("--detail", action="store_true", help="the modules behind each package edge")
    args = parser.parse_args(argv)
    root = args.tree.resolve()
    modules = layering.package_modules(root)
    graph = layering.module_graph(root)
    lines = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in modules.items()}

    print(f"{root}/autograder: {len(modules)} modules, {sum(lines.values())} lines")
    print("\nlayers, bottom to top (lines, modules)")
    per_layer: dict[str | None, list[str]] = defaultdict(list)
    for m in modules:
        per_layer[layering.layer_of(m)].append(m)
    for i, layer in enumerate(layering.LAYERS):
        members = per_layer.get(layer, [])
        print(
            f"  {i} {layer:11s} {sum(lines[m] for m in members):6d} lines {len(members):3d} modules  "
            f"{', '.join(layering.LAYERS[layer])}"
        )
    if per_layer.get(None):
        print(
            f"  ? unlayered   {sum(lines[m] for m in per_layer[None]):6d} lines {len(per_layer[None]):3d} modules  "
            f"{', '.join(per_layer[None])}"
        )

    units = layering.unit_graph(graph)
    unit_lines: dict[str, int] = defaultdict(int)
    for m in modules:
        unit_lines[layering.unit_of(m)] += lines[m]
    print("\npackage graph (lines -> imports)")
    for unit in sorted(unit_lines):
        print(f"  {unit:14s} {unit_lines[unit]:6d} lines -> {sorted(units.get(unit, ()))}")

    print("\ncycles between packages:", layering.cycles(units) or "none")
    print("cycles between modules: ", layering.cycles(graph) or "none")
    upward = layering.upward_imports(graph)
    print(f"\nimports of a higher layer: {len(upward) or 'none'}")
    for src, dst in upward:
        note = layering.PENDING_UPWARD.get((src, dst))
        print(
            f"  {src} ({layering.layer_of(src)}) -> {dst} ({layering.layer_of(dst)})" + (f"  [pending: {note}]" if note else "")
        )

    if args.detail:
        print("\npackage edges, by importing module")
        detail: dict[tuple[str, str], set[str]] = defaultdict(set)
        for src, targets in graph.items():
            for dst in targets:
                if layering.unit_of(src) != layering.unit_of(dst):
                    detail[(layering.unit_of(src), layering.unit_of(dst))].add(src)
        for (a, b), srcs in sorted(detail.items()):
            print(f"  {a} -> {b}: {', '.join(sorted(srcs))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
