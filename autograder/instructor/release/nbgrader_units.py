"""The grader's scoring units, as the nbgrader course scores them (instructors only).

    python -m autograder.instructor.release.nbgrader_units [SKILL ...]          # rewrite (~1 minute a skill)
    python -m autograder.instructor.release.nbgrader_units --check [SKILL ...]  # exit 1 if one is stale

The grader scores each test of grading.toml as ``weight × passed kinds / kinds`` (a failed
*required* kind scores the test 0; ``autograder/testing/credit.py``). nbgrader cannot run
those tests (they need the sandbox and pytest), so the nbgrader course gives every grader
test its own test cell with the same points and the same rule, and decides each kind from
the notebook's checks of the functions that kind calls: a kind passes when every function
it uses passes its checks cell.

Which functions a kind uses is *measured*, not guessed: for each exercise function ``f``
the grader grades the reference with ``f`` broken — it raises whenever something outside
its module calls it (the module's own calls still work, so ``masked_softmax`` calling
``apply_mask`` is not counted as a use of ``apply_mask``: a student's ``masked_softmax``
may not call it) — and the kinds that fail are the kinds that use ``f``. A test that fails
before its kinds run (a check outside the credit loop) needs ``f`` as a whole; kinds that no
single broken function fails are kept, with no uses (they always pass in nbgrader).

Each skill's ``nbgrader_units.json``, beside its suites (``tests/suites/<skill>/``), holds
the result per test: weight, visibility, kinds (label, uses) and required kinds. It is data
derived from the suites: rerun this module when a suite's kinds change (``--check`` says
whether it has to); give skills to measure only those.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ...config import Config, load
from . import nbgrader_checks

REPO = Path(__file__).resolve().parents[3]
WHOLE = "the whole test"  # the one kind of a test without a credit loop
_REQUIRED = re.compile(r"^0 points: the required part '(.+?)' failed")

HELPER = """

# --- nbgrader_units: the functions below are wrong whenever code outside this module uses them
import torch as _nbu_torch


def _nbu_wrong(value):
    if value is None:
        return None
    if isinstance(value, _nbu_torch.Tensor):
        if value.dtype == _nbu_torch.bool:
            return ~value
        return value * float("nan") if value.is_floating_point() else value + 1
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return float("nan")
    if isinstance(value, (tuple, list)):
        return type(value)(_nbu_wrong(v) for v in value)
    raise RuntimeError("broken on purpose (nbgrader_units)")
"""

#: the public name, rebound to a wrong version of the real one (renamed, so the module's own calls still reach it)
BROKEN = {
    ("wrong", "def"): "def {name}(*args, **kwargs):\n    return _nbu_wrong({real}(*args, **kwargs))\n",
    ("raises", "def"): "def {name}(*args, **kwargs):\n    raise RuntimeError('broken on purpose (nbgrader_units)')\n",
    (
        "wrong",
        "module",
    ): (
        "class {name}({real}):\n    def forward(self, *args, **kwargs):\n"
        "        return _nbu_wrong(super().forward(*args, **kwargs))\n"
    ),
    (
        "raises",
        "module",
    ): (
        "class {name}({real}):\n    def forward(self, *args, **kwargs):\n"
        "        raise RuntimeError('broken on purpose (nbgrader_units)')\n"
    ),
    ("wrong", "function"): (
        "class {name}({real}):\n    @staticmethod\n    def forward(ctx, *args):\n"
        "        return _nbu_wrong({real}.forward(ctx, *args))\n\n"
        "    @staticmethod\n    def backward(ctx, *grads):\n        return _nbu_wrong({real}.backward(ctx, *grads))\n"
    ),
    ("raises", "function"): (
        "class {name}({real}):\n    @staticmethod\n    def forward(ctx, *args):\n"
        "        raise RuntimeError('broken on purpose (nbgrader_units)')\n\n"
        "    @staticmethod\n    def backward(ctx, *grads):\n        raise RuntimeError('broken on purpose (nbgrader_units)')\n"
    ),
}


def broken_source(source: str, names: list[str], mode: str) -> str:
    """``source`` with each of ``names`` renamed (definition and every use inside the module)
    and its public name bound to a wrong version: NaN, negated or off-by-one results
    (``wrong``), or a RuntimeError (``raises``). Written without frames or dunder access,
    which the exercises' source rules forbid."""
    import ast

    tree = ast.parse(source)
    kinds = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            bases = {ast.unparse(b) for b in node.bases} if isinstance(node, ast.ClassDef) else set()
            kinds[node.name] = (
                "def" if isinstance(node, ast.FunctionDef) else "function" if any("Function" in b for b in bases) else "module"
            )
            node.name = f"_nbu_real_{node.name}"
        elif isinstance(node, ast.Name) and node.id in names:
            node.id = f"_nbu_real_{node.id}"
    patch = "".join("\n\n" + BROKEN[(mode, kinds[n])].format(name=n, real=f"_nbu_real_{n}") for n in names)
    return ast.unparse(tree) + HELPER + patch


