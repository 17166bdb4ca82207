"""The requirement files agree with one another: ``make`` installs them one after the other
into one ``.venv`` (Makefile stamps), so a package pinned differently in two of them ends at
whichever was installed last — and a fresh clone's venv then differs from a maintainer's
(the newcomer tester R-CG found PyYAML 6.0.3 in requirements-dev.txt, 6.0.4 in
requirements-instructor.txt)."""

from __future__ import annotations

import re

from conftest import ROOT

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;#]+)")


def pins(path) -> dict[str, str]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = PIN.match(line.strip())
        if match:
            found[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return found


def test_a_package_pinned_in_two_requirement_files_has_the_same_pin_in_both():
    files = sorted(ROOT.glob("requirements*.txt"))
    assert len(files) >= 4, files
    seen: dict[str, tuple[str, str]] = {}
    clashes = []
    for path in files:
        for name, version in pins(path).items():
            if name in seen and seen[name][1] != version:
                clashes.append(f"{name}: {seen[name][0]} pins {seen[name][1]}, {path.name} pins {version}")
            seen.setdefault(name, (path.name, version))
    assert not clashes, "\n".join(clashes)


def test_every_requirement_line_is_an_exact_pin():
    for path in sorted(ROOT.glob("requirements*.txt")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            text = line.split("#", 1)[0].strip()
            if text and not text.startswith("-"):
                assert PIN.match(text), f"{path.name}:{number}: {text!r} is not pinned exactly (name==version)"
