"""Measure the tolerance table: reference in float32 vs reference in float64.

For every graded operation, draw inputs in float64 from many seeds (the same shapes and
magnitudes the hidden suites use, including scores of magnitude 1e4 for the softmaxes),
run the reference solution on the float64 inputs and on the same inputs rounded to
float32, and record the worst absolute and relative error. The table gets 10× those:

    atol = 10 × max |ref32 − ref64|
    rtol = 10 × max |ref32 − ref64| / |ref64|   over the entries with |ref64| at or above
                                               the output's median magnitude (smaller ones
                                               are covered by atol; their relative error
                                               measures cancellation, not precision)

float64 rows are the float32 ones scaled by eps(float64)/eps(float32), floored at 1e-12
absolute. Writes tests/suites/course/tolerances.toml; run it again after changing a
reference solution or the input distributions.

    .venv/bin/python tests/benchmarks/measure_tolerances.py [--seeds 200]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import tomllib
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/suites/course/tolerances.toml"
EPS_RATIO = torch.finfo(torch.float64).eps / torch.finfo(torch.float32).eps


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"_ref_{name}", ROOT / "solutions" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases() -> dict:
    """op name → seeded input maker, gathered from tests/benchmarks/tolerance_cases/<skill>.py.
    A maker takes a torch.Generator and returns (fn, float64 args)."""
    out = {}
    for path in sorted((ROOT / "tests/benchmarks/tolerance_cases").glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"_cases_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out.update(module.cases(load))
    return out


def measure(make, seeds: int) -> tuple[float, float]:
    worst_abs = worst_rel = 0.0
    for seed in range(seeds):
        g = torch.Generator().manual_seed(seed)
        fn, args64 = make(g)
        with torch.no_grad():
            ref64 = fn(*args64)
            ref32 = fn(*(a.to(torch.float32) if a.is_floating_point() else a for a in args64)).to(torch.float64)
        finite = torch.isfinite(ref64)
        diff = (ref32 - ref64)[finite].abs()
        if diff.numel():
            worst_abs = max(worst_abs, float(diff.max()))
            mags = ref64[finite].abs()
            big = (mags >= mags.median()) & (mags > 0)
            if bool(big.any()):
                worst_rel = max(worst_rel, float((diff[big] / ref64[finite][big].abs()).max()))
    return worst_abs, worst_rel


def nice(value: float) -> float:
    """Round up to 1 significant digit, so the table stays readable."""
    if value <= 0:
        return 0.0
    exp = math.floor(math.log10(value))
    return math.ceil(value / 10**exp) * 10**exp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--only", default=None, help="measure one op (prefix match) and print, without writing")
    parser.add_argument("--skill", action="append", default=None, help="only this skill's ops (repeatable)")
    parser.add_argument("--out", type=Path, default=OUT, help=argparse.SUPPRESS)  # the tests write a copy
    args = parser.parse_args(argv)
    rows = []
    for op, make in cases().items():
        if args.only and not op.startswith(args.only):
            continue
        if args.skill and op.split(".")[0] not in args.skill:
            continue
        worst_abs, worst_rel = measure(make, args.seeds)
        f32 = (nice(10 * max(worst_rel, 1e-7)), nice(10 * max(worst_abs, 1e-7)))
        f64 = (nice(max(f32[0] * EPS_RATIO, 1e-12)), nice(max(f32[1] * EPS_RATIO, 1e-12)))
        rows.append((op, worst_abs, worst_rel, f32, f64))
        print(
            f"{op:38s} worst abs {worst_abs:.2e} rel {worst_rel:.2e} → f32 rtol {f32[0]:.0e} atol {f32[1]:.0e}", file=sys.stderr
        )
    if args.only:
        return
    header = "\n".join(
        [
            "# Measured by tests/benchmarks/measure_tolerances.py — do not edit by hand.",
            f"# {args.seeds} seeds per op; tolerance = 10 × worst float32-vs-float64 error of the reference;",
            "# float64 = float32 × eps64/eps32 (floor 1e-12).",
            "",
        ]
    )
    blocks = _blocks(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    measured = {op: _row(op, worst_abs, worst_rel, f32, f64) for op, worst_abs, worst_rel, f32, f64 in rows}
    kept = {} if args.skill is None else {op: b for op, b in blocks.items() if op.split(".")[0] not in args.skill}
    for op, row in measured.items():
        # an op whose tolerances did not change keeps its bytes (its worst errors are another
        # CPU's noise): rerunning, or running on another machine, rewrites nothing
        kept[op] = blocks[op] if op in blocks and _tolerances(blocks[op]) == _tolerances(row) else row
    order = [op for op in blocks if op in kept] + [op for op in kept if op not in blocks]
    text = header + "\n" + "\n\n".join(kept[op].rstrip("\n") for op in order) + "\n"
    if args.out.is_file() and args.out.read_text(encoding="utf-8") == text:
        print(f"{args.out}: unchanged", file=sys.stderr)
        return
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


def _row(op: str, worst_abs: float, worst_rel: float, f32: tuple, f64: tuple) -> str:
    return "\n".join(
        [
            f'[op."{op}"]',
            f"worst_abs_float32 = {worst_abs:.3e}",
            f"worst_rel_float32 = {worst_rel:.3e}",
            f"float32 = {{ rtol = {f32[0]:.0e}, atol = {f32[1]:.0e} }}",
            f"float64 = {{ rtol = {f64[0]:.0e}, atol = {f64[1]:.0e} }}",
        ]
    )


def _blocks(text: str) -> dict[str, str]:
    """The table's rows as written: {op: its lines, the blank line after included}."""
    out: dict[str, str] = {}
    for chunk in text.split('[op."')[1:]:
        op = chunk.split('"]', 1)[0]
        out[op] = '[op."' + chunk
    return out


def _tolerances(block: str) -> dict:
    return {k: v for k, v in tomllib.loads(block)["op"].popitem()[1].items() if k in ("float32", "float64")}


if __name__ == "__main__":
    main()
