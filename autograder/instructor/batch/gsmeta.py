"""Read Gradescope's ``submission_metadata.yml`` (the "Export Submissions" download) with PyYAML.

Gradescope writes it with Ruby's YAML dumper: symbol keys (``:submitters:``, ``:name:``),
block mappings and block sequences, quoted or plain scalars::

    submission_12345:
      :submitters:
      - :name: Jane Doe
        :sid: '1234567'
        :email: jane@example.edu
      :created_at: 2024-03-01 12:00:00.000000000 -08:00
      :score: 10.0

PyYAML (``requirements-instructor.txt``; ``make batch`` installs it) parses it with a safe
loader that resolves no implicit types but null: every other scalar stays the string that was
written (an unquoted ``sid: 007`` keeps its zeros, ``created_at`` is not turned into a
datetime), and Ruby object tags (``!ruby/…``) read as ``None``. The leading ``:`` of keys is
dropped. Anything that is not YAML, or not one mapping per submission, raises
``MetadataError`` with the line.
"""

from __future__ import annotations


class MetadataError(ValueError):
    pass


def _loader():
    """A ``yaml.SafeLoader`` that keeps scalars as written (null aside) and reads ``!ruby/`` tags as None."""
    try:
        import yaml
    except ImportError:
        raise MetadataError(
            "reading a Gradescope export needs PyYAML: `make batch` installs it, or "
            "`.venv/bin/python -m pip install -r requirements-instructor.txt`"
        ) from None

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag == "tag:yaml.org,2002:null"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_multi_constructor("!ruby/", lambda loader, suffix, node: None)
    return yaml, Loader


def parse(text: str) -> dict:
    """``{"submission_<id>": {...}}`` with colon-less keys."""
    yaml, loader = _loader()
    try:
        value = yaml.load(text, Loader=loader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MetadataError(f"{where}{problem} — is this a Gradescope submission_metadata.yml?") from None
    if value is None:
        return {}
    value = _strip_colons(value, {})
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, dict) for k, v in value.items()):
        raise MetadataError("expected one mapping per submission (submission_<id>: …) — is this a Gradescope export?")
    return value


def _strip_colons(value, done: dict):
    """``value`` with the leading ``:`` of its keys dropped. A mapping or list that YAML's
    aliases (``&a`` … ``*a``) share is copied once (``done``, by id) and shared again, so nested
    aliases cost their size, not their expansion (blind red-team tester R-BZ: seven levels took
    40 s and 4 GB)."""
    if not isinstance(value, (dict, list)):
        return value
    if id(value) in done:
        return done[id(value)]
    if isinstance(value, dict):
        out: dict = {}
        done[id(value)] = out
        for k, v in value.items():
            out[k[1:] if isinstance(k, str) and k.startswith(":") else k] = _strip_colons(v, done)
        return out
    copied: list = []
    done[id(value)] = copied
    copied.extend(_strip_colons(v, done) for v in value)
    return copied


def scalar(value) -> str:
    """A field that should be text (a name, a sid, an email): the text, or "" for anything
    else (a mapping or list — which aliases may make huge — is never turned into text)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return ""
    return str(value).strip()
