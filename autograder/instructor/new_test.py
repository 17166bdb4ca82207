"""``make new-test``: add one test (and, optionally, the named mistake it recognises) in one
command, consistently in the three places a test lives:

* the suite file ``tests/suites/<skill>/test_<skill>_{visible,hidden}.py``: a skeleton of the
  test function, to be filled in (until then it raises, so ``make check`` fails on it);
* ``grading.toml``: its weight in that suite's ``[skills.<skill>.suites.weights]`` table, taken
  from another test of the skill (``--take-from``: that weight goes down by as much) or added
  to the skill's points (``--add-points``) — the weights of a skill must add up to its points;
* ``tests/suites/<skill>/hints.toml`` (with ``--hint``): the hint's text, the lesson section it
  cites and the function whose output shows the mistake.

    python -m autograder.instructor.new_test --skill qkv --name test_scale_scores_... --hidden \\
        --weight 0.25 --take-from test_scale_scores_matches_reference \\
        --hint sqrt-precedence --function scale_scores --text "…" --section "Week 7 §8 (…)"

Every check the grader makes on a configuration still applies: the new ``grading.toml`` is
loaded (weights add up, names valid) before anything is written, and a refusal names the
file, the line or key, and the fix. The skeleton and the hint go in only when all is well.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

from ..config import ConfigError, load
from . import grading_toml

NAME = re.compile(r"test_[a-z0-9_]+")
HINT_KEY = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


class Refused(Exception):
    """A change that would leave the suites inconsistent: the message names the fix."""


def plan_grading(
    text: str, skill: str, suite_file: str, name: str, weight: float, take_from: str | None, add_points: bool
) -> str:
    """grading.toml's text with the new weight (and the one it was taken from) changed
    (``instructor/grading_toml.py``, on tomlkit: comments and layout kept)."""
    try:
        return grading_toml.add_weight(text, skill, suite_file, name, weight, take_from, add_points)
    except grading_toml.EditRefused as exc:
        raise Refused(str(exc)) from None


def skeleton(skill: str, module: str, function: str | None, name: str, hidden: bool, hint: str | None) -> str:
    fn = function or "<function>"
    mistakes = f', mistakes=lambda: {{"{skill}/{hint}": signatures.<what {fn} returns with that mistake>(...)}}' if hint else ""
    if hidden:
        body = (
            f"    for case in credit.cases(4):  # one kind: all four draws must pass\n"
            f"        with case:\n"
            f"            # draw inputs from rng; want = in_float64(ref.{module}.{fn}, ..., dtype=...)\n"
            f'            # expect.close(sub.{module}.{fn}(...), want, what="{fn}(...) (Week 7 §…)", '
            f'tol=tol("{skill}.{fn}", dtype){mistakes})\n'
            f'            raise NotImplementedError("TODO(suite): write {name} (autograder/testing/README.md, Adding a test)")\n'
        )
        args = "sub, ref, rng, credit"
    else:
        case = name.removeprefix("test_")
        snap_mistakes = ', mistakes=c["mistakes"]' if hint else ""
        body = (
            f'    c = SNAP["{case}"]  # add the case to snapshot_cases.py (mistakes too), then `make snapshots`\n'
            f'    # expect.close(sub.{module}.{fn}(...), c["want"], what="{fn}(...) (Week 7 §…)", tol=...{snap_mistakes})\n'
            f'    raise NotImplementedError("TODO(suite): write {name} (autograder/testing/README.md, Adding a test)")\n'
        )
        args = "sub, rng, credit"
    return (
        f"\n\ndef {name}({args}):\n"
        '    """TODO(suite): the property this test checks'
        f'{f" (hint {skill}/{hint} when the mistake’s output matches)" if hint else ""}."""\n'
        f"{body}"
    )


