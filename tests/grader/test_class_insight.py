"""What an instructor looks at after a deadline, from a graded class (autograder/instructor/batch/):
item analysis (items.py), what a regrade changed (changes.py). Synthetic results: each
property is checked on a class whose answer is known."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder.instructor.batch import changes, items
from autograder.instructor.batch.report import Row
from autograder.instructor.batch.students import Student


def _row(key: str, passed: dict[str, bool], status: str = "complete") -> Row:
    tests = [
        {"id": name, "name": name, "score": 1.0 if ok else 0.0, "max_score": 1.0, "status": "passed" if ok else "failed"}
        for name, ok in passed.items()
    ]
    results = {"status": status, "score": sum(t["score"] for t in tests), "skills": [{"id": "qkv", "tests": tests}]}
    return Row(Student(key, key, Path(key)), results)


def test_item_analysis_separates_a_discriminating_test_and_flags_the_uninformative_ones(tmp_path):
    """Eight students: `easy` everyone passes, `broken` nobody, `good` only the strong half,
    `odd` only the weak half (the others decide who is strong)."""
    rows = []
    for i in range(8):
        strong = i >= 4
        rows.append(_row(f"s{i}", {"easy": True, "broken": False, "good": strong, "odd": not strong, "x": strong, "y": strong}))
    rows.append(_row("err", {"easy": False}, status="error"))  # not a complete grading: not counted
    by_name = {it.test: it for it in items.analyse(rows)}
    assert by_name["easy"].students == 8 and by_name["easy"].pass_rate == 1.0
    assert by_name["easy"].flag == "every student passes" and by_name["broken"].flag == "every student fails"
    assert by_name["good"].discrimination == 1.0 and by_name["good"].r_rest > 0.9 and by_name["good"].flag == ""
    assert by_name["odd"].discrimination == -1.0 and by_name["odd"].flag == "weaker students pass it more often"
    assert by_name["easy"].r_rest is None  # never varies: no correlation to report
    lines = items.write(tmp_path, rows)
    table = list(csv.DictReader(io.StringIO((tmp_path / "items.csv").read_text(encoding="utf-8"))))
    assert [r["test"] for r in table] == ["easy", "broken", "good", "odd", "x", "y"]
    text = "\n".join(lines)
    assert "## Item analysis" in text and "3 flagged" in text and "`broken`" in text


def test_changes_csv_lists_the_largest_change_first(tmp_path):
    found = [
        changes.Change("ana", 50, 52, "a", "b", []),
        None,
        changes.Change("bo", 80, 40, "a", "b", [("qkv: t", 1.0, 0.0)]),
        changes.Change("cy", 10, 30, "a", "b", []),
    ]
    lines = changes.write(tmp_path, found)
    table = list(csv.DictReader(io.StringIO((tmp_path / "changes.csv").read_text(encoding="utf-8"))))
    assert [r["student"] for r in table] == ["bo", "cy", "ana"]
    assert "4 student(s) regraded: 3 changed, 1 unchanged" in "\n".join(lines)


def _disguised(text: str) -> str:
    """The same code, renamed, reformatted and recommented: what a copy that tries to hide looks like."""
    import re

    renames = {"scores": "s_mat", "weights": "attn", "mask": "msk", "x": "inp", "q": "qq", "k": "kk", "v": "vv"}
    for old, new in renames.items():
        text = re.sub(rf"\b{old}\b", new, text)
    out = []
    for line in text.splitlines():
        out.append(line.replace(", ", ",  ") + ("  # my own work" if line.strip().startswith("return") else ""))
    return "\n".join(out) + "\n"


def test_similarity_finds_a_disguised_copy_and_not_independent_correct_code(tmp_path, fast_config):
    """Four students: the reference (ana), ana's code renamed, reformatted and recommented (bo),
    two correct solutions written independently in other styles (cy: einsum, di: loops), and the
    untouched stubs (ed). Only ana — bo is listed; its page escapes the code and says it is a
    lead, not a verdict; summary lines link it."""
    from conftest import EXERCISES, ROOT, SOLUTIONS

    from autograder.config import load
    from autograder.instructor.batch import similarity
    from autograder.instructor.batch.students import discover

    config = load(fast_config)
    subs = tmp_path / "class"
    subs.mkdir()
    styles = ROOT / "tests" / "submissions" / "styles"
    for name, source in (("ana", SOLUTIONS), ("cy", styles / "einsum"), ("di", styles / "loops"), ("ed", EXERCISES)):
        (subs / name).mkdir()
        for module in config.exercise_modules:
            (subs / name / module).write_text((source / module).read_text(encoding="utf-8"), encoding="utf-8")
    (subs / "bo").mkdir()
    for module in config.exercise_modules:
        (subs / "bo" / module).write_text(_disguised((SOLUTIONS / module).read_text(encoding="utf-8")), encoding="utf-8")
    (subs / "bo" / "qkv.py").write_text(
        (subs / "bo" / "qkv.py").read_text(encoding="utf-8") + "\n# </pre><script>alert(1)</script>\n", encoding="utf-8"
    )
    students, _ = discover(subs)
    out = tmp_path / "out"
    out.mkdir()
    lines = similarity.write(out, students, config)
    index = (out / "similarity" / "index.md").read_text(encoding="utf-8")
    assert "`ana` — `bo`" in index and "never a verdict" in index
    assert "`cy`" not in index and "`di`" not in index and "`ed`" not in index, index
    page = (out / "similarity" / "pair-001.html").read_text(encoding="utf-8")
    assert "<b>ana</b>" in page and "<b>bo</b>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page and "<mark>" in page
    assert any("`ana` — `bo`" in line and "[view](similarity/pair-001.html)" in line for line in lines)

    # pages are numbered, never named after the pair: two 77-character CJK keys made a name past
    # 255 bytes, and keys holding "__" made two pairs one page (blind red-team tester R-BZ)
    copies = {"学" * 77: "lessons", "习" * 77: "lessons", "x__y": "minimal_functional", "z": "minimal_functional"}
    copies |= {"x": "defensive_oop", "y__z": "defensive_oop"}  # the old names: x__y__z.html for both pairs
    for name, style in copies.items():
        (subs / name).mkdir()
        for module in config.exercise_modules:
            (subs / name / module).write_text((styles / style / module).read_text(encoding="utf-8"), encoding="utf-8")
    students, _ = discover(subs)
    lines = similarity.write(out, students, config)
    index = (out / "similarity" / "index.md").read_text(encoding="utf-8")
    linked = [row.rsplit("](", 1)[1].rstrip(") |") for row in index.splitlines() if row.startswith("| `")]
    assert len(linked) == len(set(linked)) == 4, index  # ana — bo and the three pairs of copies
    assert all((out / "similarity" / page).is_file() for page in linked)
    assert "`x` — `y__z`" in index and "`x__y` — `z`" in index


def test_winnowing_ignores_names_layout_comments_and_docstrings():
    from autograder.instructor.batch import similarity

    a = (
        'def f(x, y):\n    """Add."""\n    total = x + y * 2\n'
        "    return total.sum(dim=-1) / x.shape[0] + torch.softmax(y, dim=0)\n"
    )
    b = "def g(p,q):\n    # mine\n    t=p+q*3\n    return t.sum(dim=-1)/p.shape[0]+torch.softmax(q,dim=0)\n"
    assert [w for w, _ in similarity.tokens(a)] == [w for w, _ in similarity.tokens(b)]
    assert similarity.fingerprints(a) and [h for h, _ in similarity.fingerprints(a)] == [h for h, _ in similarity.fingerprints(b)]


def test_plots_are_drawn_beside_the_summary_and_embedded_in_it(tmp_path):
    import pytest

    pytest.importorskip("matplotlib", reason="instructor requirements (requirements-instructor.txt) are not installed")
    from autograder.instructor.batch import plots, report

    rows = []
    for i in range(6):
        row = _row(f"s{i}", {"easy": True, "good": i >= 3, "odd": i % 2 == 0})
        row.results["skills"][0]["score"] = row.results["score"]
        row.results["skills"][0]["points"] = 3
        row.results["max_score"] = 3
        if i < 2:
            row.results["skills"][0]["tests"][1]["hints"] = [{"id": "qkv/divide-by-dk", "text": "t", "section": "s"}]
        rows.append(row)
    summary = report.summarize(rows, ["qkv"], {"qkv": "Q"})
    changed = [changes.Change("s1", 1, 2, "a", "b", [])]
    lines = plots.write(tmp_path, summary, items.analyse(rows), changed)
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == ["mistakes.png", "regrade.png", "scores.png", "tests.png"]
    assert all((tmp_path / "plots" / n).read_bytes().startswith(b"\x89PNG") for n in names)
    text = "\n".join(lines)
    assert all(f"](plots/{n})" in text for n in names)
    again = tmp_path / "again"
    again.mkdir()
    plots.write(again, summary, items.analyse(rows), changed)
    assert all((again / "plots" / n).read_bytes() == (tmp_path / "plots" / n).read_bytes() for n in names)  # reproducible