MODES = {"wrong": "its results are NaN, negated or off by one", "raises": "it raises"}


def _kind(label: str) -> str:
    """The kind of a credit label: ``"fill −∞ · draw 2"`` → ``"fill −∞"``, ``"case 3"`` → ``"cases"``."""
    label = re.sub(r" · draw \d+$", "", label)
    return "cases" if re.fullmatch(r"case \d+", label) else label


def _grade(folder: Path, skill: str, config_path: Path, seed: int) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(folder),
        "--skill",
        skill,
        "--format",
        "json",
        "--no-progress",
        "--reveal-hidden",
        "--seed",
        str(seed),
        "--config",
        str(config_path),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900, env=env, check=False)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise RuntimeError(f"grading {folder} failed (exit {proc.returncode}): {proc.stderr[-2000:]}") from None
    return {t["name"]: t for s in data["skills"] if s["id"] == skill for t in s["tests"]}


def _submission(config: Config, folder: Path, skill_id: str, broken: list[str], mode: str) -> Path:
    folder.mkdir(parents=True)
    for skill in config.skills.values():
        shutil.copyfile(config.solutions_dir / skill.module, folder / skill.module)
    module = folder / config.skills[skill_id].module
    if broken:
        module.write_text(broken_source(module.read_text(encoding="utf-8"), broken, mode), encoding="utf-8")
    return folder


def derive(config: Config, config_path: Path, seed: int = 1, log=print, skills: list[str] | None = None) -> dict:
    """Grade the reference with each function broken in turn, both ways; the units of every skill."""
    from concurrent.futures import ThreadPoolExecutor

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="nbgrader-units-") as tmp, ThreadPoolExecutor(2) as pool:
        work = Path(tmp)
        for skill in config.skills.values():
            if skills and skill.id not in skills:
                continue
            names = [t.name for t in nbgrader_checks.load(config, skill.id).targets]  # the functions with checks cells
            log(f"{skill.id}: the reference, then {len(names)} functions broken one by one and all at once, in two ways")
            jobs = {("reference", ""): []} | {(mode, f): [f] for mode in MODES for f in [*names, "*"]}
            futures = {
                key: pool.submit(
                    _grade,
                    _submission(
                        config,
                        work / skill.id / f"{key[0]}-{key[1] or 'none'}".replace("*", "all"),
                        skill.id,
                        names if key[1] == "*" else broken,
                        key[0] if broken else "wrong",
                    ),
                    skill.id,
                    config_path,
                    seed,
                )
                for key, broken in jobs.items()
            }
            runs = {key: f.result() for key, f in futures.items()}
            failing = [n for n, t in runs[("reference", "")].items() if t["status"] != "passed"]
            if failing:
                raise RuntimeError(f"{skill.id}: the reference fails {failing}")
            raw = {
                mode: _raw(skill, runs[("reference", "")], {f: runs[(mode, f)] for f in names}, runs[(mode, "*")])
                for mode in MODES
            }
            out[skill.id] = _units(skill, raw)
    return out


