"""Escaping text that came from a submission, once per medium.

Everything a submission controls — exception messages and type names, printed output,
file names, source lines — is shown only through these helpers. The rules:

- **Everywhere**: control characters (C0, DEL, C1, so ESC and OSC-8 hyperlinks), format
  characters (BiDi overrides U+202A–202E/2066–2069, zero-width spaces and joiners, BOM,
  tag characters), line/paragraph separators and lone surrogates are shown as visible
  escapes (``\\x1b``, ``\\u202e``), never passed through. Tabs become spaces.
- **Terminal / plain text** (``gutter``): student text that spans lines is indented behind
  a ``│ `` gutter, so no line of it can pass for one of the grader's own ("Total: …").
- **Markdown** (``md_text``, ``md_code``, ``md_block``): student text goes into code spans or
  fenced blocks whose fence is longer than any backtick run inside; the few places that
  need prose escape every markup character and break mentions (``@x``), issue references
  (``#1``) and autolinks (``http://``, ``www.``) with a zero-width space.
- **GitHub workflow commands** (``gh_data``, ``gh_property``, ``gh_log``): annotation
  messages and properties are %-encoded as the runner expects; any other line printed
  from student text starts with the gutter, so after the runner's leading-whitespace trim it
  never begins with ``::``, and ``##`` (the legacy ``##[…]``/``##vso[`` forms) is broken.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Unicode categories Cc (controls), Cf (format), Cs (surrogates), Zl, Zp — as ranges, so
# the check is one regex; tests/grader/test_escape.py proves the list covers them all.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)
_ZWSP = "\u200b"  # inserted by us (after escaping) to break mentions, links and commands
GUTTER = "│ "
ELLIPSIS = "…"


def _escape_char(match: re.Match) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def truncate(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS


def visible(text: object, limit: int | None = 4000, *, newlines: bool = True) -> str:
    """Submission text with every invisible or terminal-controlling character shown as an
    escape. ``newlines=False`` also turns line breaks into a visible ``⏎``."""
    out = str(text if text is not None else "")
    out = truncate(out, limit * 2 if limit else None)  # escapes grow the text; bound the work first
    out = out.replace("\r\n", "\n").replace("\t", "    ")
    if not newlines:
        out = out.replace("\n", " ⏎ ")
    out = _INVISIBLE.sub(lambda m: "\n" if m.group(0) == "\n" else _escape_char(m), out)
    return truncate(out, limit)


def one_line(text: object, limit: int | None = 300) -> str:
    return visible(text, limit, newlines=False)


def gutter(
    text: object, limit: int | None = 4000, *, max_lines: int = 40, prefix: str = GUTTER, width: int | None = None
) -> list[str]:
    """Student text as lines behind a gutter: none of them can pass for a grader line.
    With ``width``, long lines are cut into pieces that each carry the gutter, so a
    terminal never wraps the tail of one to the left margin."""
    lines = visible(text, limit).split("\n")
    if width is not None:
        room = max(width - len(prefix), 20)
        lines = [line[i : i + room] for line in lines for i in range(0, max(len(line), 1), room)]
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"{ELLIPSIS} ({len(lines) - max_lines} more lines not shown)"]
    return [(prefix + line).rstrip() for line in lines]


def _json_escape(match: re.Match) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_escape_invisible(text: str) -> str:
    """JSON text (from ``json.dumps(ensure_ascii=False)``) with the invisible characters
    above written as ``\\uXXXX`` escapes: they can only occur inside strings, so the JSON
    decodes to the same data."""
    return _INVISIBLE.sub(lambda m: "\n" if m.group(0) == "\n" else _json_escape(m), text)


# --------------------------------------------------------------------------- markdown
_MD_PUNCT = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~&$^=:\"'])")
_LINKISH = re.compile(r"(?i)(://|www\.|@|#)")


def _break(match: re.Match) -> str:
    token = match.group(0)
    if token == "://":
        return ":" + _ZWSP + "//"
    if token.lower() == "www.":
        return token[:3] + _ZWSP + "."
    return token + _ZWSP  # "@" (mentions, e-mail autolinks), "#" (issue references)


def md_text(text: object, limit: int | None = 600) -> str:
    """Prose or a table cell in GitHub markdown: one line, every markup character
    backslash-escaped, no mention, issue reference or autolink."""
    out = one_line(text, limit)
    out = _LINKISH.sub(_break, out)  # before escaping: the patterns are plain text here
    return _MD_PUNCT.sub(r"\\\1", out)


def _fence_for(text: str, minimum: int) -> str:
    runs = [len(r) for r in re.findall(r"`+", text)]
    return "`" * max([minimum] + [r + 1 for r in runs])


def md_code(text: object, limit: int | None = 300, *, table: bool = False) -> str:
    """An inline code span (no markup, mentions or links inside) — with a fence longer than
    any backtick run in the text. In a table cell ``|`` is escaped (GFM splits cells first)."""
    body = one_line(text, limit) or " "
    fence = _fence_for(body, 1)
    if body.startswith("`") or body.endswith("`") or (body.startswith(" ") and body.endswith(" ")):
        body = f" {body} "
    if table:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def md_block(text: object, limit: int | None = 4000, *, indent: str = "", max_lines: int = 40, info: str = "text") -> list[str]:
    """A fenced code block: the text cannot end it, and nothing inside renders as markup."""
    lines = visible(text, limit).split("\n")
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"{ELLIPSIS} ({len(lines) - max_lines} more lines not shown)"]
    fence = _fence_for("\n".join(lines), 3)
    return [f"{indent}{fence}{info}"] + [f"{indent}{line}".rstrip() for line in lines] + [f"{indent}{fence}"]


# --------------------------------------------------------------------------- GitHub Actions
def _no_legacy_commands(text: str) -> str:
    while "##" in text:
        text = text.replace("##", "#" + _ZWSP + "#")
    return text


def gh_data(text: object, limit: int | None = 900) -> str:
    """The message of a workflow command (``::error …::MESSAGE``): one physical line."""
    out = _no_legacy_commands(visible(text, limit))
    return out.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_property(text: object, limit: int | None = 200) -> str:
    """A property value of a workflow command (``file=``, ``title=``)."""
    return gh_data(one_line(text, limit), None).replace(":", "%3A").replace(",", "%2C")


def gh_log(text: object, limit: int | None = 4000, *, max_lines: int = 40) -> list[str]:
    """Student text printed to the job log: every line behind the gutter, so the runner
    never reads a command from it."""
    return [_no_legacy_commands(line) for line in gutter(text, limit, max_lines=max_lines)]


def plain_inert(text: object, limit: int | None = 300) -> str:
    """One line for a consumer that may print it to a job log or a check run (GitHub
    Classroom's reporter): no ``::``/``##`` command forms, no mentions or links."""
    out = _LINKISH.sub(_break, one_line(text, limit))
    return out.replace("::", ":" + _ZWSP + ":").replace("##", "#" + _ZWSP + "#")


def is_workflow_command(line: str) -> bool:
    """Would the Actions runner read this log line as a command (v2 ``::`` after leading
    whitespace, or the legacy ``##[`` / ``##vso[`` forms)?"""
    stripped = line.lstrip()
    return stripped.startswith("::") or "##[" in line or "##vso[" in line.lower()


_ANSI_SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colours rich writes (student text never carries ESC: visible())
_LEGACY = re.compile(r"#(#(?:\[|vso\[))", re.IGNORECASE)


def inert_lines(text: str) -> str:
    """The text and markdown formats' last pass: a line that would read as a workflow command in a job
    log gets a zero-width space between its leading colons (and inside ``##[``/``##vso[``).
    Student text is escaped where it is written, but a terminal-width wrap can still start a
    new line inside it (blind red-team tester R-T: a file name ``…\\n::error::x.py`` wrapped
    onto a line of its own); no grader line starts with ``::``, so only such lines change."""
    out = []
    for line in text.split("\n"):
        plain = _ANSI_SGR.sub("", line)
        if is_workflow_command(plain):
            if plain.lstrip().startswith("::"):
                line = line.replace("::", ":" + _ZWSP + ":", 1)
            line = _LEGACY.sub("#" + _ZWSP + r"\1", line)
        out.append(line)
    return "\n".join(out)


# --------------------------------------------------------------------------- CSV
#: first characters that make a spreadsheet (Excel, LibreOffice, Google Sheets) read a cell
#: as a formula or a DDE call; the full-width forms too, which some of them fold to ASCII
#: what a CSV cell never carries as it is: C0 and C1 controls (a terminal's escapes: ``cat
#: gradebook.csv`` ran a student's), line and paragraph separators, and the bidi embeddings,
#: overrides and isolates that reorder a cell in a spreadsheet (blind red-team tester R-BZ);
#: marks and joiners a name may need (ZWNJ, LRM) stay
_CSV_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: a plain decimal number ("-2", "17.5", "-0.25"): a spreadsheet reads it as a number, not a formula
_PLAIN_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def csv_number(value: float | int) -> str:
    """A number as a CSV cell: at most four decimals, no trailing zeros ("12.5", "20", "-3")."""
    text = f"{float(value):.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def csv_cell(value: object) -> str:
    """One CSV cell a spreadsheet shows as it is and never runs (OWASP "CSV injection").
    Numbers (``int``/``float``) are written as numbers; text on one line (a line break is
    folded into a space: one row per record for every reader), and text that a spreadsheet
    would read as a formula (``=…``, ``+…``, ``-…``, ``@…``, a tab or CR first) gets a
    leading ``'``, which spreadsheets show as text. A text cell that is a plain decimal
    number ("-2", "0.5": an id, a score written as text) is left as it is: it is read as
    that number, not as a formula — but "-2+3" is neutralised."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return csv_number(value)
    text = str(value)
    if "\n" in text or "\r" in text:
        text = " ".join(text.split())
    text = _CSV_CONTROL.sub(_escape_char, text)  # shown as \x1b, \u202e: a name stays readable, never acts
    if text.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_text(rows: Iterable[Iterable[object]]) -> str:
    """The one CSV writer of the grader (gradebook, changes, LMS exports): every cell goes
    through ``csv_cell``, quoting is the csv module's (RFC 4180 style), ``\\n`` line ends."""
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
    return buffer.getvalue()
