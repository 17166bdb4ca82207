"""What a batch writes for the instructors: ``gradebook.csv``, ``summary.md`` and the printed
class summary — all read back from the students' finished ``results.json`` files, so the
gradebook always agrees with what is on disk (a resumed or interrupted batch included).

- ``gradebook.csv``: one row per student found in SUBMISSIONS (also those not graded yet:
  status ``not graded``): student, sid, folder, total, max, one column per skill, status,
  seed, suite hash, message. Written by the one CSV writer (``core/escape.csv_text``):
  text cells that a spreadsheet would run as a formula get a leading ``'``.
- ``summary.md`` and the terminal: per skill the score distribution (a text histogram: the
  share of the skill's points each student earned, in six buckets), mean and median, and the
  named mistakes (hint ids from the results, counted once per student) that most students
  made — what to reteach — with the course section each hint points to; then the tests most
  students failed.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ...core import escape
from ...core.results import write_atomic
from ...renderers.common import suite_label
from .students import Student

BUCKETS = ("0", "1–24%", "25–49%", "50–74%", "75–99%", "100%")
#: the same buckets as a terminal table's headers (the title says they are shares): 80 columns
SHORT_BUCKETS = ("0", "<25", "<50", "<75", "<100", "100")
BAR = 30
TOP_TESTS = 8
#: hints that name no mistake: the function is simply not written yet (counted apart)
UNFINISHED = {"general/todo"}
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass
class Row:
    student: Student
    results: dict | None  # the student's results.json, None when not graded
    meta: dict = field(default_factory=dict)  # the student's batch.json

    @property
    def status(self) -> str:
        if self.results is None:
            return "not graded"
        return str(self.results.get("status", "error"))


def _num(value: object) -> float | str:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else ""


def skill_scores(results: dict) -> dict[str, tuple[float, float]]:
    return {str(s.get("id")): (float(s.get("score") or 0), float(s.get("points") or 0)) for s in results.get("skills") or []}


def gradebook(rows: list[Row], skills: list[str], suite_hash: str) -> str:
    """Every cell through the one CSV writer (``escape.csv_text``): text cannot be a formula."""
    out: list[list[object]] = [["student", "sid", "folder", "total", "max", *skills, "status", "seed", "suite_hash", "message"]]
    for row in rows:
        r = row.results or {}
        scores = skill_scores(r)
        out.append(
            [
                row.student.name,
                row.student.sid,
                row.student.key,
                _num(r.get("score")) if row.results else "",
                _num(r.get("max_score")) if row.results else "",
                *[_num(scores[s][0]) if s in scores else "" for s in skills],
                row.status,
                str(r.get("seed")) if r.get("seed") is not None else "",
                (row.meta.get("suite_hash") or r.get("suite_hash") or suite_hash) if row.results else "",
                escape.one_line(r.get("message") or "", 300),
            ]
        )
    return escape.csv_text(out)


def bucket(score: float, points: float) -> int:
    if points <= 0:
        return 0
    share = score / points
    if share <= 0:
        return 0
    if share >= 1 - 1e-9:
        return 5
    return 1 + min(3, int(share * 4))


@dataclass
class ClassSummary:
    graded: int
    not_graded: int
    errors: int
    skills: list[str]
    titles: dict[str, str]
    histograms: dict[str, list[int]]
    scores: dict[str, list[float]]
    points: dict[str, float]
    totals: list[float]
    max_total: float
    mistakes: list[tuple[str, int, str, str, str]]  # (hint id, students, skill, text, section)
    failed_tests: list[tuple[str, int, str]]  # (test name, students, skill)
    unfinished: int = 0  # students with at least one function still the TODO stub
    complete: list[bool] = field(default_factory=list)  # per entry of totals: the grading completed
    roster: object | None = None  # lms.Join of a batch with --roster (set by run.finish)


def summarize(rows: list[Row], skills: list[str], titles: dict[str, str]) -> ClassSummary:
    graded = [r for r in rows if r.results is not None]
    histograms = {s: [0] * len(BUCKETS) for s in skills}
    scores: dict[str, list[float]] = {s: [] for s in skills}
    points: dict[str, float] = {}
    hint_students: Counter = Counter()
    hint_info: dict[str, tuple[str, str, str]] = {}
    test_students: Counter = Counter()
    test_skill: dict[str, str] = {}
    totals = []
    max_total = 0.0
    unfinished: set[str] = set()
    for row in graded:
        r = row.results
        totals.append(float(r.get("score") or 0))
        max_total = max(max_total, float(r.get("max_score") or 0))
        seen_hints: set[str] = set()
        seen_tests: set[str] = set()
        for skill in r.get("skills") or []:
            sid = str(skill.get("id"))
            if sid not in histograms:
                continue
            score, pts = float(skill.get("score") or 0), float(skill.get("points") or 0)
            points[sid] = pts
            scores[sid].append(score)
            histograms[sid][bucket(score, pts)] += 1
            for test in skill.get("tests") or []:
                if test.get("status") in ("passed", "not_run"):
                    continue
                name = str(test.get("name", ""))
                if name not in seen_tests:
                    seen_tests.add(name)
                    test_students[name] += 1
                    test_skill[name] = sid
                for hint in test.get("hints") or []:
                    hid = str(hint.get("id", ""))
                    if hid in UNFINISHED:
                        unfinished.add(row.student.key)
                    elif hid and hid not in seen_hints:
                        seen_hints.add(hid)
                        hint_students[hid] += 1
                        hint_info.setdefault(hid, (sid, str(hint.get("text", "")), str(hint.get("section", ""))))
    # every named mistake, the course's own misconceptions first (general/* hints are generic facts: a dtype changed…)
    mistakes = [
        (hid, n, *hint_info[hid])
        for hid, n in sorted(hint_students.items(), key=lambda kv: (kv[0].startswith("general/"), -kv[1], kv[0]))
    ]
    failed = [
        (name, n, test_skill[name]) for name, n in sorted(test_students.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_TESTS]
    ]
    return ClassSummary(
        graded=len(graded),
        not_graded=len(rows) - len(graded),
        errors=sum(1 for r in graded if r.status != "complete"),
        skills=skills,
        titles=titles,
        histograms=histograms,
        scores=scores,
        points=points,
        totals=totals,
        max_total=max_total,
        mistakes=mistakes,
        failed_tests=failed,
        unfinished=len(unfinished),
        complete=[r.status == "complete" for r in graded],
    )


def total_histogram(summary: ClassSummary) -> list[int]:
    counts = [0] * len(BUCKETS)
    for total in summary.totals:
        counts[bucket(total, summary.max_total)] += 1
    return counts


def histogram_lines(counts: list[int], width: int = BAR) -> list[str]:
    top = max(counts) or 1
    return [f"{label:>7} │{'█' * round(width * n / top):<{width}} {n}" for label, n in zip(BUCKETS, counts)]


def _stats(values: list[float]) -> str:
    if not values:
        return "no students"
    return f"mean {statistics.fmean(values):.1f}, median {statistics.median(values):.1f}"


def _total_note(summary: ClassSummary) -> str:
    """What the class mean counts, said: errors and unfinished work are in it at their score."""
    parts = []
    if summary.errors:
        parts.append(f"{summary.errors} whose grading did not complete (0 points)")
    if summary.unfinished:
        parts.append(f"{summary.unfinished} with at least one function still the TODO stub")
    if not parts:
        return ""
    complete = [t for t, ok in zip(summary.totals, summary.complete) if ok]
    tail = f"; over the {len(complete)} complete gradings only: {_stats(complete)}" if complete and summary.errors else ""
    return f"Over all {len(summary.totals)} graded students, including {' and '.join(parts)}{tail}."


def markdown(
    summary: ClassSummary, *, suite_hash: str, seconds: float | None = None, seeds: str = "", visible_hash: str = ""
) -> str:
    out = ["# Batch summary", ""]
    out.append(
        f"{summary.graded} students graded"
        + (f", {summary.not_graded} not graded" if summary.not_graded else "")
        + (f", {summary.errors} whose grading did not complete (see `status` in gradebook.csv)" if summary.errors else "")
        + f". Suites: {suite_label(suite_hash, visible_hash)}."
        + (f" Graded in {seconds:.0f} s." if seconds is not None else "")
    )
    if seeds:
        out += ["", escape.md_text(seeds)]
    out += ["", f"## Total ({_stats(summary.totals)} of {summary.max_total:g})", ""]
    note = _total_note(summary)
    if note:
        out += [note, ""]
    out += ["```text"]
    out += histogram_lines(total_histogram(summary))
    out += ["```", ""]
    out += [
        "## Score distribution per skill",
        "",
        "Share of the skill's points each student earned (bars scaled to the largest bucket).",
        "",
    ]
    for sid in summary.skills:
        pts = summary.points.get(sid, 0.0)
        out += [
            f"### {escape.md_text(summary.titles.get(sid, sid))} (`{sid}`, {pts:g} points: {_stats(summary.scores[sid])})",
            "",
            "```text",
        ]
        out += histogram_lines(summary.histograms[sid])
        out += ["```", ""]
    out += ["## What to reteach: every named mistake, the most frequent first (the course's own before generic ones)", ""]
    if summary.mistakes:
        out += ["| mistake | students | skill | what it is | section |", "|---|---:|---|---|---|"]
        for hid, n, sid, text, section in summary.mistakes:
            share = f"{n} ({100 * n / max(summary.graded, 1):.0f}%)"
            out.append(
                f"| {escape.md_code(hid, table=True)} | {share} | {escape.md_text(sid)} | "
                f"{escape.md_text(text, 240)} | {escape.md_text(section, 120)} |"
            )
    else:
        out.append("No named mistake matched in any graded submission.")
    if summary.unfinished:
        out += ["", f"{summary.unfinished} students left at least one function as the TODO stub."]
    out += ["", "## Tests most students failed", ""]
    if summary.failed_tests:
        out += ["| test | students | skill |", "|---|---:|---|"]
        for name, n, sid in summary.failed_tests:
            out.append(f"| {escape.md_code(name, table=True)} | {n} | {escape.md_text(sid)} |")
    else:
        out.append("Every graded test passed for every student.")
    return "\n".join(out) + "\n"


_LEVELS = " ▁▂▃▄▅▆▇█"


def spark(counts: list[int]) -> str:
    """One character per bucket, its height the bucket's share of the largest."""
    top = max(counts) or 1
    return "".join(_LEVELS[round(8 * n / top)] if n else "·" for n in counts)


