"""Read Gradescope's ``submission_metadata.yml`` (the "Export Submissions" download).

Gradescope writes it with Ruby's YAML dumper: symbol keys (``:submitters:``, ``:name:``),
block mappings and block sequences, quoted or plain scalars::

    submission_12345:
      :submitters:
      - :name: Jane Doe
        :sid: '1234567'
        :email: jane@example.edu
      :created_at: 2024-03-01 12:00:00.000000000 -08:00
      :score: 10.0

Why not PyYAML: it is in the instructors' and test extras but not in ``requirements.txt``,
and a batch must run wherever ``make grade`` does. This is a small reader of the block
subset YAML dumpers write (mappings, sequences, quoted/plain scalars, block scalars
``|``/``>``, empty ``[]``/``{}``, comments); anything else raises ``MetadataError`` with the
line. Leading ``:`` of keys is dropped. Scalars stay strings (``None`` for ``~``/``null``):
the batch only reads names, ids and emails.
"""

from __future__ import annotations

import re


class MetadataError(ValueError):
    pass


_KEY = re.compile(r"""^(?P<key>'(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|:?[^\s:'"#][^:]*?)\s*:(?:\s+(?P<rest>.*))?$""")
_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    '"': '"',
    "0": "\0",
    "/": "/",
    " ": " ",
    "e": "\x1b",
    "a": "\a",
    "b": "\b",
}


class _Lines:
    def __init__(self, text: str) -> None:
        self.raw = text.replace("\r\n", "\n").split("\n")
        self.items: list[tuple[int, int, str]] = []  # (line number, indent, content)
        for number, line in enumerate(self.raw, 1):
            if "\t" in line[: len(line) - len(line.lstrip())]:
                raise MetadataError(f"line {number}: tab in indentation")
            stripped = line.strip()
            if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
                continue
            self.items.append((number, len(line) - len(line.lstrip(" ")), stripped))


def parse(text: str) -> dict:
    """``{"submission_<id>": {...}}`` with colon-less keys."""
    lines = _Lines(text)
    if not lines.items:
        return {}
    value, end = _block(lines, 0, lines.items[0][1])
    if end != len(lines.items):
        number = lines.items[end][0]
        raise MetadataError(f"line {number}: unexpected indentation — is this a Gradescope submission_metadata.yml?")
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise MetadataError("expected one mapping per submission (submission_<id>: …) — is this a Gradescope export?")
    return value


def _block(lines: _Lines, i: int, indent: int):
    content = lines.items[i][2]
    if content == "-" or content.startswith("- "):
        return _sequence(lines, i, indent)
    return _mapping(lines, i, indent)


def _sequence(lines: _Lines, i: int, indent: int):
    out = []
    while i < len(lines.items):
        number, ind, content = lines.items[i]
        if ind != indent or not (content == "-" or content.startswith("- ")):
            if ind > indent:
                raise MetadataError(f"line {number}: unexpected indentation")
            break
        rest = content[1:].lstrip(" ")
        if not rest:
            if i + 1 < len(lines.items) and lines.items[i + 1][1] > indent:
                value, i = _block(lines, i + 1, lines.items[i + 1][1])
            else:
                value, i = None, i + 1
        elif _KEY.match(rest):
            # "- key: value" opens a mapping whose keys sit where "key" starts
            inner = indent + (len(content) - len(rest))
            lines.items[i] = (number, inner, rest)
            value, i = _mapping(lines, i, inner)
        else:
            value, i = _scalar(lines, i, rest, indent)
        out.append(value)
    return out, i


def _mapping(lines: _Lines, i: int, indent: int):
    out: dict = {}
    while i < len(lines.items):
        number, ind, content = lines.items[i]
        if ind < indent:
            break
        if ind > indent:
            raise MetadataError(f"line {number}: unexpected indentation")
        if content == "-" or content.startswith("- "):
            break
        match = _KEY.match(content)
        if not match:
            raise MetadataError(f"line {number}: expected `key: value`, found {content[:60]!r}")
        key = _key(match.group("key"))
        rest = (match.group("rest") or "").strip()
        if rest.startswith("#"):
            rest = ""
        if not rest:
            nxt = lines.items[i + 1] if i + 1 < len(lines.items) else None
            if nxt is not None and (nxt[1] > indent or (nxt[1] == indent and (nxt[2] == "-" or nxt[2].startswith("- ")))):
                value, i = _block(lines, i + 1, nxt[1])
            else:
                value, i = None, i + 1
        else:
            value, i = _scalar(lines, i, rest, indent)
        out[key] = value
    return out, i


