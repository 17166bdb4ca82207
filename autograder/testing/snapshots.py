"""Reference snapshots: expected values for visible suites, computed from the reference
solutions at release time (Stanford CS336's approach) instead of by code shipped to students.

    from autograder.testing.snapshots import Snapshots
    SNAP = Snapshots(__file__)                  # tests/suites/<skill>/snapshots/<skill>.json
    case = SNAP["project_qkv"]                  # {"x": tensor, ..., "want": ...}: inputs and the reference's output

The cases (seeded inputs and which reference function to run) are defined next to the suite
in ``snapshot_cases.py`` (instructors only); ``make snapshots`` runs the reference in a
process of its own and writes the file, ``make check`` fails when it is stale. The file is
JSON: the tagged tree and the raw little-endian tensor bytes (base64) of the sandbox's wire
codec — no pickle, exact float bits, and the same bytes for the same inputs.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from ..sandbox import protocol

FORMAT = "autograder-snapshots/1"


def encode(skill: str, cases: dict[str, Any], note: str = "") -> bytes:
    tree, blob = protocol.encode(cases)
    doc = {"format": FORMAT, "skill": skill, "note": note, "cases": tree, "blob": base64.b64encode(blob).decode("ascii")}
    return (json.dumps(doc, ensure_ascii=False, allow_nan=False, indent=1) + "\n").encode("utf-8")


def _parse(data: bytes, where: str) -> tuple[dict[str, Any], bytes, dict[str, Any]]:
    """(case name → its value tree, the blob, case name → its value) of a snapshot file:
    every case is decoded once to prove the file sound, and that value is the first lookup's;
    a later lookup rebuilds its own case from the tree and the blob."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SnapshotError(f"{where}: not a snapshot file ({exc}) — run `make snapshots`") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SnapshotError(
            f"{where}: unknown format {doc.get('format') if isinstance(doc, dict) else None!r} (expected {FORMAT}) "
            "— run `make snapshots`"
        )
    try:
        tree, blob = doc["cases"], base64.b64decode(doc["blob"], validate=True)
        cases = protocol.decode(tree, blob)
    except (KeyError, ValueError, protocol.ProtocolError) as exc:
        raise SnapshotError(f"{where}: corrupt snapshot ({exc}) — run `make snapshots`") from None
    if not isinstance(cases, dict):
        raise SnapshotError(f"{where}: corrupt snapshot (cases are not a table) — run `make snapshots`")
    return dict(zip(tree["k"], tree["v"])), blob, cases


def decode(data: bytes, where: str = "snapshot") -> dict[str, Any]:
    """Every case of a snapshot file, decoded."""
    return _parse(data, where)[2]


class SnapshotError(RuntimeError):
    """A snapshot file is missing, corrupt or lacks a case: a suite bug, not the student's."""


class Snapshots:
    """The snapshot cases of the suite file ``suite_file`` — or of the skill folder
    ``tests/suites/<skill>`` (a course helper that serves the skill's suites) — lazily
    loaded and checked once; each lookup rebuilds its case's tensors afresh from the bytes, so
    no test can change another's inputs."""

    def __init__(self, suite_file: str | Path) -> None:
        suite = Path(suite_file).resolve()
        folder = suite if suite.is_dir() else suite.parent
        self.skill = folder.name
        self.path = folder / "snapshots" / f"{self.skill}.json"
        self._parsed: tuple[dict[str, Any], bytes] | None = None
        self._unused: dict[str, Any] = {}  # cases decoded by the soundness check, not yet handed out

    def __getitem__(self, name: str) -> dict[str, Any]:
        if self._parsed is None:
            try:
                data = self.path.read_bytes()
            except OSError:
                raise SnapshotError(
                    f"{self.path.name}: missing (tests/suites/{self.skill}/snapshots/) — run `make snapshots`"
                ) from None
            trees, blob, self._unused = _parse(data, self.path.name)
            self._parsed = trees, blob
        trees, blob = self._parsed
        if name not in trees:
            raise SnapshotError(f"{self.path.name}: no case {name!r} (has: {', '.join(trees)}) — run `make snapshots`")
        if name in self._unused:  # decoded once already, and nobody holds it: the first lookup's own
            return self._unused.pop(name)
        return protocol.decode(trees[name], blob)
