"""The class at a glance, as images beside ``summary.md`` (and embedded in it), drawn with
matplotlib (an instructor extra: requirements-instructor.txt; without it the summary says
how to get the plots, and nothing else changes):

* ``plots/scores.png`` — the score distribution of the total and of each skill (share of
  its points), one panel each;
* ``plots/tests.png`` — the pass rate of every test (items.py), lowest first;
* ``plots/mistakes.png`` — the named mistakes (misconceptions) found, by number of students;
* ``plots/regrade.png`` — after a regrade: each regraded student's score before and after.

The Agg backend only (no display, no font cache outside matplotlib's own), and PNG metadata
without version or date, so the same class gives the same images.
"""

from __future__ import annotations

from pathlib import Path

FOLDER = "plots"
_META = {"Software": None}


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata=_META)
    plt.close(fig)


def scores(plt, summary, path: Path) -> None:
    panels = [("total", summary.totals, summary.max_total)] + [
        (sid, summary.scores[sid], summary.points.get(sid, 0.0)) for sid in summary.skills
    ]
    cols = min(4, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.6 * rows), squeeze=False)
    for ax, (name, values, points) in zip(axes.flat, panels):
        shares = [100 * v / points for v in values] if points else []
        ax.hist(shares, bins=[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100.001], color="#4c72b0", edgecolor="white")
        ax.set_title(f"{name} (of {points:g})", fontsize=9)
        ax.set_xlabel("% of the points", fontsize=8)
        ax.set_ylabel("students", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    _save(plt, fig, path)


def tests(plt, analysed: list, path: Path) -> None:
    ordered = sorted(analysed, key=lambda it: (it.pass_rate, it.skill, it.test))[:60]
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(ordered) + 1.2))
    labels = [f"{it.skill}: {it.test}"[:70] for it in ordered]
    colors = ["#c44e52" if it.flag else "#4c72b0" for it in ordered]
    ax.barh(range(len(ordered)), [100 * it.pass_rate for it in ordered], color=colors)
    ax.set_yticks(range(len(ordered)), labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("students who passed (%) — red: flagged in the item analysis", fontsize=8)
    _save(plt, fig, path)


def mistakes(plt, summary, path: Path) -> None:
    shown = summary.mistakes[:25]
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(shown) + 1.2))
    ax.barh(range(len(shown)), [n for _hid, n, *_ in shown], color="#dd8452")
    ax.set_yticks(range(len(shown)), [hid[:60] for hid, *_ in shown], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("students with the mistake", fontsize=8)
    _save(plt, fig, path)


def regrade(plt, changed: list, path: Path) -> None:
    moved = [c for c in changed if c is not None]
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter([c.old for c in moved], [c.new for c in moved], color="#55a868", s=14)
    top = max([c.old for c in moved] + [c.new for c in moved] + [1.0])
    ax.plot([0, top], [0, top], color="#999999", linewidth=0.8)
    ax.set_xlabel("score before the regrade", fontsize=8)
    ax.set_ylabel("score after", fontsize=8)
    ax.set_title(f"{len(moved)} student(s) whose score or a test changed", fontsize=9)
    _save(plt, fig, path)


def write(out: Path, summary, analysed: list, changed: list | None) -> list[str]:
    """``OUT/plots/*.png`` and the summary section embedding them (its markdown lines)."""
    if summary.graded == 0:
        return []
    plt = _pyplot()
    if plt is None:
        return [
            "## Plots",
            "",
            "Not drawn: matplotlib is an instructor extra — `pip install -r requirements-instructor.txt` "
            "(or any `make release`/`make test`), then run the batch again (finished students are kept).",
            "",
        ]
    folder = out / FOLDER
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    drawn = [("Score distribution", "scores.png")]
    scores(plt, summary, folder / "scores.png")
    if analysed:
        tests(plt, analysed, folder / "tests.png")
        drawn.append(("Pass rate per test", "tests.png"))
    if summary.mistakes:
        mistakes(plt, summary, folder / "mistakes.png")
        drawn.append(("Misconceptions found", "mistakes.png"))
    if changed and any(c is not None for c in changed):
        regrade(plt, changed, folder / "regrade.png")
        drawn.append(("Before and after the regrade", "regrade.png"))
    lines = ["## Plots", ""]
    for title, name in drawn:
        lines += [f"### {title}", "", f"![{title}]({FOLDER}/{name})", ""]
    return lines