def _key(text: str) -> str:
    text = _unquote(text) if text[:1] in "'\"" else text
    return text[1:] if text.startswith(":") else text


def _scalar(lines: _Lines, i: int, rest: str, indent: int):
    """The scalar starting with ``rest`` on item ``i``; (value, next item)."""
    if rest[:1] in "|>":
        # block scalar: every following line indented deeper belongs to it
        number = lines.items[i][0]
        i += 1
        while i < len(lines.items) and lines.items[i][1] > indent:
            i += 1
        return _block_text(lines, number, indent, rest), i
    if rest[:1] in "'\"":
        text = rest
        quote = rest[0]
        while not _closed(text, quote) and i + 1 < len(lines.items) and lines.items[i + 1][1] > indent:
            i += 1
            text += " " + lines.items[i][2]
        if not _closed(text, quote):
            raise MetadataError(f"line {lines.items[i][0]}: unterminated {quote}quoted{quote} value")
        return _unquote(text[: _closing(text, quote) + 1]), i + 1
    if rest in ("[]", "{}"):
        return ([] if rest == "[]" else {}), i + 1
    if rest[:1] in "[{&*!|%@`":
        if rest.startswith("!ruby/"):
            return None, _skip_deeper(lines, i, indent)
        raise MetadataError(f"line {lines.items[i][0]}: unsupported value {rest[:40]!r}")
    text = re.split(r"\s+#", rest, maxsplit=1)[0].strip()
    while i + 1 < len(lines.items) and lines.items[i + 1][1] > indent and not _KEY.match(lines.items[i + 1][2]):
        i += 1  # a plain scalar folded over several lines
        text += " " + lines.items[i][2]
    return (None if text in ("~", "null", "Null", "NULL") else text), i + 1


def _skip_deeper(lines: _Lines, i: int, indent: int) -> int:
    i += 1
    while i < len(lines.items) and lines.items[i][1] > indent:
        i += 1
    return i


def _block_text(lines: _Lines, number: int, indent: int, header: str) -> str:
    body = []
    for raw in lines.raw[number:]:
        if raw.strip() and len(raw) - len(raw.lstrip(" ")) <= indent:
            break
        body.append(raw)
    while body and not body[-1].strip():
        body.pop()
    cut = min((len(b) - len(b.lstrip(" ")) for b in body if b.strip()), default=0)
    text = [b[cut:] for b in body]
    return ("\n" if header.startswith("|") else " ").join(text)


def _closing(text: str, quote: str) -> int:
    j = 1
    while j < len(text):
        if quote == "'" and text[j] == "'":
            if text[j + 1 : j + 2] == "'":
                j += 2
                continue
            return j
        if quote == '"':
            if text[j] == "\\":
                j += 2
                continue
            if text[j] == '"':
                return j
        j += 1
    return -1


def _closed(text: str, quote: str) -> bool:
    return _closing(text, quote) >= 0


def _unquote(text: str) -> str:
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    body, out, j = text[1:-1], [], 0
    while j < len(body):
        ch = body[j]
        if ch == "\\" and j + 1 < len(body):
            nxt = body[j + 1]
            if nxt == "x" and j + 3 < len(body):
                out.append(chr(int(body[j + 2 : j + 4], 16)))
                j += 4
                continue
            if nxt in "uU":
                width = 4 if nxt == "u" else 8
                try:
                    out.append(chr(int(body[j + 2 : j + 2 + width], 16)))
                except ValueError:
                    out.append(nxt)
                j += 2 + width
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            j += 2
            continue
        out.append(ch)
        j += 1
    return "".join(out)
