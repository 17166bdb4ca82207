"""``make new-test``: add one test (and, optionally, the named mistake it recognises) in one
command, consistently in the three places a test lives:

* the suite file ``tests/suites/<skill>/test_<skill>_{visible,hidden}.py``: a skeleton of the
  test function, to be filled in (until then it raises, so ``make check`` fails on it);
* ``grading.toml``: its weight in that suite's ``[skills.<skill>.suites.weights]`` table, taken
  from another test of the skill (``--take-from``: that weight goes down by as much) or added
  to the skill's points (``--add-points``) — the weights of a skill must add up to its points;
* ``tests/suites/<skill>/hints.toml`` (with ``--hint``): the hint's text, the lesson section it
  cites (resolved as the grader resolves it: a section no heading of the lesson carries is
  refused, with the sections that exist) and the function whose output shows the mistake.

    python -m autograder.instructor.new_test --skill qkv --name test_scale_scores_... --hidden \\
        --weight 0.25 --take-from test_scale_scores_matches_reference \\
        --hint sqrt-precedence --function scale_scores --text "…" --section "Week 7 §8 (…)"

Every check the grader makes on a configuration still applies: the new ``grading.toml`` is
loaded (weights add up, names valid) before anything is written, and a refusal names the
file, the line or key, and the fix. The skeleton and the hint go in only when all is well.
What is left to do by hand (the body, the mistake's output and variant, the CPU table, the
check) is printed as a numbered list (autograder/testing/README.md, "Adding a test").
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
import tomllib
from pathlib import Path

from ..config import Config, ConfigError, load
from ..core.feedback import citations
from . import grading_toml

NAME = re.compile(r"test_[a-z0-9_]+")
HINT_KEY = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
#: a line that may open a numbered section: "11. 为什么…", "2.3 反向…", "§B 实操", "A.4 构造…", "## 3. …".
#: Only to list the sections that exist in a refusal: each candidate is kept only where the
#: grader's own resolver (core/feedback/citations.py) lands on that very line.
_NUMBERED = re.compile(r"^\s*(?:#+\s*)?(?:§([0-9A-Z]+(?:\.[0-9]+)*)|([0-9]{1,2}(?:\.[0-9]+)*|[A-Z](?:\.[0-9]+)+))(?=[.、]|\s)")


class Refused(Exception):
    """A change that would leave the suites inconsistent: the message names the fix."""


def sections_of(config: Config, document: str) -> list[str]:
    """The sections of ``document`` ("Week 7") a citation can name, in the text's order: the
    numbered heading lines on which the grader's resolver lands for that number."""
    docs = config.root / "docs"
    try:
        lines = (docs / citations.texts_of(config.texts)[document]).read_text(encoding="utf-8").splitlines()
    except (KeyError, OSError, UnicodeDecodeError):
        return []
    found: list[str] = []
    for number, line in enumerate(lines, start=1):
        match = _NUMBERED.match(line)
        section = match and (match.group(1) or match.group(2))
        if not section or section in found or not citations.is_heading(line):
            continue
        places = citations.resolve(f"{document} §{section}", docs, texts=config.texts)
        if places and places[-1].line == number:
            found.append(section)
    return found


def unresolved_section(config: Config, section: str) -> str | None:
    """Why ``section`` would resolve nowhere for the grader (None: every citation in it lands on
    a line). The same resolution as a run's hints and ``make check``
    (core/feedback/citations.py; tests/grader/test_suites_are_right.py): a hint citing a
    section that does not exist would send a student nowhere and fail the check later."""
    files = citations.texts_of(config.texts)
    for place in citations.resolve(section, config.root / "docs", texts=config.texts):
        if place.resolved:
            continue
        if place.path is None:
            return (
                f"--section {section!r}: {place.document}'s text docs/{files[place.document]} is not in this repository "
                "([course.texts] of grading.toml names it) — add the file or cite another text"
            )
        existing = sections_of(config, place.document)
        top = [s for s in existing if "." not in s] or existing
        parent = place.section.split(".")[0]
        under = [s for s in existing if s.startswith(f"{parent}.")]
        listed = f"{place.document}'s sections are {', '.join(f'§{s}' for s in top)}" if top else "it has no numbered heading"
        if under and "." in place.section:
            listed += f"; under §{parent}: {', '.join(f'§{s}' for s in under)}"
        return (
            f"--section {section!r}: {place.document} ({place.path}) has no §{place.section} — no heading line opens "
            f"with it, so the hint would point nowhere and `make check` would fail on it. {listed}"
        )
    return None