def print_summary(console, summary: ClassSummary) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    # Lines only under the header and one space between columns: the six buckets, the spark
    # and the mean fit 80 columns (a CI log) with the longest skill id whole; a narrower
    # console folds a cell instead of cutting it.
    table = Table(
        title=f"Score distribution per skill ({summary.graded} students; % of the skill's points)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("skill", overflow="fold", min_width=max(map(len, [*summary.skills, "total"])))
    for label in SHORT_BUCKETS:
        table.add_column(label, justify="right", overflow="fold")
    table.add_column("", no_wrap=True)
    table.add_column("mean", justify="right", overflow="fold")
    table.add_column("median", justify="right", overflow="fold")
    rows = [(sid, summary.histograms[sid], summary.scores[sid], summary.points.get(sid, 0.0)) for sid in summary.skills]
    rows.append(("total", total_histogram(summary), summary.totals, summary.max_total))
    for sid, counts, values, pts in rows:
        mean = f"{statistics.fmean(values):.1f}/{pts:g}" if values else "–"
        median = f"{statistics.median(values):.1f}" if values else "–"
        table.add_row(Text(sid), *[str(n) if n else "·" for n in counts], Text(spark(counts), style="cyan"), mean, median)
    console.print(table)
    if summary.mistakes:
        mistakes = Table(title="What to reteach: most frequent named mistakes", title_justify="left")
        mistakes.add_column("mistake", no_wrap=True)  # a hint id stays whole: instructors grep for it
        for column, justify in (("students", "right"), ("what it is", "left"), ("section", "left")):
            mistakes.add_column(column, justify=justify, overflow="fold")
        for hid, n, _sid, text, section in summary.mistakes:
            mistakes.add_row(
                Text(hid),
                f"{n} ({100 * n / max(summary.graded, 1):.0f}%)",
                Text(escape.one_line(_gist(text), 56)),
                Text(escape.one_line(_section_refs(section), 32)),
            )
        console.print(mistakes)
        console.print("(each mistake's whole text and section: summary.md)")
    else:
        console.print("No named mistake matched in any graded submission.")
    note = _total_note(summary)
    if note:
        console.print(note, markup=False)
    if summary.unfinished:
        console.print(f"{summary.unfinished} students left at least one function as the TODO stub.")


def _gist(text: str) -> str:
    """A hint's first clause (up to its first colon or full stop), for the terminal's table: the
    whole text wrapped to 10–13 lines a row at 80 columns (blind tester R-BM); summary.md has it."""
    cut = min((i for i in (text.find(": "), text.find(". ")) if i > 0), default=len(text))
    return text[:cut]


def _section_refs(section: str) -> str:
    """ "Week 7 §8 (所有分数…) and §11 (为什么…) — docs/lessons/…:233" → "Week 7 §8 and §11": the
    references without the sections' titles and the file, which summary.md keeps."""
    refs = section.split(" — ", 1)[0]
    return " ".join(re.sub(r"\s*[(（][^)）]*[)）]", "", refs).split()) or refs


def load_row(folder: Path) -> tuple[dict | None, dict]:
    """(results.json, batch.json) of a student's folder; (None, {}) when either is missing or unreadable."""
    try:
        meta = json.loads((folder / "batch.json").read_text(encoding="utf-8"))
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, {}
    if not isinstance(results, dict) or not isinstance(meta, dict) or not isinstance(results.get("skills"), list):
        return None, {}
    return results, meta


def write_outputs(
    out: Path,
    rows: list[Row],
    skills: list[str],
    titles: dict[str, str],
    suite_hash: str,
    seconds: float | None,
    seeds: str = "",
    visible_hash: str = "",
    extra: list[str] | None = None,
) -> ClassSummary:
    """``extra``: more markdown lines for summary.md (the roster section)."""
    write_atomic(out / "gradebook.csv", gradebook(rows, skills, suite_hash))
    summary = summarize(rows, skills, titles)
    text = markdown(summary, suite_hash=suite_hash, seconds=seconds, seeds=seeds, visible_hash=visible_hash)
    write_atomic(out / "summary.md", text + ("\n" + "\n".join(extra) + "\n" if extra else ""))
    return summary