def _raw(skill, reference: dict, runs: dict[str, dict], everything: dict) -> dict:
    """Per test: the kinds each broken function fails, the required kinds, the functions that
    fail the test before its kinds run, and the grader's count of kinds."""
    out = {}
    for suite in skill.suites:
        for name, weight in suite.weights.items():
            if weight == 0:
                continue
            uses: dict[str, set[str]] = {}
            required: set[str] = set()
            whole: set[str] = set()
            for f, run in [*runs.items(), (None, everything)]:
                test = run[name]
                credit = test.get("credit")
                if test["status"] == "passed":
                    continue
                if credit is None:
                    if f is not None:
                        whole.add(f)
                    continue
                match = _REQUIRED.match(credit.get("note") or "")
                if match:
                    required.add(match.group(1))
                for label in credit.get("failed", []):
                    uses.setdefault(_kind(label), set())
                    if f is not None:
                        uses[_kind(label)].add(f)
            out[name] = {
                "uses": uses,
                "required": required,
                "whole": whole,
                "total": (reference[name].get("credit") or {}).get("total"),
            }
    return out


def _units(skill, raw: dict) -> dict:
    """A kind uses the functions whose wrong results fail it; a kind no wrong result fails (one
    that expects an error, say) uses the functions whose raising fails it."""
    units = {}
    wrong, raises = raw["wrong"], raw["raises"]
    for suite in skill.suites:
        for name, weight in suite.weights.items():
            if weight == 0:
                continue  # a rule (a gate): nbgrader does not enforce the rules (see the course README)
            w, r = wrong[name], raises[name]
            total = w["total"]

            required = sorted(w["required"] | r["required"])
            labels = list(dict.fromkeys([*w["uses"], *r["uses"]]))
            if total is None:  # no credit loop: one kind, the whole test
                kinds = [{"label": WHOLE, "uses": sorted(w["whole"] or r["whole"])}]
                required_kinds: list = []
            else:
                counted = [k for k in labels if k not in required]
                if len(counted) > total:
                    raise RuntimeError(f"{skill.id}.{name}: {len(counted)} kinds seen ({counted}) but the grader counts {total}")
                kinds = [{"label": k, "uses": sorted(_pick(w, r, k))} for k in counted]
                kinds += [
                    {"label": f"(a kind no single broken function fails, {i + 1})", "uses": sorted(w["whole"] or r["whole"])}
                    for i in range(total - len(counted))
                ]
                if len({tuple(k["uses"]) for k in kinds}) == 1:  # every kind uses the same functions: all or nothing
                    kinds = [{"label": WHOLE, "uses": kinds[0]["uses"]}]
                required_kinds = [{"label": k, "uses": sorted(_pick(w, r, k))} for k in required]
            units[name] = {"weight": weight, "visibility": suite.visibility, "kinds": kinds, "required": required_kinds}
    return units


def _pick(w: dict, r: dict, kind: str) -> set[str]:
    return set(w["uses"].get(kind) or ()) | w["whole"] or set(r["uses"].get(kind) or ()) | r["whole"]


def write(config: Config, units: dict) -> list[Path]:
    """Each measured skill's ``nbgrader_units.json``, beside its suites."""
    written = []
    for skill_id, skill_units in units.items():
        path = nbgrader_checks.units_path(config, skill_id)
        path.write_text(json.dumps(skill_units, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    config_path = REPO / "grading.toml"
    config = load(config_path)
    skills = [a for a in argv if not a.startswith("-")] or list(config.skills)
    unknown = sorted(set(skills) - set(config.skills))
    if unknown:
        print(f"nbgrader_units: no skill {unknown[0]!r} in grading.toml (skills: {', '.join(config.skills)})", file=sys.stderr)
        return 2
    units = derive(config, config_path, log=lambda m: print(m, file=sys.stderr), skills=skills)
    if "--check" in argv:
        stale = [s for s in skills if nbgrader_checks.load_units(config, s) != units[s]]
        for s in skills:
            path = nbgrader_checks.units_path(config, s)
            rerun = f"stale — rerun python -m autograder.instructor.release.nbgrader_units {s}"
            print(f"{path}: {rerun if s in stale else 'up to date'}")
        return 1 if stale else 0
    for path in write(config, units):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