def _check_donor(config: Config, skill: str, take_from: str) -> None:
    """``--take-from`` names a test of ``skill``: the refusal lists the closest names (a typo) or
    all of them, and says whose test it is when it belongs to another skill."""
    weights = {name: w for suite in config.skills[skill].suites for name, w in suite.weights.items()}
    if take_from in weights:
        return
    owner = next((sid for sid, sk in config.skills.items() for s in sk.suites if take_from in s.weights), None)
    why = (
        f" (it is skill {owner}'s: a skill's weights add up to its own points, so the weight comes from one of {skill}'s)"
        if owner
        else ""
    )
    close = difflib.get_close_matches(take_from, list(weights), n=3, cutoff=0.6)
    givers = ", ".join(f"{name} ({grading_toml.number(w)})" for name, w in weights.items() if w > 0)
    choices = f"did you mean {' or '.join(close)}?" if close and not owner else f"its tests with points to give: {givers}"
    raise Refused(
        f"grading.toml: skill {skill} has no test {take_from} to take the weight from (--take-from / FROM=){why}; {choices}"
    )


def next_steps(config: Config, skill: str, suite_file: str, name: str, hidden: bool, hint: str | None) -> list[str]:
    """What is left to do by hand after the scaffold, in order (autograder/testing/README.md,
    "Adding a test"): the tool writes the three places, not the test's meaning."""
    suites = _shown(config.suites_dir, config.root)
    steps = []
    if hint is not None:
        steps.append(
            f"write the mistake's output in {suites}/{skill}/mistakes.py (what the code with that mistake returns, "
            "from the test's inputs)"
        )
    steps.append(
        f"write the body of {name} in {suite_file} (until then it raises, so it fails in every grade of {skill})"
        + (f', with that output under "{skill}/{hint}" in its mistakes=' if hint is not None else "")
    )
    if hint is not None:
        steps.append(
            f"add its single-mistake variant to tests/submissions/mistakes/{skill}.toml (function, hint = "
            f'"{skill}/{hint}", the replaced line), so hint_precision.py measures it'
        )
    steps.append(
        f"if it checks a property (dtype, in place, errors, batch independence), add it to [skills.{skill}] properties "
        "in grading.toml: new-test cannot tell what the body checks"
    )
    if not hidden:
        steps.append(
            f"add the test's case (inputs, want, mistakes) to {suites}/{skill}/snapshot_cases.py, then "
            f"`make snapshots SKILL={skill}`"
        )
    elif hint is not None:
        steps.append(f"`make snapshots SKILL={skill}`: mistakes.py changed, and a visible snapshot stores the mistakes' outputs")
    steps.append(
        f"`make reference-cpu SKILL={skill}`: its calls may need new size classes in "
        f"{suites}/{skill}/snapshots/reference_cpu.toml (re-measuring rewrites every figure of the skill)"
    )
    steps.append(
        f"`make check-skill SKILL={skill}` (about 15 minutes on 2 cores), then compare "
        f"`python tests/benchmarks/hint_precision.py --skill {skill} --no-styles --json after.json` "
        "with the before.json kept before the change"
    )
    return steps


def _shown(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


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
            # kinds, as most suites (autograder/testing/README.md, Fixtures): each kind scores a share
            # and passes only when all its draws pass; credit.cases(n) is the all-or-nothing form
            f'    for case in credit.kinds({{"float32": 2, "float64": 2}}):  # rename the kinds to what the draws vary\n'
            f"        with case:\n"
            f"            # dtype = getattr(torch, case.kind); draw inputs from rng; "
            f"want = in_float64(ref.{module}.{fn}, ..., dtype=dtype)\n"
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
        problem = unresolved_section(config, section)
        if problem:
            raise Refused(problem)
    if take_from is not None:
        _check_donor(config, skill, take_from)

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
    # the whole docstring, as written: its first paragraph ends on "the three places a test lives:"
    p = argparse.ArgumentParser(
        prog="python -m autograder.instructor.new_test",
        description=__doc__.replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--skill", required=True, help="the skill: a [skills.<id>] of grading.toml")
    p.add_argument("--name", required=True, help="test_<what_it_checks>")
    p.add_argument("--hidden", action="store_true", help="add it to the hidden suite (default: the visible one)")
    p.add_argument("--weight", type=float, required=True, help="its points")
    p.add_argument("--take-from", help="the test whose weight goes down by --weight")
    p.add_argument("--add-points", action="store_true", help="raise the skill's points by --weight instead")
    p.add_argument("--hint", help="a new hint key of the skill (tests/suites/<skill>/hints.toml)")
    p.add_argument("--function", help="the exercise function whose output shows the mistake")
    p.add_argument("--text", help="the hint's text")
    p.add_argument(
        "--section", help='the lesson section the hint cites, e.g. "Week 7 §8 (…)": each § must be a heading of that text'
    )
    p.add_argument("--root", type=Path, default=Path.cwd(), help="the repository (default: the current folder)")
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
        print(f"wrote {_shown(path, a.root.resolve())}")
    config = load(a.root / "grading.toml")  # as written: add_test loaded it before writing
    suite = next(s for s in config.skills[a.skill].suites if a.name in s.weights)
    print("next:")
    for i, step in enumerate(next_steps(config, a.skill, suite.file, a.name, a.hidden, a.hint), start=1):
        print(f"  {i}. {step}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