def hint_entry(key: str, text: str, section: str, function: str | None) -> str:
    entry = f"\n[{key}]\ntext = {_toml_string(text)}\nsection = {_toml_string(section)}\n"
    return entry + (f"function = {_toml_string(function)}\n" if function else "")


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add_test(
    root: Path,
    skill: str,
    name: str,
    *,
    hidden: bool,
    weight: float,
    take_from: str | None = None,
    add_points: bool = False,
    hint: str | None = None,
    function: str | None = None,
    text: str | None = None,
    section: str | None = None,
) -> list[Path]:
    """Write the three places; returns the files changed. Raises Refused (nothing written)."""
    config_path = root / "grading.toml"
    config = load(config_path)
    if skill not in config.skills:
        raise Refused(f"grading.toml: no skill {skill!r} (skills: {', '.join(config.skills)})")
    sk = config.skills[skill]
    if not NAME.fullmatch(name):
        raise Refused(f"test name {name!r}: use test_<what_it_checks> in lower case, e.g. test_scale_scores_keeps_minus_inf")
    if any(name in s.weights for s in sk.suites):
        raise Refused(f"grading.toml: skill {skill} already has a test {name}")
    if (take_from is None) == (not add_points):
        raise Refused(
            "say where the weight comes from: --take-from TEST (FROM=test_…) lowers that test's weight, "
            "--add-points (ADD_POINTS=1) raises the skill's points"
        )
    if not weight > 0:
        raise Refused(f"--weight {weight}: a test's weight is a positive number of points")
    visibility = "hidden" if hidden else "visible"
    suites = [s for s in sk.suites if s.visibility == visibility]
    if not suites:
        raise Refused(f"grading.toml: skill {skill} has no {visibility} suite")
    suite_path = root / suites[0].file
    source = suite_path.read_text(encoding="utf-8")
    if re.search(rf"^def {name}\(", source, flags=re.M):
        raise Refused(f"{suites[0].file}: already defines {name}")
    if function is not None and not re.search(
        rf"^(def|class) {re.escape(function)}\b", (config.solutions_dir / sk.module).read_text(encoding="utf-8"), flags=re.M
    ):
        raise Refused(f"solutions/{sk.module} defines no {function} (--function / FUNCTION=)")
    hints_path = config.suites_dir / skill / "hints.toml"
    if hint is not None:
        if not HINT_KEY.fullmatch(hint):
            raise Refused(f"hint key {hint!r}: lower-case words joined by '-', e.g. sqrt-precedence")
        if hint in tomllib.loads(hints_path.read_text(encoding="utf-8")):
            raise Refused(f"{hints_path.relative_to(root)}: [{hint}] exists already — name it in the test without --hint")
        texts = list(config.texts) or ["docs/EXERCISES.md"]  # [course.texts]: how the course names its lessons
        if not text or not section or not any(t in section for t in texts):
            raise Refused(
                "a hint needs --text (what went wrong and the fix) and --section citing the lesson "
                f"({' or '.join(f'{t} §…' for t in texts)})"
            )

    new_config = plan_grading(config_path.read_text(encoding="utf-8"), skill, suites[0].file, name, weight, take_from, add_points)
    trial = config_path.with_name(".grading.new-test.toml")
    trial.write_text(new_config, encoding="utf-8")
    suite_path.write_text(
        source.rstrip("\n") + "\n" + skeleton(skill, sk.module_name, function, name, hidden, hint), encoding="utf-8"
    )
    try:
        load(trial)  # every check of a real run: sums, names, keys, test functions present
    except ConfigError as exc:
        suite_path.write_text(source, encoding="utf-8")
        raise Refused(f"the change would break grading.toml: {str(exc).replace(trial.name, config_path.name)}") from None
    finally:
        trial.unlink(missing_ok=True)
    config_path.write_text(new_config, encoding="utf-8")
    changed = [config_path, suite_path]
    if hint is not None:
        hints_path.write_text(
            hints_path.read_text(encoding="utf-8").rstrip("\n") + "\n" + hint_entry(hint, text, section, function),
            encoding="utf-8",
        )
        changed.append(hints_path)
    return changed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m autograder.instructor.new_test", description=__doc__.split("\n\n")[0])
    p.add_argument("--skill", required=True)
    p.add_argument("--name", required=True, help="test_<what_it_checks>")
    p.add_argument("--hidden", action="store_true", help="add it to the hidden suite (default: the visible one)")
    p.add_argument("--weight", type=float, required=True, help="its points")
    p.add_argument("--take-from", help="the test whose weight goes down by --weight")
    p.add_argument("--add-points", action="store_true", help="raise the skill's points by --weight instead")
    p.add_argument("--hint", help="a new hint key of the skill (tests/suites/<skill>/hints.toml)")
    p.add_argument("--function", help="the exercise function whose output shows the mistake")
    p.add_argument("--text", help="the hint's text")
    p.add_argument("--section", help="the lesson section the hint cites")
    p.add_argument("--root", type=Path, default=Path.cwd())
    a = p.parse_args(argv)
    try:
        changed = add_test(
            a.root,
            a.skill,
            a.name,
            hidden=a.hidden,
            weight=a.weight,
            take_from=a.take_from,
            add_points=a.add_points,
            hint=a.hint,
            function=a.function,
            text=a.text,
            section=a.section,
        )
    except (Refused, ConfigError) as exc:
        print(f"new-test: refused: {exc}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"wrote {path.relative_to(a.root.resolve()) if path.is_relative_to(a.root.resolve()) else path}")
    print(
        f"next: write the body of {a.name} (it raises until then, so `make check` fails on it)"
        + (f"; add the mistake's output to tests/suites/{a.skill}/mistakes.py" if a.hint else "")
        + "; then `make check`"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
